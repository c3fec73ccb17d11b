package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// checkRefs returns EINVALID naming node_ids or artifact_ids when one of
// them is not a record of org.
func checkRefs(ctx context.Context, tx pgx.Tx, org string, nodeIDs, artifactIDs []string) error {
	if missing, err := missingIDs(ctx, tx, "nodes", org, nodeIDs); err != nil {
		return err
	} else if len(missing) > 0 {
		return vigil.InvalidField("node_ids", "unknown node "+missing[0])
	}
	if missing, err := missingIDs(ctx, tx, "artifact_ids", org, artifactIDs); err != nil {
		return err
	} else if len(missing) > 0 {
		return vigil.InvalidField("artifact_ids", "unknown artifact "+missing[0])
	}
	return nil
}

// setKeys returns the members of a set, for an array parameter.
func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// sendBatch runs the queued statements in one round trip and returns the
// first error.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// lockIncident locks an incident of org for the rest of the transaction,
// so that its rebuild sees every observation a concurrent correlation
// added to it.
func lockIncident(ctx context.Context, tx pgx.Tx, org, id string) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM incidents WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id)
	return err
}

const observationCols = `id, org_id, type, description, severity, COALESCE(incident_id, ''), created_at, updated_at, title, specificity`

func scanObservation(row pgx.Row) (*vigil.Observation, error) {
	var o vigil.Observation
	var created, updated int64
	if err := row.Scan(&o.ID, &o.OrgID, &o.Type, &o.Description, &o.Severity, &o.IncidentID, &created, &updated, &o.Title, &o.Specificity); err != nil {
		return nil, err
	}
	o.CreatedAt, o.UpdatedAt = fromNanos(created), fromNanos(updated)
	o.NodeIDs, o.ArtifactIDs = []string{}, []string{}
	return &o, nil
}

// GetObservation returns one observation of org.
func (s *Store) GetObservation(ctx context.Context, org, id string) (*vigil.Observation, error) {
	o, err := getObservation(ctx, s.pool, org, id)
	return o, wrap("GetObservation", err)
}

func getObservation(ctx context.Context, q querier, org, id string) (*vigil.Observation, error) {
	o, err := scanObservation(q.QueryRow(ctx, `SELECT `+observationCols+` FROM observations WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, notFound(err, "observation")
	}
	if err := loadObservationRefs(ctx, q, org, []*vigil.Observation{o}); err != nil {
		return nil, err
	}
	return o, nil
}

// lockObservation returns an observation of org with its incident and the
// observation itself locked, in that order: the order in which correlation
// locks them (it locks incidents, then moves their observations), so that
// the two never deadlock. A merge that moved the observation while this
// waited is seen, and the new incident locked instead.
func lockObservation(ctx context.Context, tx pgx.Tx, org, id string) (*vigil.Observation, error) {
	for {
		o, err := getObservation(ctx, tx, org, id)
		if err != nil {
			return nil, err
		}
		if o.IncidentID != "" {
			if err := lockIncident(ctx, tx, org, o.IncidentID); err != nil {
				return nil, err
			}
		}
		var incident string
		err = tx.QueryRow(ctx, `SELECT COALESCE(incident_id, '') FROM observations WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id).Scan(&incident)
		if err != nil {
			return nil, notFound(err, "observation")
		}
		if incident == o.IncidentID {
			// Read again under the lock: a concurrent update may have
			// committed while this waited.
			return getObservation(ctx, tx, org, id)
		}
	}
}

// loadObservationRefs fills NodeIDs, KeyNodeIDs and ArtifactIDs of obs, in
// the order they were given.
func loadObservationRefs(ctx context.Context, q querier, org string, obs []*vigil.Observation) error {
	if len(obs) == 0 {
		return nil
	}
	byID := make(map[string]*vigil.Observation, len(obs))
	ids := make([]string, 0, len(obs))
	for _, o := range obs {
		byID[o.ID] = o
		ids = append(ids, o.ID)
	}
	rows, err := q.Query(ctx, `SELECT x.observation_id, x.node_id, x.key FROM observation_nodes x
		JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $1 AND x.observation_id = ANY($2) ORDER BY x.observation_id, x.pos`, org, ids)
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
	rows, err = q.Query(ctx, `SELECT x.observation_id, x.artifact_id FROM observation_artifacts x
		JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $1 AND x.observation_id = ANY($2) ORDER BY x.observation_id, x.pos`, org, ids)
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
	var c conds
	c.add("org_id = ?", org)
	if f.Type != "" {
		c.add("type = ?", f.Type)
	}
	if f.Severity != "" {
		c.add("severity = ?", f.Severity)
	}
	c.timeRange("created_at", f.Range)
	limit, pageArgs := c.page(f.Page)
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM observations WHERE `+c.where, c.args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+observationCols+` FROM observations WHERE `+c.where+
		` ORDER BY created_at DESC, id DESC`+limit, pageArgs...)
	if err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.Observation, error) { return scanObservation(r) })
	if err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	if out == nil {
		out = []*vigil.Observation{}
	}
	return out, total, wrap("ListObservations", loadObservationRefs(ctx, s.pool, org, out))
}
