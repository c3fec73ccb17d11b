package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

const incidentCols = `id, org_id, title, severity, status, classification, classified_by_id, classified_by_name,
	artifact_count, node_count, merged_into, created_at, updated_at, last_activity_at, resolved_at, assignee, tags,
	first_event_at, last_event_at,
	COALESCE(raised_by, ''), COALESCE((SELECT json_object('detector', r.detector, 'name', r.name, 'sources', r.sources,
		'count', r.count, 'window_start', r.window_start, 'window_end', r.window_end)
		FROM rollups r WHERE r.incident_id = incidents.id), '')`

func scanIncident(row interface{ Scan(...any) error }) (*vigil.Incident, error) {
	var i vigil.Incident
	var class, byID, byName, merged, assignee sql.NullString
	var created, updated, active int64
	var resolved, firstEvent, lastEvent sql.NullInt64
	var tags, raisedBy, rollup string
	if err := row.Scan(&i.ID, &i.OrgID, &i.Title, &i.Severity, &i.Status, &class, &byID, &byName,
		&i.ArtifactCount, &i.NodeCount, &merged, &created, &updated, &active, &resolved, &assignee, &tags,
		&firstEvent, &lastEvent, &raisedBy, &rollup); err != nil {
		return nil, err
	}
	if err := vigil.ParseIncidentExtras(&i, rollup, raisedBy); err != nil {
		return nil, err
	}
	i.FirstEventAt, i.LastEventAt = nullTime(firstEvent), nullTime(lastEvent)
	if assignee.Valid {
		i.Assignee = &assignee.String
	}
	if err := json.Unmarshal([]byte(tags), &i.Tags); err != nil {
		return nil, fmt.Errorf("incident %s tags: %w", i.ID, err)
	}
	if len(i.Tags) == 0 {
		i.Tags = nil
	}
	i.StatusName = vigil.StatusName(i.Status)
	if class.Valid {
		i.Classification = &class.String
	}
	if byID.Valid {
		i.ClassifiedBy = &vigil.RuleRef{ID: byID.String, Name: byName.String}
	}
	if merged.Valid {
		i.MergedInto = &merged.String
	}
	i.CreatedAt, i.UpdatedAt, i.LastActivityAt = fromNanos(created), fromNanos(updated), fromNanos(active)
	i.ResolvedAt = nullTime(resolved)
	return &i, nil
}

