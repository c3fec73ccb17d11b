package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// The roll-ups and entity risk of correlate.RollupTx. The one writer
// serializes every transaction: LockRollup is a no-op.

func (t *corrTx) AddRisk(ctx context.Context, r correlate.RiskEntry) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO entity_risk (org_id, observation_id, node_id, detection, points, at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET points = MAX(points, excluded.points)`,
		t.org, r.ObservationID, r.NodeID, r.Detection, r.Points, nanos(r.At))
	return err
}

func (t *corrTx) Risk(ctx context.Context, node string, since time.Time) (int, []string, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT detection, SUM(points) FROM entity_risk
		WHERE org_id = ? AND node_id = ? AND at >= ? GROUP BY detection ORDER BY detection`, t.org, node, nanos(since))
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	points, dets := 0, []string{}
	for rows.Next() {
		var d string
		var p int
		if err := rows.Scan(&d, &p); err != nil {
			return 0, nil, err
		}
		points += p
		dets = append(dets, d)
	}
	return points, dets, rows.Err()
}

func (t *corrTx) DetectionSources(ctx context.Context, detection string, since time.Time) (int, time.Time, error) {
	var n int
	var oldest sql.NullInt64
	err := t.tx.QueryRowContext(ctx, `SELECT COUNT(DISTINCT node_id), MIN(at) FROM entity_risk
		WHERE org_id = ? AND detection = ? AND at >= ?`, t.org, detection, nanos(since)).Scan(&n, &oldest)
	return n, fromNanos(oldest.Int64), err
}

func (t *corrTx) LockRollup(context.Context, string) error { return nil }

// rollupCols are a roll-up's columns, as scanRollup reads them.
const rollupCols = `incident_id, detection, detector, name, window_start, window_end, sources, count, title`

func scanRollup(row interface{ Scan(...any) error }) (*correlate.Rollup, error) {
	var r correlate.Rollup
	var start, end int64
	if err := row.Scan(&r.IncidentID, &r.Detection, &r.Detector, &r.Name, &start, &end, &r.Sources, &r.Count, &r.Title); err != nil {
		return nil, err
	}
	r.WindowStart, r.WindowEnd = fromNanos(start), fromNanos(end)
	return &r, nil
}

