package sqlite

import (
	"context"
	"encoding/json"
	"math"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// The detection state of correlate.Tx: the signals recorded per (org,
// detector, key), once per artifact, and the bursts that fired.

// RecordSignals records the signals one prepared statement each (a JSON
// array cost more than it saved for the few signals of a detection); a
// signal repeated within sigs counts once, the first. Their nodes are
// kept in correlate's stored form (rows written before hold JSON).
func (t *corrTx) RecordSignals(ctx context.Context, k correlate.DetectionKey, sigs []vigil.Signal) ([]vigil.Signal, error) {
	var fresh []vigil.Signal
	for _, sg := range sigs {
		var nodes, unit any // NULL
		if len(sg.Nodes) > 0 {
			nodes = correlate.AppendStoredNodes(nil, k.Key, sg.Member, sg.Nodes)
		}
		if sg.Unit != "" {
			unit = sg.Unit
		}
		res, err := t.tx.ExecContext(ctx, `INSERT INTO detect_signals (org_id, detector, key, artifact_id, at, member, nodes, weight, unit)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, t.org, k.Detector, k.Key, sg.ArtifactID, nanos(sg.At), sg.Member, nodes, sg.Weight(), unit)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			fresh = append(fresh, sg)
		}
	}
	if sk := (signalKey{t.org, k}); len(fresh) > 0 && t.newest.add(sk, fresh) {
		t.tx.cached = append(t.tx.cached, sk)
	}
	return fresh, nil
}

func (t *corrTx) RecordedUnits(ctx context.Context, k correlate.DetectionKey, units []string, from, to int64) ([]string, error) {
	var out []string
	for _, u := range units {
		var seen bool
		// Served by the partial index detect_signals_unit.
		err := t.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM detect_signals
			WHERE org_id = ? AND detector = ? AND key = ? AND unit = ? AND at >= ? AND at <= ?)`,
			t.org, k.Detector, k.Key, u, from, to).Scan(&seen)
		if err != nil {
			return nil, err
		}
		if seen {
			out = append(out, u)
		}
	}
	return out, nil
}

// Bursts reads them as the growths and extensions not written yet
// (pendingGrowths) leave them: an extension only moves a burst's last
// signal later, so a key with one pending is read from its first burst
// on and those before since are left out here.
func (t *corrTx) Bursts(ctx context.Context, k correlate.DetectionKey, since int64) ([]correlate.Burst, error) {
	if len(t.pending.obs) == 0 {
		return t.bursts(ctx, k, since)
	}
	from := since
	if t.pending.keys[k] {
		from = math.MinInt64
	}
	out, err := t.bursts(ctx, k, from)
	if err != nil {
		return nil, err
	}
	return t.pending.overlay(out, since), nil
}

func (t *corrTx) bursts(ctx context.Context, k correlate.DetectionKey, since int64) ([]correlate.Burst, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT b.observation_id, b.first_at, b.last_at, b.signals,
			COALESCE(o.incident_id, ''), COALESCE(o.severity, ''), COALESCE(i.status IN (1, 2), 0),
			EXISTS (SELECT 1 FROM rollups r WHERE r.incident_id = o.incident_id)
		FROM detect_bursts b
		LEFT JOIN observations o ON o.id = b.observation_id AND o.org_id = b.org_id
		LEFT JOIN incidents i ON i.id = o.incident_id AND +i.org_id = b.org_id
		WHERE b.org_id = ? AND b.detector = ? AND b.key = ? AND b.last_at >= ?`, t.org, k.Detector, k.Key, since)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []correlate.Burst
	for rows.Next() {
		b := correlate.Burst{DetectionKey: k}
		if err := rows.Scan(&b.ObservationID, &b.First, &b.Last, &b.Signals, &b.IncidentID, &b.Severity, &b.Open, &b.Rollup); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// SignalsFrom and NewestSignals answer from the store's cache of the
// key's newest signals when it holds them all, else read the table,
// which is clustered by (org, detector, key, at, artifact) and serves
// every read here. Only NewestSignals, which a growing burst asks at
// every batch, fills the cache on a miss: SignalsFrom asks for keys
// that mostly never fire.
func (t *corrTx) SignalsFrom(ctx context.Context, k correlate.DetectionKey, from int64, limit int) ([]vigil.Signal, error) {
	if sigs, ok := t.newest.oldest(signalKey{t.org, k}, from, limit); ok {
		return sigs, nil
	}
	return t.points(ctx, oldestSQL, t.org, k.Detector, k.Key, from, limit)
}

func (t *corrTx) NewestSignals(ctx context.Context, k correlate.DetectionKey, from, to int64, limit int) ([]vigil.Signal, error) {
	sk := signalKey{t.org, k}
	if sigs, ok := t.newest.newest(sk, from, to, limit); ok {
		return sigs, nil
	}
	if err := t.fillNewest(ctx, sk, from); err != nil {
		return nil, err
	}
	if sigs, ok := t.newest.newest(sk, from, to, limit); ok {
		return sigs, nil
	}
	return t.points(ctx, newestSQL, t.org, k.Detector, k.Key, from, to, limit)
}

const (
	oldestSQL = `SELECT at, member, weight FROM detect_signals
		WHERE org_id = ? AND detector = ? AND key = ? AND at >= ? ORDER BY at, artifact_id LIMIT ?`
	newestSQL = `SELECT at, member, weight FROM detect_signals
		WHERE org_id = ? AND detector = ? AND key = ? AND at >= ? AND at <= ? ORDER BY at DESC, artifact_id DESC LIMIT ?`
)

// fillNewest caches the newest signals of sk from from on, at most
// newestRows of them; a key with an artifact id that is no canonical
// UUID is not cached.
func (t *corrTx) fillNewest(ctx context.Context, sk signalKey, from int64) error {
	rows, err := t.tx.QueryContext(ctx, `SELECT at, artifact_id, member, weight FROM detect_signals
		WHERE org_id = ? AND detector = ? AND key = ? AND at >= ? ORDER BY at DESC, artifact_id DESC LIMIT ?`,
		t.org, sk.Detector, sk.Key, from, newestRows)
	if err != nil {
		return err
	}
	defer rows.Close()
	var read []cachedSignal
	for rows.Next() {
		var at int64
		var artifact, member string
		var weight int
		if err := rows.Scan(&at, &artifact, &member, &weight); err != nil {
			return err
		}
		s, ok := cachedOf(at, artifact, member, weight)
		if !ok {
			return nil
		}
		read = append(read, s)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	t.tx.cached = append(t.tx.cached, sk)
	t.newest.fill(sk, from, read)
	return nil
}

func (t *corrTx) points(ctx context.Context, q string, args ...any) ([]vigil.Signal, error) {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []vigil.Signal
	for rows.Next() {
		var sg vigil.Signal
		var at int64
		if err := rows.Scan(&at, &sg.Member, &sg.Count); err != nil {
			return nil, err
		}
		sg.At, sg.Evidence = fromNanos(at), sg.Count == 0
		out = append(out, sg)
	}
	return out, rows.Err()
}

func (t *corrTx) WindowSignals(ctx context.Context, k correlate.DetectionKey, from, to int64, limit int) ([]vigil.Signal, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT artifact_id, at, member, nodes, weight FROM detect_signals
		WHERE org_id = ? AND detector = ? AND key = ? AND at >= ? AND at <= ? ORDER BY at, artifact_id LIMIT ?`,
		t.org, k.Detector, k.Key, from, to, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []vigil.Signal
	for rows.Next() {
		var sg vigil.Signal
		var at int64
		var nodes []byte
		if err := rows.Scan(&sg.ArtifactID, &at, &sg.Member, &nodes, &sg.Count); err != nil {
			return nil, err
		}
		sg.At, sg.Evidence = fromNanos(at), sg.Count == 0
		// Written by RecordSignals; a row that does not decode
		// contributes no nodes.
		if correlate.IsStoredNodes(nodes) {
			sg.Nodes, _ = correlate.StoredNodes(k.Key, sg.Member, nodes)
		} else if len(nodes) > 0 {
			_ = json.Unmarshal(nodes, &sg.Nodes) // a row from before the stored form
		}
		out = append(out, sg)
	}
	return out, rows.Err()
}

func (t *corrTx) StartBurst(ctx context.Context, b correlate.Burst) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO detect_bursts (org_id, detector, key, observation_id, first_at, last_at, signals)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, t.org, b.Detector, b.Key, b.ObservationID, b.First, b.Last, b.Signals)
	return err
}

