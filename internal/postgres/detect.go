package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// The detection state of correlate.Tx: the signals recorded per (org,
// detector, key), once per artifact, and the bursts that fired. The
// callers hold the (org, detector, key) lock (LockDetections).

// RecordSignals records the signals in one statement; a signal repeated
// within sigs counts once, the first.
func (t *corrTx) RecordSignals(ctx context.Context, k correlate.DetectionKey, sigs []vigil.Signal) ([]vigil.Signal, error) {
	var (
		uniq                   []vigil.Signal
		artIDs, members, nodes []string
		units                  []*string
		ats, weights           []int64
		seen                   = make(map[string]bool, len(sigs))
	)
	for _, sg := range sigs {
		if seen[sg.ArtifactID] {
			continue
		}
		seen[sg.ArtifactID] = true
		n := "null"
		if len(sg.Nodes) > 0 {
			b, _ := json.Marshal(sg.Nodes)
			n = string(b)
		}
		var unit *string
		if sg.Unit != "" {
			unit = &sg.Unit
		}
		uniq = append(uniq, sg)
		artIDs, ats, members, nodes = append(artIDs, sg.ArtifactID), append(ats, nanos(sg.At)), append(members, sg.Member), append(nodes, n)
		weights, units = append(weights, int64(sg.Weight())), append(units, unit)
	}
	if len(uniq) == 0 {
		return nil, nil
	}
	inserted, err := t.queryStrings(ctx, `INSERT INTO detect_signals (org_id, detector, key, artifact_id, at, member, nodes, weight, unit)
		SELECT $1, $2, $3, a, t, m, NULLIF(n, 'null')::json, w, u
		FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[], $8::bigint[], $9::text[]) AS x(a, t, m, n, w, u)
		ON CONFLICT DO NOTHING RETURNING artifact_id`, t.org, k.Detector, k.Key, artIDs, ats, members, nodes, weights, units)
	if err != nil {
		return nil, err
	}
	isNew := make(map[string]bool, len(inserted))
	for _, id := range inserted {
		isNew[id] = true
	}
	var fresh []vigil.Signal
	for _, sg := range uniq {
		if isNew[sg.ArtifactID] {
			fresh = append(fresh, sg)
		}
	}
	return fresh, nil
}

func (t *corrTx) RecordedUnits(ctx context.Context, k correlate.DetectionKey, units []string, from, to int64) ([]string, error) {
	// Served by the partial index detect_signals_unit.
	return t.queryStrings(ctx, `SELECT DISTINCT unit FROM detect_signals
		WHERE org_id = $1 AND detector = $2 AND key = $3 AND unit = ANY($4::text[]) AND at >= $5 AND at <= $6`,
		t.org, k.Detector, k.Key, units, from, to)
}

func (t *corrTx) Bursts(ctx context.Context, k correlate.DetectionKey, since int64) ([]correlate.Burst, error) {
	var out []correlate.Burst
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			b := correlate.Burst{DetectionKey: k}
			var signals int64
			if err := rows.Scan(&b.ObservationID, &b.First, &b.Last, &signals, &b.IncidentID, &b.Severity, &b.Open, &b.Rollup); err != nil {
				return err
			}
			b.Signals = int(signals)
			out = append(out, b)
		}
		return rows.Err()
	}, `SELECT b.observation_id, b.first_at, b.last_at, b.signals,
			COALESCE(o.incident_id, ''), COALESCE(o.severity, ''), COALESCE(i.status IN (1, 2), false),
			EXISTS (SELECT 1 FROM rollups r WHERE r.incident_id = o.incident_id)
		FROM detect_bursts b
		LEFT JOIN observations o ON o.id = b.observation_id AND o.org_id = b.org_id
		LEFT JOIN incidents i ON i.id = o.incident_id AND i.org_id = b.org_id
		WHERE b.org_id = $1 AND b.detector = $2 AND b.key = $3 AND b.last_at >= $4`, t.org, k.Detector, k.Key, since)
	return out, err
}

func (t *corrTx) SignalsFrom(ctx context.Context, k correlate.DetectionKey, from int64, limit int) ([]vigil.Signal, error) {
	return t.points(ctx, `SELECT at, member, weight FROM detect_signals
		WHERE org_id = $1 AND detector = $2 AND key = $3 AND at >= $4 ORDER BY at LIMIT $5`,
		t.org, k.Detector, k.Key, from, limit)
}

