package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// RecordObservation stores o and correlates it into an incident.
func (s *Store) RecordObservation(ctx context.Context, org string, o *vigil.Observation, title string, p vigil.CorrelationPolicy) error {
	o.OrgID = org
	o.NodeIDs = vigil.Dedupe(o.NodeIDs)
	o.ArtifactIDs = vigil.Dedupe(o.ArtifactIDs)
	keys := make(map[string]bool, len(o.KeyNodeIDs))
	for _, id := range o.KeyNodeIDs {
		keys[id] = true
	}
	return wrap("RecordObservation", s.tx(ctx, func(tx *wtx) error {
		if err := checkRefs(ctx, tx, org, o.NodeIDs, o.ArtifactIDs); err != nil {
			return err
		}
		if len(o.Nodes) > 0 {
			nodes, err := upsertNodes(ctx, tx, org, o.Nodes, o.CreatedAt)
			if err != nil {
				return err
			}
			o.NodeIDs = vigil.AddNodes(slices.Clone(o.NodeIDs), keys, nodes, o.Nodes)
		}
		return recordObservation(ctx, tx, org, o, keys, title, p)
	}))
}

// recordObservation inserts o with its node roles and correlates it.
func recordObservation(ctx context.Context, tx *wtx, org string, o *vigil.Observation, keys map[string]bool, title string, p vigil.CorrelationPolicy) error {
	o.OrgID = org
	if _, err := tx.ExecContext(ctx, `INSERT INTO observations (id, org_id, type, description, severity, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, o.ID, org, o.Type, o.Description, o.Severity, nanos(o.CreatedAt), nanos(o.UpdatedAt)); err != nil {
		return err
	}
	if err := hubsToContext(ctx, tx, org, keys, p.HubLimit); err != nil {
		return err
	}
	if err := insertObservationRefs(ctx, tx, o.ID, o.NodeIDs, keys, o.ArtifactIDs); err != nil {
		return err
	}
	incID, err := correlate(ctx, tx, org, o, keys, title, p)
	if err != nil {
		return err
	}
	o.IncidentID = incID
	o.KeyNodeIDs = o.KeyNodeIDs[:0]
	for _, id := range o.NodeIDs {
		if keys[id] {
			o.KeyNodeIDs = append(o.KeyNodeIDs, id)
		}
	}
	return nil
}

// checkRefs returns EINVALID naming node_ids or artifact_ids when one of
// them is not a record of org.
func checkRefs(ctx context.Context, tx *wtx, org string, nodeIDs, artifactIDs []string) error {
	if missing, err := missingIDs(ctx, tx, "nodes", org, nodeIDs); err != nil {
		return err
	} else if len(missing) > 0 {
		return vigil.InvalidField("node_ids", "unknown node "+missing[0])
	}
	if missing, err := missingIDs(ctx, tx, "artifacts", org, artifactIDs); err != nil {
		return err
	} else if len(missing) > 0 {
		return vigil.InvalidField("artifact_ids", "unknown artifact "+missing[0])
	}
	return nil
}

// hubsToContext drops from keys the nodes already key nodes of hubLimit or
// more open incidents: such a hub (a NAT gateway, a public resolver) would
// otherwise collapse unrelated incidents into one.
func hubsToContext(ctx context.Context, tx *wtx, org string, keys map[string]bool, hubLimit int) error {
	if len(keys) == 0 || hubLimit <= 0 {
		return nil
	}
	args := []any{org}
	for id := range keys {
		args = append(args, id)
	}
	args = append(args, hubLimit)
	rows, err := tx.QueryContext(ctx, `SELECT n.node_id FROM incident_nodes n JOIN incidents i ON i.id = n.incident_id
		WHERE i.org_id = ? AND n.key = 1 AND i.status IN (1, 2) AND i.merged_into IS NULL
		AND n.node_id IN (`+placeholders(len(keys))+`)
		GROUP BY n.node_id HAVING COUNT(*) >= ?`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		delete(keys, id)
	}
	return rows.Err()
}

func insertObservationRefs(ctx context.Context, tx *wtx, obsID string, nodeIDs []string, keys map[string]bool, artifactIDs []string) error {
	for i, id := range nodeIDs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO observation_nodes (observation_id, node_id, pos, key) VALUES (?, ?, ?, ?)`,
			obsID, id, i, keys[id]); err != nil {
			return err
		}
	}
	for i, id := range artifactIDs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO observation_artifacts (observation_id, artifact_id, pos) VALUES (?, ?, ?)`,
			obsID, id, i); err != nil {
			return err
		}
	}
	return nil
}

// correlate attaches observation o to an incident (DESIGN §8) and returns
// its id. The single writer connection serializes correlation, so two
// observations sharing a node can never open two incidents.
func correlate(ctx context.Context, tx *wtx, org string, o *vigil.Observation, keys map[string]bool, title string, p vigil.CorrelationPolicy) (string, error) {
	now := o.CreatedAt
	var candidates []string // oldest first
	if len(keys) > 0 {
		args := []any{org}
		for id := range keys {
			args = append(args, id)
		}
		args = append(args, nanos(now.Add(-p.Window)))
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT i.id, i.created_at FROM incident_nodes n JOIN incidents i ON i.id = n.incident_id
			WHERE i.org_id = ? AND n.key = 1 AND n.node_id IN (`+placeholders(len(keys))+`)
			AND i.status IN (1, 2) AND i.merged_into IS NULL AND i.last_activity_at >= ?
			ORDER BY i.created_at, i.id`, args...)
		if err != nil {
			return "", err
		}
		for rows.Next() {
			var id string
			var created int64
			if err := rows.Scan(&id, &created); err != nil {
				rows.Close()
				return "", err
			}
			candidates = append(candidates, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
	}
	var target string
	if len(candidates) == 0 {
		target = vigil.NewID()
		if _, err := tx.ExecContext(ctx, `INSERT INTO incidents (id, org_id, title, severity, computed_severity, status,
			created_at, updated_at, last_activity_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)`,
			target, org, title, o.Severity, o.Severity, nanos(now), nanos(now), nanos(now)); err != nil {
			return "", err
		}
	} else {
		// The observation bridges every candidate: merge them into the oldest.
		target = candidates[0]
		for _, other := range candidates[1:] {
			if err := mergeIncident(ctx, tx, org, other, target, now); err != nil {
				return "", err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE observations SET incident_id = ? WHERE id = ?`, target, o.ID); err != nil {
		return "", err
	}
	for _, id := range o.NodeIDs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO incident_nodes (incident_id, node_id, key) VALUES (?, ?, ?)
			ON CONFLICT DO UPDATE SET key = MAX(key, excluded.key)`, target, id, keys[id]); err != nil {
			return "", err
		}
	}
	for _, id := range o.ArtifactIDs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO incident_artifacts (incident_id, artifact_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			target, id); err != nil {
			return "", err
		}
	}
	return target, refreshCounts(ctx, tx, target, now, true)
}

