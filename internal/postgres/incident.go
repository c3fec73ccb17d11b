package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

const incidentCols = `id, org_id, title, severity, status, classification, classified_by_id, classified_by_name,
	artifact_count, node_count, merged_into, created_at, updated_at, last_activity_at, resolved_at, assignee, tags,
	first_event_at, last_event_at,
	COALESCE(raised_by, ''), COALESCE((SELECT json_build_object('detector', r.detector, 'name', r.name, 'sources', r.sources,
		'count', r.count, 'window_start', r.window_start, 'window_end', r.window_end)::text
		FROM rollups r WHERE r.incident_id = incidents.id), '')`

func scanIncident(row pgx.Row) (*vigil.Incident, error) {
	var i vigil.Incident
	var class, byID, byName, merged *string
	var created, updated, active int64
	var resolved, firstEvent, lastEvent *int64
	var raisedBy, rollup string
	if err := row.Scan(&i.ID, &i.OrgID, &i.Title, &i.Severity, &i.Status, &class, &byID, &byName,
		&i.ArtifactCount, &i.NodeCount, &merged, &created, &updated, &active, &resolved, &i.Assignee, &i.Tags,
		&firstEvent, &lastEvent, &raisedBy, &rollup); err != nil {
		return nil, err
	}
	if err := vigil.ParseIncidentExtras(&i, rollup, raisedBy); err != nil {
		return nil, err
	}
	i.FirstEventAt, i.LastEventAt = nullTime(firstEvent), nullTime(lastEvent)
	if len(i.Tags) == 0 {
		i.Tags = nil
	}
	i.StatusName = vigil.StatusName(i.Status)
	i.Classification = class
	if byID != nil {
		name := ""
		if byName != nil {
			name = *byName
		}
		i.ClassifiedBy = &vigil.RuleRef{ID: *byID, Name: name}
	}
	i.MergedInto = merged
	i.CreatedAt, i.UpdatedAt, i.LastActivityAt = fromNanos(created), fromNanos(updated), fromNanos(active)
	i.ResolvedAt = nullTime(resolved)
	return &i, nil
}

// nullTime returns the time of a nullable column of Unix nanoseconds, or
// nil.
func nullTime(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := fromNanos(*n)
	return &t
}

// GetIncident returns an incident of org with its nodes, observations and
// status history.
func (s *Store) GetIncident(ctx context.Context, org, id string) (*vigil.Incident, error) {
	i, err := getIncident(ctx, s.pool, org, id)
	return i, wrap("GetIncident", err)
}

// An incident's nodes, at most vigil.MaxIncidentRefs. A roll-up lists its
// heaviest sources, each with its count, then the context nodes its newest
// observations name (the addresses they attacked): its million sources
// are read by pages (RollupSources).
const (
	incidentNodesSQL = `SELECT n.id, n.type, n.value, x.key, 0::bigint FROM incident_nodes x JOIN nodes n ON n.id = x.node_id
		WHERE x.incident_id = $1 AND n.org_id = $2 ORDER BY n.created_at, n.id LIMIT $3`
	rollupNodesSQL = `(SELECT n.id, n.type, n.value, false, s.count FROM rollup_sources s JOIN nodes n ON n.id = s.node_id
			WHERE s.incident_id = $1 AND n.org_id = $2 ORDER BY s.count DESC, s.node_id LIMIT $3)
		UNION ALL (SELECT n.id, n.type, n.value, false, 0::bigint FROM nodes n
			WHERE n.id IN (SELECT x.node_id FROM observation_nodes x WHERE NOT x.key AND x.observation_id IN
				(SELECT id FROM observations WHERE incident_id = $1 AND org_id = $2 ORDER BY created_at DESC, id DESC LIMIT 100))
			AND n.org_id = $2 AND EXISTS (SELECT 1 FROM incident_nodes i WHERE i.incident_id = $1 AND i.node_id = n.id)
			ORDER BY n.created_at, n.id LIMIT $3)`
)

