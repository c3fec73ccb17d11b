package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/vigil-soc/vigil"
)

// IncidentFacts returns what classification rules see of an incident.
func (s *Store) IncidentFacts(ctx context.Context, org, id string) (*vigil.IncidentFacts, error) {
	f := &vigil.IncidentFacts{}
	err := s.r.QueryRowContext(ctx, `SELECT computed_severity, artifact_count, node_count FROM incidents WHERE org_id = ? AND id = ?`,
		org, id).Scan(&f.Severity, &f.ArtifactCount, &f.NodeCount)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("incident")
	}
	if err != nil {
		return nil, wrap("IncidentFacts", err)
	}
	inc, err := getIncident(ctx, s.r, org, id)
	if err != nil {
		return nil, wrap("IncidentFacts", err)
	}
	f.Observations, f.Nodes = inc.Observations, inc.Nodes
	f.Title, f.Rollup, f.RaisedBy = inc.Title, inc.Rollup, inc.RaisedBy
	q, err := s.r.QueryContext(ctx, incidentArtifactsSQL, id, org, vigil.MaxFactArtifacts)
	if err != nil {
		return nil, wrap("IncidentFacts", err)
	}
	defer q.Close()
	for q.Next() {
		var a vigil.ArtifactFacts
		var ev sql.NullString
		var ts int64
		var raw rawValue
		if err := q.Scan(&a.Source, &raw, &ts, &ev); err != nil {
			return nil, wrap("IncidentFacts", err)
		}
		if a.Raw, err = s.raw.decode(raw.v); err != nil {
			return nil, wrap("IncidentFacts", err)
		}
		a.Timestamp = fromNanos(ts)
		if ev.Valid {
			a.Event = json.RawMessage(ev.String)
		}
		f.Artifacts = append(f.Artifacts, a)
	}
	return f, wrap("IncidentFacts", q.Err())
}

// OpenIncidentIDs returns the ids of org's open incidents.
func (s *Store) OpenIncidentIDs(ctx context.Context, org string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM incidents WHERE org_id = ? AND status IN (1, 2) AND merged_into IS NULL ORDER BY created_at, id`, org)
	if err != nil {
		return nil, wrap("OpenIncidentIDs", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("OpenIncidentIDs", err)
		}
		out = append(out, id)
	}
	return out, wrap("OpenIncidentIDs", rows.Err())
}

// ClassifyIncident sets the incident's severity from rule, or back to its
// computed severity when rule is nil, and records the change in its
// history. Nothing changes when the result is what is already recorded.
func (s *Store) ClassifyIncident(ctx context.Context, org, id string, rule *vigil.Rule, now time.Time) error {
	return wrap("ClassifyIncident", s.tx(ctx, func(tx *wtx) error { return classifyIncident(ctx, tx, org, id, rule, now) }))
}

// ClassifyIncidents does what ClassifyIncident does for each of ids with
// the rule of the same index (nil: none), in one transaction that reads
// them all in one statement: a batch of findings touches tens of
// roll-ups, each classified at every batch, and most are as their rule
// (or none) left them.
func (s *Store) ClassifyIncidents(ctx context.Context, org string, ids []string, rules []*vigil.Rule, now time.Time) error {
	return wrap("ClassifyIncidents", s.tx(ctx, func(tx *wtx) error {
		list, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT i.id, i.severity, i.computed_severity, i.classified_by_id, i.classified_by_name
			FROM json_each(?1) j CROSS JOIN incidents i ON i.id = j.value WHERE +i.org_id = ?2`, string(list), org)
		if err != nil {
			return err
		}
		defer rows.Close()
		state := make(map[string]classified, len(ids))
		for rows.Next() {
			var id string
			var c classified
			if err := rows.Scan(&id, &c.sev, &c.computed, &c.byID, &c.byName); err != nil {
				return err
			}
			state[id] = c
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		for i, id := range ids {
			if c, ok := state[id]; ok {
				if err := c.apply(ctx, tx, org, id, rules[i], now); err != nil {
					return err
				}
			}
		}
		return nil
	}))
}

// classified is how an incident's severity was decided: its severity and
// computed severity, and the rule that decided it, if any.
type classified struct {
	sev, computed string
	byID, byName  sql.NullString
}

func classifyIncident(ctx context.Context, tx *wtx, org, id string, rule *vigil.Rule, now time.Time) error {
	var c classified
	err := tx.QueryRowContext(ctx, `SELECT severity, computed_severity, classified_by_id, classified_by_name FROM incidents
		WHERE org_id = ? AND id = ?`, org, id).Scan(&c.sev, &c.computed, &c.byID, &c.byName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.apply(ctx, tx, org, id, rule, now)
}

// apply records that rule (nil: none) decides incident id, decided as c
// says so far, unless that is what c records already.
func (c classified) apply(ctx context.Context, tx *wtx, org, id string, rule *vigil.Rule, now time.Time) error {
	var err error
	ev := vigil.IncidentEvent{IncidentID: id, Type: vigil.EventClassified, Actor: vigil.ActorSystem, At: now,
		Detail: vigil.EventDetail{SeverityFrom: c.sev}}
	if rule == nil {
		if !c.byID.Valid && c.sev == c.computed {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE incidents SET severity = computed_severity, classified_by_id = NULL, classified_by_name = NULL,
			updated_at = ? WHERE org_id = ? AND id = ?`, nanos(now), org, id)
		ev.Detail.SeverityTo = c.computed
	} else {
		if c.sev == rule.Severity && c.byID.Valid && c.byID.String == rule.ID && c.byName.Valid && c.byName.String == rule.Name {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE incidents SET severity = ?, classified_by_id = ?, classified_by_name = ?, updated_at = ?
			WHERE org_id = ? AND id = ?`, rule.Severity, rule.ID, rule.Name, nanos(now), org, id)
		ev.Via, ev.Detail.Rule, ev.Detail.SeverityTo = rule.Name, &vigil.RuleRef{ID: rule.ID, Name: rule.Name}, rule.Severity
	}
	if err != nil {
		return err
	}
	return insertEvent(ctx, tx, org, ev)
}