// oneRollup returns the roll-up a query finds, or nil.
func oneRollup(row *sql.Row) (*correlate.Rollup, error) {
	r, err := scanRollup(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// openRollup keeps the roll-ups whose incident is open and not merged.
const openRollup = `EXISTS (SELECT 1 FROM incidents i WHERE i.id = r.incident_id AND +i.org_id = r.org_id
	AND i.status IN (1, 2) AND i.merged_into IS NULL)`

func (t *corrTx) OpenRollup(ctx context.Context, detection string, at time.Time) (*correlate.Rollup, error) {
	return oneRollup(t.tx.QueryRowContext(ctx, `SELECT `+rollupCols+` FROM rollups r
		WHERE org_id = ?1 AND detection = ?2 AND window_end > ?3 AND `+openRollup+`
		ORDER BY window_end DESC LIMIT 1`, t.org, detection, nanos(at)))
}

func (t *corrTx) RollupOf(ctx context.Context, incident string) (*correlate.Rollup, error) {
	return oneRollup(t.tx.QueryRowContext(ctx, `SELECT `+rollupCols+` FROM rollups WHERE incident_id = ? AND org_id = ?`, incident, t.org))
}

func (t *corrTx) CreateRollup(ctx context.Context, r correlate.Rollup) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO rollups (incident_id, org_id, detection, detector, name, window_start, window_end, sources, count, title)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM incidents WHERE id = ?1 AND org_id = ?2)`,
		r.IncidentID, t.org, r.Detection, r.Detector, r.Name, nanos(r.WindowStart), nanos(r.WindowEnd), r.Sources, r.Count, r.Title)
	return err
}

func (t *corrTx) JoinRollup(ctx context.Context, incident string, o *vigil.Observation) (int, int, error) {
	// Written into it already when InsertObservation was told (most are).
	placed := t.placed[o.ID]
	delete(t.placed, o.ID)
	if placed != incident {
		if _, err := t.tx.ExecContext(ctx, `UPDATE observations SET incident_id = ? WHERE id = ? AND +org_id = ?`, incident, o.ID, t.org); err != nil {
			return 0, 0, err
		}
	}
	added, err := t.addToIncident(ctx, incident, o.NodeIDs, nil, o.ArtifactIDs)
	if err != nil {
		return 0, 0, err
	}
	if len(o.ArtifactIDs) == 0 {
		added.events.add(nanos(o.CreatedAt)) // an observation naming no artifact happened when reported
	}
	t.pendEvents(incident, added.events)
	return added.nodes, added.artifacts, nil
}

// pendEvents keeps span to widen roll-up incident's event times with,
// once a batch: its refresh (UpdateRollup) writes them, with its counts
// and title.
func (t *corrTx) pendEvents(incident string, span eventSpan) {
	if !span.set {
		return
	}
	if t.events == nil {
		t.events = map[string]eventSpan{}
	}
	e := t.events[incident]
	e.widen(span)
	t.events[incident] = e
}

// widenPending writes the event times kept by pendEvents that no refresh
// wrote, in the order of the incidents' ids.
func (t *corrTx) widenPending(ctx context.Context) error {
	ids := make([]string, 0, len(t.events))
	for id := range t.events {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := t.widenEvents(ctx, id, t.events[id]); err != nil {
			return err
		}
		delete(t.events, id)
	}
	return nil
}

// widenEvents widens an incident's event times to span, writing it only
// when they widen.
func (t *corrTx) widenEvents(ctx context.Context, incident string, span eventSpan) error {
	if !span.set {
		return nil
	}
	_, err := t.tx.ExecContext(ctx, `UPDATE incidents SET first_event_at = MIN(COALESCE(first_event_at, ?3), ?3),
		last_event_at = MAX(COALESCE(last_event_at, ?4), ?4)
		WHERE id = ?1 AND +org_id = ?2 AND (first_event_at IS NULL OR ?3 < first_event_at OR ?4 > last_event_at)`,
		incident, t.org, span.first, span.last)
	return err
}

func (t *corrTx) UpdateRollup(ctx context.Context, u correlate.RollupUpdate) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE rollups SET sources = sources + ?, count = count + ?, title = COALESCE(NULLIF(?, ''), title)
		WHERE incident_id = ? AND org_id = ?`, u.Sources, u.Count, u.Title, u.IncidentID, t.org); err != nil {
		return err
	}
	// The title follows from the roll-up's (refresh).
	return t.refresh(ctx, u.IncidentID, u.At, u.Active, addedRefs{nodes: u.Nodes, artifacts: u.Artifacts})
}

func (t *corrTx) AddRollupSource(ctx context.Context, incident, node string, count int, at time.Time) (bool, error) {
	// Most sources of a busy roll-up are new to it: the insert first.
	res, err := t.tx.ExecContext(ctx, `INSERT INTO rollup_sources (incident_id, node_id, count, first_at, last_at)
		SELECT ?1, ?2, ?3, ?4, ?4 WHERE `+rollupOfOrg+` ON CONFLICT DO NOTHING`, incident, node, count, nanos(at), t.org)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, nil
	}
	_, err = t.tx.ExecContext(ctx, `UPDATE rollup_sources SET count = count + ?3, last_at = MAX(last_at, ?4)
		WHERE incident_id = ?1 AND node_id = ?2 AND `+rollupOfOrg, incident, node, count, nanos(at), t.org)
	return false, err
}

// rollupOfOrg guards a statement on the rows of roll-up ?1 (its incident
// id): they are written only when it is a roll-up of org ?5.
const rollupOfOrg = `EXISTS (SELECT 1 FROM rollups WHERE incident_id = ?1 AND org_id = ?5)`

