package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/vigil-soc/vigil"
)

// Detect evaluates detections atomically in one write transaction. The
// single writer connection serializes every worker, so two workers that
// split one attacker's lines still fire once.
func (s *Store) Detect(ctx context.Context, org string, ds []*vigil.Detection, p vigil.CorrelationPolicy) ([]vigil.Detected, error) {
	var out []vigil.Detected
	err := s.tx(ctx, func(tx *wtx) error {
		out = out[:0]
		for _, d := range ds {
			id, err := detect(ctx, tx, org, d, p)
			if err != nil {
				return err
			}
			if id != "" {
				out = append(out, vigil.Detected{ObservationID: id})
			}
		}
		// The incidents as they are after every merge of the batch.
		for i := range out {
			if err := tx.QueryRowContext(ctx, `SELECT incident_id FROM observations WHERE id = ?`, out[i].ObservationID).
				Scan(&out[i].IncidentID); err != nil {
				return err
			}
		}
		return nil
	})
	return out, wrap("Detect", err)
}

// PruneSignals forgets signals older than before, and bursts whose last
// signal is older.
func (s *Store) PruneSignals(ctx context.Context, before time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM detect_signals WHERE at < ?`, nanos(before))
	if err != nil {
		return 0, wrap("PruneSignals", err)
	}
	n, _ := res.RowsAffected()
	if _, err := s.w.ExecContext(ctx, `DELETE FROM detect_bursts WHERE last_at < ?`, nanos(before)); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	return int(n), nil
}

func detect(ctx context.Context, tx *wtx, org string, d *vigil.Detection, p vigil.CorrelationPolicy) (string, error) {
	// Record the signals; only those not seen before count.
	var fresh []vigil.Signal
	var newest time.Time
	for _, sg := range d.Signals {
		var nodes any
		if len(sg.Nodes) > 0 {
			b, _ := json.Marshal(sg.Nodes)
			nodes = string(b)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO detect_signals (org_id, detector, key, artifact_id, at, member, nodes)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, org, d.Detector, d.Key, sg.ArtifactID, nanos(sg.At), sg.Member, nodes)
		if err != nil {
			return "", err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			fresh = append(fresh, sg)
			if sg.At.After(newest) {
				newest = sg.At
			}
		}
	}
	if len(fresh) == 0 {
		return "", nil // a redelivery: nothing new
	}
	since := newest.Add(-d.Span)
	if d.Requires != "" {
		ok, err := burstActive(ctx, tx, org, d.Requires, d.Key, since, newest)
		if err != nil || !ok {
			return "", err
		}
	}
	// An active burst of this key grows.
	var obsID string
	var firstAt, lastAt, signals int64
	err := tx.QueryRowContext(ctx, `SELECT b.observation_id, b.first_at, b.last_at, b.signals FROM detect_bursts b
		JOIN observations o ON o.id = b.observation_id AND o.org_id = b.org_id
		JOIN incidents i ON i.id = o.incident_id
		WHERE b.org_id = ? AND b.detector = ? AND b.key = ? AND b.last_at >= ? AND i.status IN (1, 2)
		ORDER BY b.last_at DESC, b.observation_id DESC LIMIT 1`, org, d.Detector, d.Key, nanos(since)).Scan(&obsID, &firstAt, &lastAt, &signals)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		obsID = ""
	case err != nil:
		return "", err
	}
	now := vigil.Now()
	if obsID != "" {
		// Members over the last span; the count is the burst's running total.
		st, err := windowState(ctx, tx, org, d, max(firstAt, nanos(since)), max(nanos(newest), lastAt), vigil.MaxGrowScan)
		if err != nil {
			return "", err
		}
		st.Count, st.First, st.Grown = int(signals)+len(fresh), fromNanos(firstAt), true
		st.Nodes, _ = vigil.MergeSignals(fresh)
		f := d.Describe(d.Key, st)
		if err := growObservation(ctx, tx, org, obsID, fresh, f, now, p); err != nil {
			return "", err
		}
		_, err = tx.ExecContext(ctx, `UPDATE detect_bursts SET last_at = MAX(last_at, ?), signals = signals + ?
			WHERE org_id = ? AND detector = ? AND key = ? AND observation_id = ?`,
			nanos(newest), len(fresh), org, d.Detector, d.Key, obsID)
		return obsID, err
	}
	from, to, ok, err := findBurst(ctx, tx, org, d, fresh, newest)
	if err != nil || !ok {
		return "", err
	}
	st, err := windowState(ctx, tx, org, d, from, to, vigil.MaxBurstScan)
	if err != nil {
		return "", err
	}
	// Fire: one observation with every signal of the burst so far.
	window, err := windowSignals(ctx, tx, org, d, from, to)
	if err != nil {
		return "", err
	}
	refs, artifactIDs := vigil.MergeSignals(window)
	st.Nodes = refs
	f := d.Describe(d.Key, st)
	o := &vigil.Observation{ID: vigil.NewID(), Type: f.Type, Description: f.Description, Severity: f.Severity,
		CreatedAt: now, UpdatedAt: now}
	nodes, err := upsertNodes(ctx, tx, org, refs, now)
	if err != nil {
		return "", err
	}
	keys := map[string]bool{}
	for i, n := range nodes {
		o.NodeIDs = append(o.NodeIDs, n.ID)
		if refs[i].Key {
			keys[n.ID] = true
		}
	}
	o.ArtifactIDs = artifactIDs
	if err := recordObservation(ctx, tx, org, o, keys, f.Title, p); err != nil {
		return "", err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO detect_bursts (org_id, detector, key, observation_id, first_at, last_at, signals) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		org, d.Detector, d.Key, o.ID, from, to, st.Count)
	return o.ID, err
}

// findBurst looks, among every recorded signal of d's key, for the first
// window of Span that ends at or after the oldest fresh signal, while it
// can still hold a fresh one, and meets d's thresholds. Signals recorded
// by another worker or an earlier late batch may lie on either side of
// the fresh ones, so windows ending at them count too. The burst runs
// from that window's first signal through the signals after its last
// that follow each other within Span. Signals of an earlier burst whose
// incident was closed stay out of it: the next burst counts only what
// came after that one.
func findBurst(ctx context.Context, tx *wtx, org string, d *vigil.Detection, fresh []vigil.Signal, newest time.Time) (from, to int64, ok bool, err error) {
	oldest := newest
	for _, sg := range fresh {
		if sg.At.Before(oldest) {
			oldest = sg.At
		}
	}
	floor := nanos(oldest.Add(-d.Span))
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(last_at) FROM detect_bursts WHERE org_id = ? AND detector = ? AND key = ? AND last_at >= ?`,
		org, d.Detector, d.Key, floor).Scan(&last); err != nil {
		return 0, 0, false, err
	}
	if last.Valid {
		floor = last.Int64 + 1
	}
	rows, err := tx.QueryContext(ctx, `SELECT at, member FROM detect_signals
		WHERE org_id = ? AND detector = ? AND key = ? AND at >= ? ORDER BY at LIMIT ?`,
		org, d.Detector, d.Key, floor, vigil.MaxBurstScan)
	if err != nil {
		return 0, 0, false, err
	}
	var sigs []vigil.SignalPoint
	for rows.Next() {
		var s vigil.SignalPoint
		if err := rows.Scan(&s.At, &s.Member); err != nil {
			rows.Close()
			return 0, 0, false, err
		}
		sigs = append(sigs, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, false, err
	}
	from, to, ok = vigil.FindBurst(sigs, d.Span, d.MinCount, d.MinDistinct, nanos(oldest), nanos(newest))
	return from, to, ok, nil
}