// PruneSignals forgets the signals r does not keep, and the bursts whose
// last signal it does not keep. It spans every org: it is housekeeping,
// not a request.
func (s *Store) PruneSignals(ctx context.Context, r vigil.SignalRetention) (int, error) {
	// The cached signals go too, in step with the table.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	defer s.newest.clear()
	cond, args := pruned(r, "at")
	res, err := s.w.ExecContext(ctx, `DELETE FROM detect_signals WHERE `+cond, args...)
	if err != nil {
		return 0, wrap("PruneSignals", err)
	}
	n, _ := res.RowsAffected()
	cond, args = pruned(r, "last_at")
	if _, err := s.w.ExecContext(ctx, `DELETE FROM detect_bursts WHERE `+cond, args...); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	// A redelivery comes within minutes: a day later the record of what a
	// suppression swallowed has nothing left to deduplicate.
	if _, err := s.w.ExecContext(ctx, `DELETE FROM suppressed_signals WHERE at < ?`, nanos(r.Before)); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM entity_risk WHERE at < ?`, nanos(r.EntityRiskBefore())); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	if s.tally != nil {
		n += int64(s.tally.Prune(r))
	}
	return int(n), nil
}

// pruned is the condition on the rows r does not keep, column their
// time, and its arguments: before r.Before, and not of a detector r
// keeps longer within its own time.
func pruned(r vigil.SignalRetention, column string) (string, []any) {
	cond := column + " < ?"
	args := []any{nanos(r.Before)}
	for _, p := range r.Prefixes() {
		cond += " AND NOT (substr(detector, 1, ?) = ? AND " + column + " >= ?)"
		args = append(args, len(p), p, nanos(r.Longer[p]))
	}
	return cond, args
}

// Tally returns the store's correlate.Tally, nil when every signal is
// recorded in the database.
func (s *Store) Tally() *correlate.Tally { return s.tally }