func (t *corrTx) RollupCandidates(ctx context.Context, detection string, since time.Time) ([]correlate.Candidacy, error) {
	if err := t.settle(ctx); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT o.incident_id, o.id, o.severity, COALESCE(r.detection, ''), COALESCE(r.node_id, '')
		FROM observations o LEFT JOIN entity_risk r ON r.org_id = ?1 AND r.observation_id = o.id
		WHERE o.incident_id IN (SELECT i.id FROM incidents i
			WHERE i.id IN (SELECT o2.incident_id FROM entity_risk r2 JOIN observations o2 ON o2.id = r2.observation_id
				WHERE r2.org_id = ?1 AND r2.detection = ?2 AND r2.at >= ?3 AND o2.incident_id IS NOT NULL)
			AND +i.org_id = ?1 AND i.status = 1 AND i.merged_into IS NULL AND i.assignee IS NULL
			AND NOT EXISTS (SELECT 1 FROM rollups WHERE incident_id = i.id))
		AND +o.org_id = ?1
		ORDER BY (SELECT created_at FROM incidents WHERE id = o.incident_id), o.incident_id, o.created_at, o.id`, t.org, detection, nanos(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []correlate.Candidacy
	for rows.Next() {
		var c correlate.Candidacy
		if err := rows.Scan(&c.IncidentID, &c.ObservationID, &c.Severity, &c.Detection, &c.NodeID); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (t *corrTx) TakeIntoRollup(ctx context.Context, obs []string, node, from, into string, now time.Time) (bool, int, bool, error) {
	if err := t.settle(ctx); err != nil {
		return false, 0, false, err
	}
	var nodes, arts int
	var events eventSpan // of the artifacts taken in
	for _, id := range obs {
		res, err := t.tx.ExecContext(ctx, `INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT ?1, x.node_id, 0 FROM observation_nodes x WHERE x.observation_id = ?3 AND `+incidentOfOrg+` ON CONFLICT DO NOTHING`,
			into, t.org, id)
		if err != nil {
			return false, 0, false, err
		}
		n, _ := res.RowsAffected()
		nodes += int(n)
		if res, err = t.tx.ExecContext(ctx, `INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT ?1, x.artifact_id FROM observation_artifacts x WHERE x.observation_id = ?3 AND `+incidentOfOrg+` ON CONFLICT DO NOTHING`,
			into, t.org, id); err != nil {
			return false, 0, false, err
		}
		n, _ = res.RowsAffected()
		arts += int(n)
		var first, last sql.NullInt64
		if err := t.tx.QueryRowContext(ctx, `SELECT MIN(a.ts), MAX(a.ts) FROM observation_artifacts x JOIN artifacts a ON a.id = x.artifact_id
			WHERE x.observation_id = ? AND +a.org_id = ?`, id, t.org).Scan(&first, &last); err != nil {
			return false, 0, false, err
		}
		if first.Valid {
			events.add(first.Int64)
			events.add(last.Int64)
		}
		if _, err := t.tx.ExecContext(ctx, `UPDATE observations SET incident_id = ? WHERE id = ? AND incident_id = ? AND +org_id = ?`,
			into, id, from, t.org); err != nil {
			return false, 0, false, err
		}
	}
	isNew, err := t.AddRollupSource(ctx, into, node, arts, now)
	if err != nil {
		return false, 0, false, err
	}
	added := 0
	if isNew {
		added = 1
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE rollups SET sources = sources + ?, count = count + ? WHERE incident_id = ? AND org_id = ?`,
		added, arts, into, t.org); err != nil {
		return false, 0, false, err
	}
	if err := t.refresh(ctx, into, now, true, addedRefs{nodes: nodes, artifacts: arts, events: events}); err != nil {
		return false, 0, false, err
	}
	var left int
	if err := t.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM observations WHERE incident_id = ? AND +org_id = ?`, from, t.org).Scan(&left); err != nil {
		return false, 0, false, err
	}
	if left > 0 {
		return isNew, arts, false, t.RebuildIncident(ctx, from, now)
	}
	for _, st := range []struct {
		q string
		n int
	}{
		{`DELETE FROM incident_nodes WHERE incident_id = ?1 AND ` + incidentOfOrg, 2},
		{`DELETE FROM incident_artifacts WHERE incident_id = ?1 AND ` + incidentOfOrg, 2},
		{`UPDATE incidents SET merged_into = ?3, artifact_count = 0, node_count = 0, updated_at = ?4,
			first_event_at = NULL, last_event_at = NULL WHERE id = ?1 AND +org_id = ?2`, 4},
	} {
		if _, err := t.tx.ExecContext(ctx, st.q, []any{from, t.org, into, nanos(now)}[:st.n]...); err != nil {
			return false, 0, false, err
		}
	}
	return isNew, arts, true, nil
}

func (t *corrTx) RollupsOf(ctx context.Context, node string) ([]correlate.Rollup, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+rollupCols+` FROM rollups r
		WHERE incident_id IN (SELECT incident_id FROM rollup_sources WHERE node_id = ?) AND org_id = ? AND `+openRollup+`
		ORDER BY window_start, incident_id`, node, t.org)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []correlate.Rollup
	for rows.Next() {
		r, err := scanRollup(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

func (t *corrTx) LeaveRollup(ctx context.Context, r correlate.Rollup, node, to string, now time.Time) ([]string, int, error) {
	if err := t.settle(ctx); err != nil {
		return nil, 0, err
	}
	moved, err := queryStrings(ctx, t.tx, `SELECT o.id FROM observation_nodes x JOIN observations o ON o.id = x.observation_id
		WHERE x.node_id = ? AND x.key = 1 AND o.incident_id = ? AND +o.org_id = ? ORDER BY o.created_at, o.id`, node, r.IncidentID, t.org)
	if err != nil {
		return nil, 0, err
	}
	var count int
	err = t.tx.QueryRowContext(ctx, `SELECT count FROM rollup_sources WHERE incident_id = ?1 AND node_id = ?2
		AND EXISTS (SELECT 1 FROM rollups WHERE incident_id = ?1 AND org_id = ?3)`, r.IncidentID, node, t.org).Scan(&count)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, err
	}
	var artifacts int
	for _, id := range moved {
		// Its artifacts are its source's alone in the roll-up (one line
		// has one source): they leave with it.
		res, err := t.tx.ExecContext(ctx, `DELETE FROM incident_artifacts WHERE incident_id = ?1
			AND artifact_id IN (SELECT artifact_id FROM observation_artifacts WHERE observation_id = ?3) AND `+incidentOfOrg,
			r.IncidentID, t.org, id)
		if err != nil {
			return nil, 0, err
		}
		n, _ := res.RowsAffected()
		artifacts += int(n)
		if _, err := t.tx.ExecContext(ctx, `UPDATE observations SET incident_id = ? WHERE id = ? AND +org_id = ?`, to, id, t.org); err != nil {
			return nil, 0, err
		}
		var nodes []string
		keys := map[string]bool{}
		rows, err := t.tx.QueryContext(ctx, `SELECT node_id, key FROM observation_nodes WHERE observation_id = ? ORDER BY pos`, id)
		if err != nil {
			return nil, 0, err
		}
		for rows.Next() {
			var n string
			var k bool
			if err := rows.Scan(&n, &k); err != nil {
				rows.Close()
				return nil, 0, err
			}
			nodes, keys[n] = append(nodes, n), k
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, err
		}
		arts, err := queryStrings(ctx, t.tx, `SELECT artifact_id FROM observation_artifacts WHERE observation_id = ? ORDER BY pos`, id)
		if err != nil {
			return nil, 0, err
		}
		added, err := t.addToIncident(ctx, to, nodes, keys, arts)
		if err != nil {
			return nil, 0, err
		}
		if err := t.refresh(ctx, to, now, true, added); err != nil {
			return nil, 0, err
		}
	}
	// The source's node leaves; the context nodes its observations named
	// (the address they attacked) stay with the sources that remain.
	res, err := t.tx.ExecContext(ctx, `DELETE FROM incident_nodes WHERE incident_id = ?1 AND node_id = ?3 AND `+incidentOfOrg,
		r.IncidentID, t.org, node)
	if err != nil {
		return nil, 0, err
	}
	gone, _ := res.RowsAffected()
	res, err = t.tx.ExecContext(ctx, `DELETE FROM rollup_sources WHERE incident_id = ?1 AND node_id = ?3
		AND EXISTS (SELECT 1 FROM rollups WHERE incident_id = ?1 AND org_id = ?2)`, r.IncidentID, t.org, node)
	if err != nil {
		return nil, 0, err
	}
	left, _ := res.RowsAffected()
	if _, err := t.tx.ExecContext(ctx, `UPDATE rollups SET sources = sources - ?3, count = count - ?4 WHERE incident_id = ?1 AND org_id = ?2`,
		r.IncidentID, t.org, left, count); err != nil {
		return nil, 0, err
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE incidents SET node_count = node_count - ?3, artifact_count = artifact_count - ?4
		WHERE id = ?1 AND +org_id = ?2`, r.IncidentID, t.org, gone, artifacts); err != nil {
		return nil, 0, err
	}
	if err := t.refresh(ctx, r.IncidentID, now, false, addedRefs{}); err != nil {
		return nil, 0, err
	}
	return moved, count, nil
}