func (t *corrTx) NewestSignals(ctx context.Context, k correlate.DetectionKey, from, to int64, limit int) ([]vigil.Signal, error) {
	// Served by the covering index detect_signals_window alone.
	return t.points(ctx, `SELECT at, member, weight FROM detect_signals
		WHERE org_id = $1 AND detector = $2 AND key = $3 AND at >= $4 AND at <= $5 ORDER BY at DESC LIMIT $6`,
		t.org, k.Detector, k.Key, from, to, limit)
}

func (t *corrTx) points(ctx context.Context, sql string, args ...any) ([]vigil.Signal, error) {
	var out []vigil.Signal
	err := t.query(ctx, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.Signal, error) {
			var sg vigil.Signal
			var at, weight int64
			err := r.Scan(&at, &sg.Member, &weight)
			sg.At, sg.Count, sg.Evidence = fromNanos(at), int(weight), weight == 0
			return sg, err
		})
		return err
	}, sql, args...)
	return out, err
}

func (t *corrTx) WindowSignals(ctx context.Context, k correlate.DetectionKey, from, to int64, limit int) ([]vigil.Signal, error) {
	var out []vigil.Signal
	err := t.query(ctx, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.Signal, error) {
			var sg vigil.Signal
			var at int64
			var nodes *string
			var weight int64
			if err := r.Scan(&sg.ArtifactID, &at, &sg.Member, &nodes, &weight); err != nil {
				return sg, err
			}
			sg.At, sg.Count, sg.Evidence = fromNanos(at), int(weight), weight == 0
			if nodes != nil {
				// Written by RecordSignals from []vigil.NodeRef; a row that
				// does not decode contributes no nodes.
				_ = json.Unmarshal([]byte(*nodes), &sg.Nodes)
			}
			return sg, nil
		})
		return err
	}, `SELECT artifact_id, at, member, nodes::text, weight FROM detect_signals
		WHERE org_id = $1 AND detector = $2 AND key = $3 AND at >= $4 AND at <= $5 ORDER BY at, artifact_id LIMIT $6`,
		t.org, k.Detector, k.Key, from, to, limit)
	return out, err
}

func (t *corrTx) StartBurst(_ context.Context, b correlate.Burst) error {
	t.exec(`INSERT INTO detect_bursts (org_id, detector, key, observation_id, first_at, last_at, signals)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, t.org, b.Detector, b.Key, b.ObservationID, b.First, b.Last, b.Signals)
	return nil
}

func (t *corrTx) ExtendBurst(_ context.Context, k correlate.DetectionKey, observationID string, last int64, signals int) error {
	t.exec(`UPDATE detect_bursts SET last_at = $1, signals = $2
		WHERE org_id = $3 AND detector = $4 AND key = $5 AND observation_id = $6`,
		last, signals, t.org, k.Detector, k.Key, observationID)
	return nil
}

// PruneSignals forgets the signals r does not keep, and the bursts whose
// last signal it does not keep. It spans every org: it is housekeeping,
// not a request.
func (s *Store) PruneSignals(ctx context.Context, r vigil.SignalRetention) (int, error) {
	cond, args := pruned(r, "at")
	tag, err := s.pool.Exec(ctx, `DELETE FROM detect_signals WHERE `+cond, args...)
	if err != nil {
		return 0, wrap("PruneSignals", err)
	}
	cond, args = pruned(r, "last_at")
	if _, err := s.pool.Exec(ctx, `DELETE FROM detect_bursts WHERE `+cond, args...); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	// A redelivery comes within minutes: a day later the record of what a
	// suppression swallowed has nothing left to deduplicate.
	if _, err := s.pool.Exec(ctx, `DELETE FROM suppressed_signals WHERE at < $1`, nanos(r.Before)); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM entity_risk WHERE at < $1`, nanos(r.EntityRiskBefore())); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	return int(tag.RowsAffected()), nil
}

// pruned is the condition on the rows r does not keep, column their
// time, and its arguments: before r.Before, and not of a detector r
// keeps longer within its own time.
func pruned(r vigil.SignalRetention, column string) (string, []any) {
	cond := column + " < $1"
	args := []any{nanos(r.Before)}
	for _, p := range r.Prefixes() {
		args = append(args, p, nanos(r.Longer[p]))
		cond += fmt.Sprintf(" AND NOT (starts_with(detector, $%d) AND %s >= $%d)", len(args)-1, column, len(args))
	}
	return cond, args
}
