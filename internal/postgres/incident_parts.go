package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// The parts of one incident, a page at a time: its observations, nodes
// and artifacts, for an incident too large to read whole.

// incidentOf returns ENOTFOUND unless org has incident id.
func incidentOf(ctx context.Context, q querier, org, id string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM incidents WHERE org_id = $1 AND id = $2`, org, id).Scan(&one)
	return notFound(err, "incident")
}

// IncidentObservations returns a page of an incident's observations,
// whole, oldest first.
func (s *Store) IncidentObservations(ctx context.Context, org, id string, p vigil.Page) ([]*vigil.Observation, int, error) {
	if err := incidentOf(ctx, s.pool, org, id); err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM observations WHERE org_id = $1 AND incident_id = $2`, org, id).Scan(&total); err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+observationCols+` FROM observations WHERE org_id = $1 AND incident_id = $2
		ORDER BY created_at, id LIMIT $3 OFFSET $4`, append([]any{org, id}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.Observation, error) { return scanObservation(r) })
	if err != nil {
		return nil, 0, wrap("IncidentObservations", err)
	}
	if out == nil {
		out = []*vigil.Observation{}
	}
	return out, total, wrap("IncidentObservations", loadObservationRefs(ctx, s.pool, org, out))
}

// IncidentNodes returns a page of an incident's nodes with their roles.
func (s *Store) IncidentNodes(ctx context.Context, org, id string, p vigil.Page) ([]vigil.Node, int, error) {
	if err := incidentOf(ctx, s.pool, org, id); err != nil {
		return nil, 0, wrap("IncidentNodes", err)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM incident_nodes x JOIN nodes n ON n.id = x.node_id
		WHERE x.incident_id = $1 AND n.org_id = $2`, id, org).Scan(&total); err != nil {
		return nil, 0, wrap("IncidentNodes", err)
	}
	nodes, err := incidentNodes(ctx, s.pool, org, id, ` LIMIT $3 OFFSET $4`, pageArgs(p)...)
	return nodes, total, wrap("IncidentNodes", err)
}

// incidentNodesPageSQL reads the nodes of incident $1 of org $2 in
// their order.
const incidentNodesPageSQL = `SELECT n.id, n.type, n.value, x.key FROM incident_nodes x JOIN nodes n ON n.id = x.node_id
	WHERE x.incident_id = $1 AND n.org_id = $2 ORDER BY n.created_at, n.id`

// incidentNodes reads the nodes of an incident in their order, with the
// clause more (and its arguments, from $3) after the ORDER BY.
func incidentNodes(ctx context.Context, q querier, org, id, more string, args ...any) ([]vigil.Node, error) {
	rows, err := q.Query(ctx, incidentNodesPageSQL+more, append([]any{id, org}, args...)...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.Node, error) {
		n := vigil.Node{OrgID: org}
		var key bool
		err := r.Scan(&n.ID, &n.Type, &n.Value, &key)
		n.Key = &key
		return n, err
	})
	if out == nil {
		out = []vigil.Node{}
	}
	return out, err
}

// IncidentArtifacts returns a page of previews of an incident's stored
// artifacts, newest first. The page is chosen on artifact_ids (id, time)
// before the artifacts are read, each through its partition's (org_id,
// ts, id) index.
func (s *Store) IncidentArtifacts(ctx context.Context, org, id string, p vigil.Page) ([]*vigil.Artifact, int, error) {
	if err := incidentOf(ctx, s.pool, org, id); err != nil {
		return nil, 0, wrap("IncidentArtifacts", err)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM incident_artifacts x JOIN artifact_ids k ON k.id = x.artifact_id
		WHERE x.incident_id = $1 AND k.org_id = $2`, id, org).Scan(&total); err != nil {
		return nil, 0, wrap("IncidentArtifacts", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+previewCols+` FROM artifacts WHERE (org_id, ts, id) IN (
			SELECT k.org_id, k.ts, k.id FROM incident_artifacts x JOIN artifact_ids k ON k.id = x.artifact_id
			WHERE x.incident_id = $1 AND k.org_id = $2 ORDER BY k.ts DESC, k.id DESC LIMIT $3 OFFSET $4)
		ORDER BY ts DESC, id DESC`, append([]any{id, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("IncidentArtifacts", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.Artifact, error) { return scanPreview(r) })
	if err != nil {
		return nil, 0, wrap("IncidentArtifacts", err)
	}
	if out == nil {
		out = []*vigil.Artifact{}
	}
	return out, total, nil
}