// mergeIncident moves everything of incident from into incident into and
// leaves from as a pointer (merged_into).
func mergeIncident(ctx context.Context, tx *wtx, org, from, into string, now time.Time) error {
	stmts := []string{
		`UPDATE observations SET incident_id = ?2 WHERE incident_id = ?1`,
		`INSERT INTO incident_nodes (incident_id, node_id, key) SELECT ?2, node_id, key FROM incident_nodes WHERE incident_id = ?1
			ON CONFLICT DO UPDATE SET key = MAX(key, excluded.key)`,
		`INSERT INTO incident_artifacts (incident_id, artifact_id) SELECT ?2, artifact_id FROM incident_artifacts WHERE incident_id = ?1
			ON CONFLICT DO NOTHING`,
		`DELETE FROM incident_nodes WHERE incident_id = ?1`,
		`DELETE FROM incident_artifacts WHERE incident_id = ?1`,
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q, from, into); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE incidents SET merged_into = ?, artifact_count = 0, node_count = 0, updated_at = ?
		WHERE id = ? AND org_id = ?`, into, nanos(now), from, org); err != nil {
		return err
	}
	return refreshCounts(ctx, tx, into, now, false)
}

// severityRankSQL ranks a severity column for MAX().
const severityRankSQL = `CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END`

// refreshCounts recomputes an incident's counts and computed severity. With
// activity it also marks the incident active at now, unless it was already
// active later: an observation recorded late must not move the last
// activity back and close the correlation window early.
func refreshCounts(ctx context.Context, tx *wtx, id string, now time.Time, activity bool) error {
	return refreshIncident(ctx, tx, id, now, activity, -1)
}

// refreshIncident is refreshCounts for an incident that just gained added
// artifacts (all new to it): their count is added instead of recounting
// every artifact of a large incident on each growth. added < 0 recounts.
func refreshIncident(ctx context.Context, tx *wtx, id string, now time.Time, activity bool, added int) error {
	var rank sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(`+severityRankSQL+`) FROM observations WHERE incident_id = ?`, id).Scan(&rank); err != nil {
		return err
	}
	sev := rankSeverity(int(rank.Int64))
	q := `UPDATE incidents SET
		node_count = (SELECT COUNT(*) FROM incident_nodes WHERE incident_id = ?1),
		artifact_count = CASE WHEN ?4 < 0 THEN (SELECT COUNT(*) FROM incident_artifacts WHERE incident_id = ?1) ELSE artifact_count + ?4 END,
		computed_severity = ?2,
		severity = CASE WHEN classified_by_id IS NULL THEN ?2 ELSE severity END,
		updated_at = ?3`
	if activity {
		q += `, last_activity_at = MAX(last_activity_at, ?3)`
	}
	_, err := tx.ExecContext(ctx, q+` WHERE id = ?1`, id, sev, nanos(now), added)
	return err
}

