package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// IncidentFacts returns what classification rules see of an incident.
func (s *Store) IncidentFacts(ctx context.Context, org, id string) (*vigil.IncidentFacts, error) {
	f := &vigil.IncidentFacts{}
	err := s.pool.QueryRow(ctx, `SELECT computed_severity, artifact_count, node_count FROM incidents WHERE org_id = $1 AND id = $2`,
		org, id).Scan(&f.Severity, &f.ArtifactCount, &f.NodeCount)
	if err != nil {
		return nil, wrap("IncidentFacts", notFound(err, "incident"))
	}
	inc, err := getIncident(ctx, s.pool, org, id)
	if err != nil {
		return nil, wrap("IncidentFacts", err)
	}
	f.Observations, f.Nodes = inc.Observations, inc.Nodes
	// artifact_ids gives each artifact's ts, so that the join reaches its
	// partition through the (org_id, ts, id) index.
	rows, err := s.pool.Query(ctx, `SELECT a.source, a.raw, a.ts, a.event::text FROM incident_artifacts x
		JOIN artifact_ids k ON k.id = x.artifact_id
		JOIN artifacts a ON a.org_id = k.org_id AND a.ts = k.ts AND a.id = k.id
		WHERE x.incident_id = $1 AND k.org_id = $2 ORDER BY a.ts DESC, a.id DESC LIMIT $3`, id, org, vigil.MaxFactArtifacts)
	if err != nil {
		return nil, wrap("IncidentFacts", err)
	}
	arts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.ArtifactFacts, error) {
		var a vigil.ArtifactFacts
		var ev *string
		var raw []byte
		var ts int64
		err := r.Scan(&a.Source, &raw, &ts, &ev)
		a.Raw, a.Timestamp = string(raw), fromNanos(ts)
		if ev != nil {
			a.Event = json.RawMessage(*ev)
		}
		return a, err
	})
	if err != nil {
		return nil, wrap("IncidentFacts", err)
	}
	if len(arts) > 0 {
		f.Artifacts = arts
	}
	return f, nil
}

// OpenIncidentIDs returns the ids of org's open incidents, oldest first.
func (s *Store) OpenIncidentIDs(ctx context.Context, org string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM incidents WHERE org_id = $1 AND status IN (1, 2) AND merged_into IS NULL
		ORDER BY created_at, id`, org)
	if err != nil {
		return nil, wrap("OpenIncidentIDs", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrap("OpenIncidentIDs", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// ClassifyIncident sets the incident's severity from rule, or back to its
// computed severity when rule is nil. Nothing changes when the result is
// what is already recorded.
func (s *Store) ClassifyIncident(ctx context.Context, org, id string, rule *vigil.Rule, now time.Time) error {
	var err error
	if rule == nil {
		_, err = s.pool.Exec(ctx, `UPDATE incidents SET severity = computed_severity, classified_by_id = NULL, classified_by_name = NULL, updated_at = $1
			WHERE org_id = $2 AND id = $3 AND (classified_by_id IS NOT NULL OR severity <> computed_severity)`, nanos(now), org, id)
	} else {
		_, err = s.pool.Exec(ctx, `UPDATE incidents SET severity = $1, classified_by_id = $2, classified_by_name = $3, updated_at = $4
			WHERE org_id = $5 AND id = $6
			AND (severity <> $1 OR classified_by_id IS DISTINCT FROM $2 OR classified_by_name IS DISTINCT FROM $3)`,
			rule.Severity, rule.ID, rule.Name, nanos(now), org, id)
	}
	return wrap("ClassifyIncident", err)
}
