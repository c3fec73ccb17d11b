package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/vigil-soc/vigil"
)

// The parts of one incident, a page at a time: its observations, nodes
// and artifacts, for an incident too large to read whole.

// incidentOf returns ENOTFOUND unless org has incident id.
func incidentOf(ctx context.Context, q querier, org, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM incidents WHERE org_id = ? AND id = ?`, org, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return vigil.NotFound("incident")
	}
	return err
}

// IncidentObservations returns a page of an incident's observations,
// whole, oldest first.
func (s *Store) IncidentObservations(ctx context.Context, org, id string, p vigil.Page) ([]*vigil.Observation, int, error) {
	if err := incidentOf(ctx, s.r, org, id); err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM observations WHERE incident_id = ? AND +org_id = ?`, id, org).Scan(&total); err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+observationCols+` FROM observations WHERE incident_id = ? AND +org_id = ?
		ORDER BY created_at, id LIMIT ? OFFSET ?`, append([]any{id, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	out := []*vigil.Observation{}
	for rows.Next() {
		o, err := scanObservation(rows)
		if err != nil {
			rows.Close()
			return nil, 0, wrap("IncidentObservations", err)
		}
		out = append(out, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	return out, total, wrap("IncidentObservations", loadObservationRefs(ctx, s.r, out))
}

// IncidentNodes returns a page of an incident's nodes with their roles.
func (s *Store) IncidentNodes(ctx context.Context, org, id string, p vigil.Page) ([]vigil.Node, int, error) {
	if err := incidentOf(ctx, s.r, org, id); err != nil {
		return nil, 0, wrap("IncidentNodes", err)
	}
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM incident_nodes x JOIN nodes n ON n.id = x.node_id
		WHERE x.incident_id = ? AND +n.org_id = ?`, id, org).Scan(&total); err != nil {
		return nil, 0, wrap("IncidentNodes", err)
	}
	nodes, err := incidentNodes(ctx, s.r, org, id, ` LIMIT ? OFFSET ?`, pageArgs(p)...)
	return nodes, total, wrap("IncidentNodes", err)
}

// incidentNodesPageSQL reads the nodes of incident ?1 of org ?2 in their
// order.
const incidentNodesPageSQL = `SELECT n.id, n.type, n.value, x.key FROM incident_nodes x JOIN nodes n ON n.id = x.node_id
	WHERE x.incident_id = ? AND +n.org_id = ? ORDER BY n.created_at, n.id`

// incidentNodes reads the nodes of an incident in their order, with the
// clause more (and its arguments) after the ORDER BY.
func incidentNodes(ctx context.Context, q querier, org, id, more string, args ...any) ([]vigil.Node, error) {
	rows, err := q.QueryContext(ctx, incidentNodesPageSQL+more, append([]any{id, org}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []vigil.Node{}
	for rows.Next() {
		n := vigil.Node{OrgID: org}
		var key bool
		if err := rows.Scan(&n.ID, &n.Type, &n.Value, &key); err != nil {
			return nil, err
		}
		n.Key = &key
		out = append(out, n)
	}
	return out, rows.Err()
}

// IncidentArtifacts returns a page of previews of an incident's stored
// artifacts, newest first. The page is chosen on the narrow columns
// (time, id) before the wide ones are read: sorting an incident's
// thousands of artifacts with their lines would carry every line through
// the sort.
func (s *Store) IncidentArtifacts(ctx context.Context, org, id string, p vigil.Page) ([]*vigil.Artifact, int, error) {
	if err := incidentOf(ctx, s.r, org, id); err != nil {
		return nil, 0, wrap("IncidentArtifacts", err)
	}
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM incident_artifacts x JOIN artifacts a ON a.id = x.artifact_id
		WHERE x.incident_id = ? AND +a.org_id = ?`, id, org).Scan(&total); err != nil {
		return nil, 0, wrap("IncidentArtifacts", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+previewCols+` FROM artifacts a WHERE a.rowid IN (
			SELECT b.rowid FROM incident_artifacts x JOIN artifacts b ON b.id = x.artifact_id
			WHERE x.incident_id = ? AND +b.org_id = ? ORDER BY b.ts DESC, b.id DESC LIMIT ? OFFSET ?)
		ORDER BY a.ts DESC, a.id DESC`, append([]any{id, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("IncidentArtifacts", err)
	}
	defer rows.Close()
	out := []*vigil.Artifact{}
	for rows.Next() {
		a, err := s.scanPreview(rows)
		if err != nil {
			return nil, 0, wrap("IncidentArtifacts", err)
		}
		out = append(out, a)
	}
	return out, total, wrap("IncidentArtifacts", rows.Err())
}