func rankSeverity(r int) string {
	switch r {
	case 4:
		return vigil.SeverityCritical
	case 3:
		return vigil.SeverityHigh
	case 2:
		return vigil.SeverityMedium
	case 1:
		return vigil.SeverityLow
	}
	return vigil.SeverityLow
}

// rebuildIncident recomputes an incident's node and artifact sets from its
// observations, after one of them changed or left.
func rebuildIncident(ctx context.Context, tx *wtx, id string, now time.Time) error {
	stmts := []string{
		`DELETE FROM incident_nodes WHERE incident_id = ?1`,
		`INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT ?1, node_id, MAX(key) FROM observation_nodes
			WHERE observation_id IN (SELECT id FROM observations WHERE incident_id = ?1) GROUP BY node_id`,
		`DELETE FROM incident_artifacts WHERE incident_id = ?1`,
		`INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT DISTINCT ?1, artifact_id FROM observation_artifacts
			WHERE observation_id IN (SELECT id FROM observations WHERE incident_id = ?1)`,
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return err
		}
	}
	return refreshCounts(ctx, tx, id, now, false)
}

const observationCols = `id, org_id, type, description, severity, COALESCE(incident_id, ''), created_at, updated_at`

func scanObservation(row interface{ Scan(...any) error }) (*vigil.Observation, error) {
	var o vigil.Observation
	var created, updated int64
	if err := row.Scan(&o.ID, &o.OrgID, &o.Type, &o.Description, &o.Severity, &o.IncidentID, &created, &updated); err != nil {
		return nil, err
	}
	o.CreatedAt, o.UpdatedAt = fromNanos(created), fromNanos(updated)
	o.NodeIDs, o.ArtifactIDs = []string{}, []string{}
	return &o, nil
}

// GetObservation returns one observation of org.
func (s *Store) GetObservation(ctx context.Context, org, id string) (*vigil.Observation, error) {
	o, err := getObservation(ctx, s.r, org, id)
	return o, wrap("GetObservation", err)
}

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