func getIncident(ctx context.Context, q querier, org, id string) (*vigil.Incident, error) {
	i, err := scanIncident(q.QueryRow(ctx, `SELECT `+incidentCols+` FROM incidents WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, notFound(err, "incident")
	}
	nodesSQL := incidentNodesSQL
	if i.Rollup != nil {
		nodesSQL = rollupNodesSQL
	}
	rows, err := q.Query(ctx, nodesSQL, id, org, vigil.MaxIncidentRefs)
	if err != nil {
		return nil, err
	}
	i.Nodes, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.Node, error) {
		n := vigil.Node{OrgID: org}
		var key bool
		var count int64
		err := r.Scan(&n.ID, &n.Type, &n.Value, &key, &count)
		n.Key, n.Count = &key, int(count)
		return n, err
	})
	if err != nil {
		return nil, err
	}
	if len(i.Nodes) > vigil.MaxIncidentRefs {
		i.Nodes = i.Nodes[:vigil.MaxIncidentRefs]
	}
	rows, err = q.Query(ctx, `SELECT id, type, description, severity FROM observations
		WHERE org_id = $1 AND incident_id = $2 ORDER BY created_at, id LIMIT $3`, org, id, vigil.MaxIncidentRefs)
	if err != nil {
		return nil, err
	}
	i.Observations, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.ObservationRef, error) {
		var o vigil.ObservationRef
		return o, r.Scan(&o.ID, &o.Type, &o.Description, &o.Severity)
	})
	if err != nil {
		return nil, err
	}
	i.History, err = statusHistory(ctx, q, org, id)
	if err != nil {
		return nil, err
	}
	if i.Observations == nil {
		i.Observations = []vigil.ObservationRef{}
	}
	if i.History == nil {
		i.History = []vigil.StatusChange{}
	}
	return i, nil
}

// ListIncidents returns a page of org's incidents, newest first.
func (s *Store) ListIncidents(ctx context.Context, org string, f vigil.IncidentFilter) ([]*vigil.Incident, int, error) {
	var c conds
	c.add("org_id = ?", org)
	if f.Status != 0 {
		c.add("status = ?", f.Status)
	}
	if f.Severity != "" {
		c.add("severity = ?", f.Severity)
	}
	if f.Text != "" {
		c.add(`title ILIKE ? ESCAPE '\'`, vigil.LikePattern(f.Text))
	}
	if f.Assignee != "" {
		c.add("assignee = ?", f.Assignee)
	}
	if f.Tag != "" {
		c.add("tags @> ARRAY[?::text]", f.Tag)
	}
	if f.Node != "" {
		c.add("id IN (SELECT incident_id FROM incident_nodes WHERE node_id = ?)", f.Node)
	}
	if m := vigil.MergedSQL(f.Merged); m != "" {
		c.addExpr(m)
	}
	c.timeRange("created_at", f.Range)
	// The events' span meets the range: it ends at or after its start and
	// begins before its end.
	if !f.EventRange.Start.IsZero() {
		c.add("last_event_at >= ?", nanos(f.EventRange.Start))
	}
	if !f.EventRange.End.IsZero() {
		c.add("first_event_at < ?", nanos(f.EventRange.End))
	}
	if !f.ResolvedSince.IsZero() {
		c.add("resolved_at >= ?", nanos(f.ResolvedSince))
	}
	limit, pageArgs := c.page(f.Page)
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM incidents WHERE `+c.where, c.args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListIncidents", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+incidentCols+` FROM incidents WHERE `+c.where+
		` ORDER BY `+vigil.IncidentOrderSQL(f.Sort)+limit, pageArgs...)
	if err != nil {
		return nil, 0, wrap("ListIncidents", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.Incident, error) { return scanIncident(r) })
	if err != nil {
		return nil, 0, wrap("ListIncidents", err)
	}
	if out == nil {
		out = []*vigil.Incident{}
	}
	return out, total, nil
}

// SetIncidentStatus moves an incident to status and records the change.
// The incident is locked first, so that concurrent changes are recorded
// one after the other, each with the status it really moved from.
func (s *Store) SetIncidentStatus(ctx context.Context, org, id string, status int, actor string, now time.Time) (*vigil.Incident, error) {
	var out *vigil.Incident
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var cur int
		var resolved *int64
		var merged *string
		err := tx.QueryRow(ctx, `SELECT status, resolved_at, merged_into FROM incidents WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			org, id).Scan(&cur, &resolved, &merged)
		if err != nil {
			return notFound(err, "incident")
		}
		if merged != nil {
			return vigil.MergedIncident(*merged)
		}
		if cur != status {
			// resolved_at is when the incident was last closed; re-opening clears it.
			var res *int64
			switch {
			case vigil.StatusOpen(status):
				res = nil
			case vigil.StatusOpen(cur) || resolved == nil:
				n := nanos(now)
				res = &n
			default:
				res = resolved
			}
			b := &pgx.Batch{}
			b.Queue(`UPDATE incidents SET status = $1, classification = $2, resolved_at = $3, updated_at = $4
				WHERE org_id = $5 AND id = $6`, status, vigil.StatusClassification(status), res, nanos(now), org, id)
			args, err := eventArgs(org, vigil.IncidentEvent{IncidentID: id, Type: vigil.EventStatusChanged, Actor: actor, At: now,
				Detail: vigil.EventDetail{FromStatus: cur, ToStatus: status, Classification: vigil.StatusClassification(status)}})
			if err != nil {
				return err
			}
			b.Queue(insertEventSQL, args...)
			if err := sendBatch(ctx, tx, b); err != nil {
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
