package postgres

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// Detect evaluates detections atomically in one transaction. Several
// workers may evaluate the same (org, detector, key) at once, each with
// some of an attacker's lines: the transaction first takes an advisory
// lock on every (org, detector, key) it reads or writes — its own and the
// one it Requires — in ascending order, so the evaluations of one key run
// one after the other and the burst fires once, as with SQLite's single
// writer.
func (s *Store) Detect(ctx context.Context, org string, ds []*vigil.Detection, p vigil.CorrelationPolicy) ([]vigil.Detected, error) {
	locks := detectLockKeys(org, ds)
	var out []vigil.Detected
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		if len(locks) > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k`, locks); err != nil {
				return err
			}
		}
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
			if err := tx.QueryRow(ctx, `SELECT incident_id FROM observations WHERE id = $1`, out[i].ObservationID).
				Scan(&out[i].IncidentID); err != nil {
				return err
			}
		}
		return nil
	})
	return out, wrap("Detect", err)
}

// detectLockKeys returns the advisory lock keys of the (detector, key)
// pairs that ds evaluate, sorted and without repeats.
func detectLockKeys(org string, ds []*vigil.Detection) []int64 {
	var out []int64
	add := func(detector, key string) {
		h := fnv.New64a()
		h.Write([]byte("vigil/detect\x00"))
		for _, part := range []string{org, detector, key} {
			h.Write([]byte(part))
			h.Write([]byte{0})
		}
		out = append(out, int64(h.Sum64()))
	}
	for _, d := range ds {
		add(d.Detector, d.Key)
		if d.Requires != "" {
			add(d.Requires, d.Key)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// PruneSignals forgets signals older than before, and bursts whose last
// signal is older. It spans every org: it is housekeeping, not a request.
func (s *Store) PruneSignals(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM detect_signals WHERE at < $1`, nanos(before))
	if err != nil {
		return 0, wrap("PruneSignals", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM detect_bursts WHERE last_at < $1`, nanos(before)); err != nil {
		return 0, wrap("PruneSignals", err)
	}
	return int(tag.RowsAffected()), nil
}

func detect(ctx context.Context, tx pgx.Tx, org string, d *vigil.Detection, p vigil.CorrelationPolicy) (string, error) {
	// Record the signals; only those not seen before count. A signal
	// repeated within the batch counts once, the first.
	var (
		sigs                   []vigil.Signal
		artIDs, members, nodes []string
		ats                    []int64
		seen                   = map[string]bool{}
	)
	for _, sg := range d.Signals {
		if seen[sg.ArtifactID] {
			continue
		}
		seen[sg.ArtifactID] = true
		n := "null"
		if len(sg.Nodes) > 0 {
			b, _ := json.Marshal(sg.Nodes)
			n = string(b)
		}
		sigs = append(sigs, sg)
		artIDs, ats, members, nodes = append(artIDs, sg.ArtifactID), append(ats, nanos(sg.At)), append(members, sg.Member), append(nodes, n)
	}
	if len(sigs) == 0 {
		return "", nil
	}
	rows, err := tx.Query(ctx, `INSERT INTO detect_signals (org_id, detector, key, artifact_id, at, member, nodes)
		SELECT $1, $2, $3, a, t, m, NULLIF(n, 'null')::json FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[]) AS u(a, t, m, n)
		ON CONFLICT DO NOTHING RETURNING artifact_id`, org, d.Detector, d.Key, artIDs, ats, members, nodes)
	if err != nil {
		return "", err
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	isNew := make(map[string]bool, len(inserted))
	for _, id := range inserted {
		isNew[id] = true
	}
	var fresh []vigil.Signal
	var newest time.Time
	for _, sg := range sigs {
		if isNew[sg.ArtifactID] {
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
		var active bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM detect_bursts
			WHERE org_id = $1 AND detector = $2 AND key = $3 AND last_at >= $4 AND first_at <= $5)`,
			org, d.Requires, d.Key, nanos(since), nanos(newest)).Scan(&active); err != nil || !active {
			return "", err
		}
	}
	// An active burst of this key grows.
	var obsID string
	var firstAt, lastAt, signals int64
	err = tx.QueryRow(ctx, `SELECT b.observation_id, b.first_at, b.last_at, b.signals FROM detect_bursts b
		JOIN observations o ON o.id = b.observation_id AND o.org_id = b.org_id
		JOIN incidents i ON i.id = o.incident_id
		WHERE b.org_id = $1 AND b.detector = $2 AND b.key = $3 AND b.last_at >= $4 AND i.status IN (1, 2)
		ORDER BY b.last_at DESC, b.observation_id DESC LIMIT 1`, org, d.Detector, d.Key, nanos(since)).Scan(&obsID, &firstAt, &lastAt, &signals)
	switch {
	case errNoRows(err):
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
		st.Count, st.First, st.Grown = int(signals)+len(fresh), time.Unix(0, firstAt).UTC(), true
		st.Nodes, _ = vigil.MergeSignals(fresh)
		f := d.Describe(d.Key, st)
		if err := growObservation(ctx, tx, org, obsID, fresh, f, now, p); err != nil {
			return "", err
		}
		_, err = tx.Exec(ctx, `UPDATE detect_bursts SET last_at = GREATEST(last_at, $1), signals = signals + $6
			WHERE org_id = $2 AND detector = $3 AND key = $4 AND observation_id = $5`,
			nanos(newest), org, d.Detector, d.Key, obsID, len(fresh))
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
	upserted, err := upsertNodes(ctx, tx, org, refs, now)
	if err != nil {
		return "", err
	}
	keys := map[string]bool{}
	for i, n := range upserted {
		o.NodeIDs = append(o.NodeIDs, n.ID)
		if refs[i].Key {
			keys[n.ID] = true
		}
	}
	o.ArtifactIDs = artifactIDs
	if err := recordObservation(ctx, tx, org, o, keys, f.Title, p); err != nil {
		return "", err
	}
	_, err = tx.Exec(ctx, `INSERT INTO detect_bursts (org_id, detector, key, observation_id, first_at, last_at, signals)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, org, d.Detector, d.Key, o.ID, from, to, st.Count)
	return o.ID, err
}

// findBurst reads the recorded signals of d's key that a burst of the
// fresh signals could contain — after the last burst of the key, so that
// the signals of a closed incident's burst never count again — and
// searches them with vigil.FindBurst.
func findBurst(ctx context.Context, tx pgx.Tx, org string, d *vigil.Detection, fresh []vigil.Signal, newest time.Time) (from, to int64, ok bool, err error) {
	oldest := newest
	for _, sg := range fresh {
		if sg.At.Before(oldest) {
			oldest = sg.At
		}
	}
	floor := nanos(oldest.Add(-d.Span))
	var last *int64
	if err := tx.QueryRow(ctx, `SELECT MAX(last_at) FROM detect_bursts WHERE org_id = $1 AND detector = $2 AND key = $3 AND last_at >= $4`,
		org, d.Detector, d.Key, floor).Scan(&last); err != nil {
		return 0, 0, false, err
	}
	if last != nil {
		floor = *last + 1
	}
	rows, err := tx.Query(ctx, `SELECT at, member FROM detect_signals
		WHERE org_id = $1 AND detector = $2 AND key = $3 AND at >= $4 ORDER BY at LIMIT $5`,
		org, d.Detector, d.Key, floor, vigil.MaxBurstScan)
	if err != nil {
		return 0, 0, false, err
	}
	sigs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.SignalPoint, error) {
		var s vigil.SignalPoint
		err := r.Scan(&s.At, &s.Member)
		return s, err
	})
	if err != nil {
		return 0, 0, false, err
	}
	from, to, ok = vigil.FindBurst(sigs, d.Span, d.MinCount, d.MinDistinct, nanos(oldest), nanos(newest))
	return from, to, ok, nil
}

// windowState summarizes the newest limit signals of d's key with at in
// [from, to].
func windowState(ctx context.Context, tx pgx.Tx, org string, d *vigil.Detection, from, to int64, limit int) (vigil.WindowState, error) {
	// Served by the covering index detect_signals_window alone.
	rows, err := tx.Query(ctx, `SELECT at, member FROM detect_signals
		WHERE org_id = $1 AND detector = $2 AND key = $3 AND at >= $4 AND at <= $5 ORDER BY at DESC LIMIT $6`,
		org, d.Detector, d.Key, from, to, limit)
	if err != nil {
		return vigil.WindowState{}, err
	}
	pts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.SignalPoint, error) {
		var p vigil.SignalPoint
		err := r.Scan(&p.At, &p.Member)
		return p, err
	})
	return vigil.SummarizeWindow(pts), err
}

// windowSignals returns the signals of d's key in [from, to], oldest first.
func windowSignals(ctx context.Context, tx pgx.Tx, org string, d *vigil.Detection, from, to int64) ([]vigil.Signal, error) {
	rows, err := tx.Query(ctx, `SELECT artifact_id, at, member, nodes::text FROM detect_signals
		WHERE org_id = $1 AND detector = $2 AND key = $3 AND at >= $4 AND at <= $5 ORDER BY at, artifact_id LIMIT $6`,
		org, d.Detector, d.Key, from, to, vigil.MaxObservationArtifacts)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.Signal, error) {
		var sg vigil.Signal
		var at int64
		var nodes *string
		if err := r.Scan(&sg.ArtifactID, &at, &sg.Member, &nodes); err != nil {
			return sg, err
		}
		sg.At = fromNanos(at)
		if nodes != nil {
			// Written by detect from []vigil.NodeRef; a row that does not
			// decode contributes no nodes, as in the SQLite store.
			_ = json.Unmarshal([]byte(*nodes), &sg.Nodes)
		}
		return sg, nil
	})
}

// growObservation appends fresh signals' artifacts and nodes to an
// observation and its incident, and rebuilds its description and severity.
// The incident is locked first, as every other change to it.
func growObservation(ctx context.Context, tx pgx.Tx, org, obsID string, fresh []vigil.Signal, f vigil.Finding, now time.Time, p vigil.CorrelationPolicy) error {
	var incID, severity string
	if err := tx.QueryRow(ctx, `SELECT incident_id, severity FROM observations WHERE org_id = $1 AND id = $2`, org, obsID).Scan(&incID, &severity); err != nil {
		return err
	}
	if err := lockIncident(ctx, tx, org, incID); err != nil {
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
	// The key nodes join the incident: like recordObservation, wait for
	// any correlation on them in flight.
	if err := lockKeyNodes(ctx, tx, org, keys); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, n := range nodes {
		b.Queue(`INSERT INTO observation_nodes (observation_id, node_id, pos, key)
			VALUES ($1, $2, (SELECT COALESCE(MAX(pos), -1) + 1 FROM observation_nodes WHERE observation_id = $1), $3)
			ON CONFLICT (observation_id, node_id) DO UPDATE SET key = observation_nodes.key OR excluded.key`, obsID, n.ID, keys[n.ID])
		b.Queue(`INSERT INTO incident_nodes (incident_id, node_id, key) VALUES ($1, $2, $3)
			ON CONFLICT (incident_id, node_id) DO UPDATE SET key = incident_nodes.key OR excluded.key`, incID, n.ID, keys[n.ID])
	}
	if err := sendBatch(ctx, tx, b); err != nil {
		return err
	}

	// The observation lists at most MaxObservationArtifacts artifacts, in
	// the order they came; the incident takes them all.
	rows, err := tx.Query(ctx, `SELECT x.artifact_id FROM observation_artifacts x JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $1 AND x.observation_id = $2`, org, obsID)
	if err != nil {
		return err
	}
	listed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	have := len(listed)
	isListed := make(map[string]bool, have)
	for _, id := range listed {
		isListed[id] = true
	}
	var add []string
	var pos []int
	for _, id := range artifactIDs {
		if have < vigil.MaxObservationArtifacts && !isListed[id] {
			isListed[id] = true
			add = append(add, id)
			pos = append(pos, have)
			have++
		}
	}
	b = &pgx.Batch{}
	if len(add) > 0 {
		b.Queue(`INSERT INTO observation_artifacts (observation_id, artifact_id, pos)
			SELECT $1, a, n FROM unnest($2::text[], $3::int[]) AS u(a, n)`, obsID, add, pos)
	}
	if len(artifactIDs) > 0 {
		// Count what is new instead of recounting a large incident on each growth.
		b.Queue(`WITH ins AS (INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT $1, a FROM unnest($2::text[]) AS a ON CONFLICT DO NOTHING RETURNING 1)
			UPDATE incidents SET artifact_count = artifact_count + (SELECT COUNT(*) FROM ins) WHERE id = $1 AND org_id = $3`,
			incID, artifactIDs, org)
	}
	b.Queue(`UPDATE observations SET description = $1, severity = $2, updated_at = $3 WHERE org_id = $4 AND id = $5`,
		f.Description, vigil.MaxSeverity(severity, f.Severity), nanos(now), org, obsID)
	queueRefreshKeepArtifacts(b, org, incID, now)
	return sendBatch(ctx, tx, b)
}