func getObservation(ctx context.Context, q querier, org, id string) (*vigil.Observation, error) {
	o, err := scanObservation(q.QueryRowContext(ctx, `SELECT `+observationCols+` FROM observations WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("observation")
	}
	if err != nil {
		return nil, err
	}
	if err := loadObservationRefs(ctx, q, []*vigil.Observation{o}); err != nil {
		return nil, err
	}
	return o, nil
}

// loadObservationRefs fills NodeIDs and ArtifactIDs of obs, in the order
// they were given.
func loadObservationRefs(ctx context.Context, q querier, obs []*vigil.Observation) error {
	if len(obs) == 0 {
		return nil
	}
	byID := make(map[string]*vigil.Observation, len(obs))
	args := make([]any, 0, len(obs))
	for _, o := range obs {
		byID[o.ID] = o
		args = append(args, o.ID)
	}
	in := placeholders(len(obs))
	rows, err := q.QueryContext(ctx, `SELECT observation_id, node_id, key FROM observation_nodes WHERE observation_id IN (`+in+`) ORDER BY observation_id, pos`, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var oid, nid string
		var key bool
		if err := rows.Scan(&oid, &nid, &key); err != nil {
			rows.Close()
			return err
		}
		o := byID[oid]
		o.NodeIDs = append(o.NodeIDs, nid)
		if key {
			o.KeyNodeIDs = append(o.KeyNodeIDs, nid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = q.QueryContext(ctx, `SELECT observation_id, artifact_id FROM observation_artifacts WHERE observation_id IN (`+in+`) ORDER BY observation_id, pos`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var oid, aid string
		if err := rows.Scan(&oid, &aid); err != nil {
			return err
		}
		byID[oid].ArtifactIDs = append(byID[oid].ArtifactIDs, aid)
	}
	return rows.Err()
}

// ListObservations returns a page of org's observations, newest first.
func (s *Store) ListObservations(ctx context.Context, org string, f vigil.ObservationFilter) ([]*vigil.Observation, int, error) {
	where := []string{"org_id = ?"}
	args := []any{org}
	if f.Type != "" {
		where = append(where, "type = ?")
		args = append(args, f.Type)
	}
	if f.Severity != "" {
		where = append(where, "severity = ?")
		args = append(args, f.Severity)
	}
	where, args = rangeClause("created_at", f.Range, where, args)
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM observations WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+observationCols+` FROM observations WHERE `+cond+
		` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, append(args, pageArgs(f.Page)...)...)
	if err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	out := []*vigil.Observation{}
	for rows.Next() {
		o, err := scanObservation(rows)
		if err != nil {
			rows.Close()
			return nil, 0, wrap("ListObservations", err)
		}
		out = append(out, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	return out, total, wrap("ListObservations", loadObservationRefs(ctx, s.r, out))
}

// UpdateObservation applies a partial update and refreshes its incident.
func (s *Store) UpdateObservation(ctx context.Context, org, id string, u vigil.ObservationUpdate, now time.Time) (*vigil.Observation, error) {
	var out *vigil.Observation
	err := s.tx(ctx, func(tx *wtx) error {
		o, err := getObservation(ctx, tx, org, id)
		if err != nil {
			return err
		}
		nodeIDs, artifactIDs := u.Apply(o)
		if err := checkRefs(ctx, tx, org, nodeIDs, artifactIDs); err != nil {
			return err
		}
		keys := u.KeySet(o, nodeIDs)
		if len(u.Nodes) > 0 {
			nodes, err := upsertNodes(ctx, tx, org, u.Nodes, now)
			if err != nil {
				return err
			}
			nodeIDs = vigil.AddNodes(slices.Clone(nodeIDs), keys, nodes, u.Nodes)
		}
		o.UpdatedAt = now
		if _, err := tx.ExecContext(ctx, `UPDATE observations SET type = ?, description = ?, severity = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
			o.Type, o.Description, o.Severity, nanos(now), org, id); err != nil {
			return err
		}
		if u.ChangesRefs() {
			for _, q := range []string{`DELETE FROM observation_nodes WHERE observation_id = ?`, `DELETE FROM observation_artifacts WHERE observation_id = ?`} {
				if _, err := tx.ExecContext(ctx, q, id); err != nil {
					return err
				}
			}
			if err := insertObservationRefs(ctx, tx, id, nodeIDs, keys, artifactIDs); err != nil {
				return err
			}
			o.NodeIDs, o.ArtifactIDs = nodeIDs, artifactIDs
			o.KeyNodeIDs = nil
			for _, n := range nodeIDs {
				if keys[n] {
					o.KeyNodeIDs = append(o.KeyNodeIDs, n)
				}
			}
		}
		if o.IncidentID != "" {
			if err := rebuildIncident(ctx, tx, o.IncidentID, now); err != nil {
				return err
			}
		}
		out = o
		return nil
	})
	return out, wrap("UpdateObservation", err)
}

// DeleteObservation removes an observation and refreshes its incident.
func (s *Store) DeleteObservation(ctx context.Context, org, id string) error {
	return wrap("DeleteObservation", s.tx(ctx, func(tx *wtx) error {
		var incident sql.NullString
		err := tx.QueryRowContext(ctx, `DELETE FROM observations WHERE org_id = ? AND id = ? RETURNING incident_id`, org, id).Scan(&incident)
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("observation")
		}
		if err != nil {
			return err
		}
		if incident.Valid {
			return rebuildIncident(ctx, tx, incident.String, vigil.Now())
		}
		return nil
	}))
}