// nullTime returns the time of a nullable column of Unix nanoseconds, or
// nil.
func nullTime(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// GetIncident returns an incident of org with its nodes, observations and
// status history.
func (s *Store) GetIncident(ctx context.Context, org, id string) (*vigil.Incident, error) {
	i, err := getIncident(ctx, s.r, org, id)
	return i, wrap("GetIncident", err)
}

// An incident's nodes and observations, and (classify.go) its newest
// artifacts. The org's condition is written "+org_id": it still keeps
// each row to the org, but SQLite may not pick an org-wide index for it —
// ordered by time, such an index would have it walk every node,
// observation or artifact of the org (millions, on an internet-facing
// store) to find one incident's few, as it did. Each reads the incident's
// own rows by their incident index and sorts those.
//
// Each list stops at vigil.MaxIncidentRefs. A roll-up lists its heaviest
// sources, each with its count, then the context nodes its newest
// observations name (the addresses they attacked): its million sources are
// read by pages (RollupSources).
const (
	incidentNodesSQL = `SELECT n.id, n.type, n.value, x.key, 0 FROM incident_nodes x JOIN nodes n ON n.id = x.node_id
		WHERE x.incident_id = ?1 AND +n.org_id = ?2 ORDER BY n.created_at, n.id LIMIT ?3`
	rollupNodesSQL = `SELECT * FROM (SELECT n.id, n.type, n.value, 0, s.count FROM rollup_sources s JOIN nodes n ON n.id = s.node_id
			WHERE s.incident_id = ?1 AND +n.org_id = ?2 ORDER BY s.count DESC, s.node_id LIMIT ?3)
		UNION ALL SELECT * FROM (SELECT n.id, n.type, n.value, 0, 0 FROM nodes n
			WHERE n.id IN (SELECT x.node_id FROM observation_nodes x WHERE x.key = 0 AND x.observation_id IN
				(SELECT id FROM observations WHERE incident_id = ?1 AND +org_id = ?2 ORDER BY created_at DESC, id DESC LIMIT 100))
			AND +n.org_id = ?2 AND EXISTS (SELECT 1 FROM incident_nodes i WHERE i.incident_id = ?1 AND i.node_id = n.id)
			ORDER BY n.created_at, n.id LIMIT ?3)`
	incidentObservationsSQL = `SELECT id, type, description, severity FROM observations
		WHERE incident_id = ? AND +org_id = ? ORDER BY created_at, id LIMIT ?`
	incidentArtifactsSQL = `SELECT a.source, a.raw, a.ts, a.event FROM incident_artifacts x JOIN artifacts a ON a.id = x.artifact_id
		WHERE x.incident_id = ? AND +a.org_id = ? ORDER BY a.ts DESC, a.id DESC LIMIT ?`
)

func getIncident(ctx context.Context, q querier, org, id string) (*vigil.Incident, error) {
	i, err := scanIncident(q.QueryRowContext(ctx, `SELECT `+incidentCols+` FROM incidents WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("incident")
	}
	if err != nil {
		return nil, err
	}
	i.Nodes, i.Observations, i.History = []vigil.Node{}, []vigil.ObservationRef{}, []vigil.StatusChange{}
	nodesSQL := incidentNodesSQL
	if i.Rollup != nil {
		nodesSQL = rollupNodesSQL
	}
	rows, err := q.QueryContext(ctx, nodesSQL, id, org, vigil.MaxIncidentRefs)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		n := vigil.Node{OrgID: org}
		var key bool
		if err := rows.Scan(&n.ID, &n.Type, &n.Value, &key, &n.Count); err != nil {
			rows.Close()
			return nil, err
		}
		n.Key = &key
		i.Nodes = append(i.Nodes, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(i.Nodes) > vigil.MaxIncidentRefs {
		i.Nodes = i.Nodes[:vigil.MaxIncidentRefs]
	}
	rows, err = q.QueryContext(ctx, incidentObservationsSQL, id, org, vigil.MaxIncidentRefs)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var o vigil.ObservationRef
		if err := rows.Scan(&o.ID, &o.Type, &o.Description, &o.Severity); err != nil {
			rows.Close()
			return nil, err
		}
		i.Observations = append(i.Observations, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	i.History, err = statusHistory(ctx, q, org, id)
	if err != nil {
		return nil, err
	}
	return i, nil
}

// ListIncidents returns a page of org's incidents, newest first.
func (s *Store) ListIncidents(ctx context.Context, org string, f vigil.IncidentFilter) ([]*vigil.Incident, int, error) {
	where := []string{"org_id = ?"}
	args := []any{org}
	if f.Status != 0 {
		where = append(where, "status = ?")
		args = append(args, f.Status)
	}
	if f.Severity != "" {
		where = append(where, "severity = ?")
		args = append(args, f.Severity)
	}
	if f.Text != "" {
		// SQLite's LIKE is case-insensitive for ASCII letters.
		where = append(where, `title LIKE ? ESCAPE '\'`)
		args = append(args, vigil.LikePattern(f.Text))
	}
	if f.Assignee != "" {
		where = append(where, "assignee = ?")
		args = append(args, f.Assignee)
	}
	if f.Tag != "" {
		where = append(where, "EXISTS (SELECT 1 FROM json_each(incidents.tags) WHERE value = ?)")
		args = append(args, f.Tag)
	}
	if f.Node != "" {
		where = append(where, "id IN (SELECT incident_id FROM incident_nodes WHERE node_id = ?)")
		args = append(args, f.Node)
	}
	if m := vigil.MergedSQL(f.Merged); m != "" {
		where = append(where, m)
	}
	where, args = rangeClause("created_at", f.Range, where, args)
	// The events' span meets the range: it ends at or after its start and
	// begins before its end.
	if !f.EventRange.Start.IsZero() {
		where = append(where, "last_event_at >= ?")
		args = append(args, nanos(f.EventRange.Start))
	}
	if !f.EventRange.End.IsZero() {
		where = append(where, "first_event_at < ?")
		args = append(args, nanos(f.EventRange.End))
	}
	if !f.ResolvedSince.IsZero() {
		where = append(where, "resolved_at >= ?")
		args = append(args, nanos(f.ResolvedSince))
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM incidents WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListIncidents", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+incidentCols+` FROM incidents WHERE `+cond+
		` ORDER BY `+vigil.IncidentOrderSQL(f.Sort)+` LIMIT ? OFFSET ?`, append(args, pageArgs(f.Page)...)...)
	if err != nil {
		return nil, 0, wrap("ListIncidents", err)
	}
	defer rows.Close()
	out := []*vigil.Incident{}
	for rows.Next() {
		i, err := scanIncident(rows)
		if err != nil {
			return nil, 0, wrap("ListIncidents", err)
		}
		out = append(out, i)
	}
	return out, total, wrap("ListIncidents", rows.Err())
}

// SetIncidentStatus moves an incident to status and records the change.
func (s *Store) SetIncidentStatus(ctx context.Context, org, id string, status int, actor string, now time.Time) (*vigil.Incident, error) {
	var out *vigil.Incident
	err := s.tx(ctx, func(tx *wtx) error {
		var cur int
		var resolved sql.NullInt64
		var merged sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT status, resolved_at, merged_into FROM incidents WHERE org_id = ? AND id = ?`,
			org, id).Scan(&cur, &resolved, &merged)
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("incident")
		}
		if err != nil {
			return err
		}
		if merged.Valid {
			return vigil.MergedIncident(merged.String)
		}
		if cur != status {
			// resolved_at is when the incident was last closed; re-opening clears it.
			var res any
			switch {
			case vigil.StatusOpen(status):
				res = nil
			case vigil.StatusOpen(cur) || !resolved.Valid:
				res = nanos(now)
			default:
				res = resolved.Int64
			}
			if _, err := tx.ExecContext(ctx, `UPDATE incidents SET status = ?, classification = ?, resolved_at = ?, updated_at = ?
				WHERE org_id = ? AND id = ?`, status, vigil.StatusClassification(status), res, nanos(now), org, id); err != nil {
				return err
			}
			if err := insertEvent(ctx, tx, org, vigil.IncidentEvent{IncidentID: id, Type: vigil.EventStatusChanged, Actor: actor, At: now,
				Detail: vigil.EventDetail{FromStatus: cur, ToStatus: status, Classification: vigil.StatusClassification(status)}}); err != nil {
				return err
			}
			if err := vigil.Audit(ctx, org, vigil.AuditIncident, id, vigil.StatusFields(cur), vigil.StatusFields(status)); err != nil {
				return err
			}
		}
		out, err = getIncident(ctx, tx, org, id)
		return err
	})
	return out, wrap("SetIncidentStatus", err)
}
