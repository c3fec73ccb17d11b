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
	f.Title, f.Rollup, f.RaisedBy = inc.Title, inc.Rollup, inc.RaisedBy
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
// computed severity when rule is nil, and records the change in its
// history, in one statement: the incident is locked (old) before it is
// read, so the severity it moved from is the one it really had. Nothing
// changes when the result is what is already recorded.
func (s *Store) ClassifyIncident(ctx context.Context, org, id string, rule *vigil.Rule, now time.Time) error {
	var err error
	const record = `INSERT INTO incident_events (org_id, incident_id, type, actor, via, at, artifact_count, detail)
		SELECT org_id, id, '` + vigil.EventClassified + `', '` + vigil.ActorSystem + `', via, $1, artifact_count,
			jsonb_strip_nulls(jsonb_build_object('rule', rule, 'severity_from', severity_from, 'severity_to', severity))
		FROM upd`
	if rule == nil {
		_, err = s.pool.Exec(ctx, `WITH upd AS (UPDATE incidents i SET severity = i.computed_severity, classified_by_id = NULL,
				classified_by_name = NULL, updated_at = $1
			FROM (SELECT id, severity FROM incidents WHERE org_id = $2 AND id = $3 FOR UPDATE) old
			WHERE i.org_id = $2 AND i.id = $3 AND old.id = i.id AND (i.classified_by_id IS NOT NULL OR i.severity <> i.computed_severity)
			RETURNING i.org_id, i.id, i.artifact_count, i.severity, old.severity AS severity_from, ''::text AS via, NULL::jsonb AS rule)
			`+record, nanos(now), org, id)
	} else {
		_, err = s.pool.Exec(ctx, `WITH upd AS (UPDATE incidents i SET severity = $4, classified_by_id = $5, classified_by_name = $6, updated_at = $1
			FROM (SELECT id, severity FROM incidents WHERE org_id = $2 AND id = $3 FOR UPDATE) old
			WHERE i.org_id = $2 AND i.id = $3 AND old.id = i.id
			AND (i.severity <> $4 OR i.classified_by_id IS DISTINCT FROM $5 OR i.classified_by_name IS DISTINCT FROM $6)
			RETURNING i.org_id, i.id, i.artifact_count, i.severity, old.severity AS severity_from, $6::text AS via,
				jsonb_build_object('id', $5::text, 'name', $6::text) AS rule)
			`+record, nanos(now), org, id, rule.Severity, rule.ID, rule.Name)
	}
	return wrap("ClassifyIncident", err)
}