func (t *corrTx) SetRaisedBy(ctx context.Context, incident string, why vigil.RaisedBy) error {
	b, err := json.Marshal(why)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, `UPDATE incidents SET raised_by = ? WHERE id = ? AND +org_id = ? AND raised_by IS NULL`, string(b), incident, t.org)
	return err
}

func (t *corrTx) Node(ctx context.Context, id string) (vigil.Node, error) {
	n, err := scanNode(t.tx.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE org_id = ? AND id = ?`, t.org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return vigil.Node{}, vigil.NotFound("node")
	}
	if err != nil {
		return vigil.Node{}, err
	}
	return vigil.Node{ID: n.ID, Type: n.Type, Value: n.Value}, nil
}

// rollupSourcesSQL reads a page of a roll-up's sources, heaviest first:
// the page's offset is skipped in the (incident_id, count DESC, node_id)
// index alone, and only the page's sources are read whole and joined to
// their nodes (skipping after the join read a node for every source
// skipped: seconds for the last page of 100,000). CROSS JOIN keeps the
// page first: without statistics SQLite would walk every source of the
// roll-up and probe the page.
const rollupSourcesSQL = `SELECT n.id, n.type, n.value, s.count, s.first_at, s.last_at
	FROM (SELECT node_id FROM rollup_sources WHERE incident_id = ?1 ORDER BY count DESC, node_id LIMIT ?3 OFFSET ?4) p
	CROSS JOIN rollup_sources s ON s.incident_id = ?1 AND s.node_id = p.node_id
	CROSS JOIN nodes n ON n.id = p.node_id
	WHERE +n.org_id = ?2 ORDER BY s.count DESC, s.node_id`

// RollupSources returns a page of the sources of org's roll-up id,
// heaviest first, and how many it has.
func (s *Store) RollupSources(ctx context.Context, org, id string, p vigil.Page) ([]vigil.RollupSource, int, error) {
	// One snapshot for the count and the page.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, wrap("RollupSources", err)
	}
	defer tx.Rollback()
	var total int
	err = tx.QueryRowContext(ctx, `SELECT sources FROM rollups WHERE incident_id = ? AND org_id = ?`, id, org).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, vigil.NotFound("roll-up")
	}
	if err != nil {
		return nil, 0, wrap("RollupSources", err)
	}
	rows, err := tx.QueryContext(ctx, rollupSourcesSQL, append([]any{id, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("RollupSources", err)
	}
	defer rows.Close()
	out := []vigil.RollupSource{}
	for rows.Next() {
		var src vigil.RollupSource
		var first, last int64
		if err := rows.Scan(&src.Node.ID, &src.Node.Type, &src.Node.Value, &src.Count, &first, &last); err != nil {
			return nil, 0, wrap("RollupSources", err)
		}
		src.FirstSeen, src.LastSeen = fromNanos(first), fromNanos(last)
		out = append(out, src)
	}
	return out, total, wrap("RollupSources", rows.Err())
}
