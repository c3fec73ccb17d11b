package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/vigil-soc/vigil"
)

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

const observationCols = `id, org_id, type, description, severity, COALESCE(incident_id, ''), created_at, updated_at, title, specificity`

func scanObservation(row interface{ Scan(...any) error }) (*vigil.Observation, error) {
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