// burstActive reports whether a burst of detector for key was under way
// at the requiring signal's time at: begun by then, its last signal at or
// after since. A login that came before the brute force is no success
// after it.
func burstActive(ctx context.Context, tx *wtx, org, detector, key string, since, at time.Time) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM detect_bursts WHERE org_id = ? AND detector = ? AND key = ? AND last_at >= ? AND first_at <= ?`,
		org, detector, key, nanos(since), nanos(at)).Scan(&n)
	return n > 0, err
}

// windowState summarizes the newest limit signals of d's key with at in
// [from, to].
func windowState(ctx context.Context, tx *wtx, org string, d *vigil.Detection, from, to int64, limit int) (vigil.WindowState, error) {
	// Served by the covering index detect_signals_window alone.
	rows, err := tx.QueryContext(ctx, `SELECT at, member FROM detect_signals
		WHERE org_id = ? AND detector = ? AND key = ? AND at >= ? AND at <= ? ORDER BY at DESC LIMIT ?`,
		org, d.Detector, d.Key, from, to, limit)
	if err != nil {
		return vigil.WindowState{}, err
	}
	defer rows.Close()
	var pts []vigil.SignalPoint
	for rows.Next() {
		var p vigil.SignalPoint
		if err := rows.Scan(&p.At, &p.Member); err != nil {
			return vigil.WindowState{}, err
		}
		pts = append(pts, p)
	}
	return vigil.SummarizeWindow(pts), rows.Err()
}

// windowSignals returns the signals of d's key in [from, to], oldest first.
func windowSignals(ctx context.Context, tx *wtx, org string, d *vigil.Detection, from, to int64) ([]vigil.Signal, error) {
	rows, err := tx.QueryContext(ctx, `SELECT artifact_id, at, member, nodes FROM detect_signals
		WHERE org_id = ? AND detector = ? AND key = ? AND at >= ? AND at <= ? ORDER BY at, artifact_id LIMIT ?`,
		org, d.Detector, d.Key, from, to, vigil.MaxObservationArtifacts)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []vigil.Signal
	for rows.Next() {
		var sg vigil.Signal
		var at int64
		var nodes sql.NullString
		if err := rows.Scan(&sg.ArtifactID, &at, &sg.Member, &nodes); err != nil {
			return nil, err
		}
		sg.At = fromNanos(at)
		if nodes.Valid {
			json.Unmarshal([]byte(nodes.String), &sg.Nodes)
		}
		out = append(out, sg)
	}
	return out, rows.Err()
}

// growObservation appends fresh signals' artifacts and nodes to an
// observation and its incident, and rebuilds its description and severity.
func growObservation(ctx context.Context, tx *wtx, org, obsID string, fresh []vigil.Signal, f vigil.Finding, now time.Time, p vigil.CorrelationPolicy) error {
	var incID, severity string
	if err := tx.QueryRowContext(ctx, `SELECT incident_id, severity FROM observations WHERE org_id = ? AND id = ?`, org, obsID).Scan(&incID, &severity); err != nil {
		return err
	}
	refs, artifactIDs := vigil.MergeSignals(fresh)
	nodes, err := upsertNodes(ctx, tx, org, refs, now)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for i, n := range nodes {
		if refs[i].Key {
			keys[n.ID] = true
		}
	}
	if err := hubsToContext(ctx, tx, org, keys, p.HubLimit); err != nil {
		return err
	}
	for _, n := range nodes {
		if _, err := tx.ExecContext(ctx, `INSERT INTO observation_nodes (observation_id, node_id, pos, key)
			VALUES (?1, ?2, (SELECT COALESCE(MAX(pos), -1) + 1 FROM observation_nodes WHERE observation_id = ?1), ?3)
			ON CONFLICT DO UPDATE SET key = MAX(key, excluded.key)`, obsID, n.ID, keys[n.ID]); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO incident_nodes (incident_id, node_id, key) VALUES (?, ?, ?)
			ON CONFLICT DO UPDATE SET key = MAX(key, excluded.key)`, incID, n.ID, keys[n.ID]); err != nil {
			return err
		}
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM observation_artifacts WHERE observation_id = ?`, obsID).Scan(&have); err != nil {
		return err
	}
	added := 0
	for _, id := range artifactIDs {
		if have < vigil.MaxObservationArtifacts {
			res, err := tx.ExecContext(ctx, `INSERT INTO observation_artifacts (observation_id, artifact_id, pos) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
				obsID, id, have)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				have++
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO incident_artifacts (incident_id, artifact_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			incID, id)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		added += int(n)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE observations SET description = ?, severity = ?, updated_at = ? WHERE id = ?`,
		f.Description, vigil.MaxSeverity(severity, f.Severity), nanos(now), obsID); err != nil {
		return err
	}
	return refreshIncident(ctx, tx, incID, now, true, added)
}
