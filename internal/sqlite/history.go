package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-soc/vigil"
)

// insertEvent records ev in the history of incident ev.IncidentID of org,
// with the incident's artifact count as this transaction sees it; nothing
// when org has no such incident.
func insertEvent(ctx context.Context, tx *wtx, org string, ev vigil.IncidentEvent) error {
	detail, err := json.Marshal(ev.Detail)
	if err != nil {
		return fmt.Errorf("incident event detail: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO incident_events (org_id, incident_id, type, actor, via, at, artifact_count, detail)
		SELECT org_id, id, ?3, ?4, ?5, ?6, artifact_count, ?7 FROM incidents WHERE id = ?1 AND +org_id = ?2`,
		ev.IncidentID, org, ev.Type, ev.Actor, ev.Via, nanos(ev.At), string(detail))
	return err
}

// insertEvents records evs in order as insertEvent does each, in one
// statement (their fields as a JSON array): a batch's growths record an
// event each, some hundred a batch of Sigma matches on Windows events.
func insertEvents(ctx context.Context, tx *wtx, org string, evs []vigil.IncidentEvent) error {
	switch len(evs) {
	case 0:
		return nil
	case 1:
		return insertEvent(ctx, tx, org, evs[0])
	}
	rows := make([][6]any, len(evs))
	for i, ev := range evs {
		detail, err := json.Marshal(ev.Detail)
		if err != nil {
			return fmt.Errorf("incident event detail: %w", err)
		}
		rows[i] = [6]any{ev.IncidentID, ev.Type, ev.Actor, ev.Via, nanos(ev.At), string(detail)}
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("incident events: %w", err)
	}
	_, err = tx.ExecContext(ctx, insertEventsSQL, string(list), org)
	return err
}

// insertEventsSQL inserts the events ?1 ([incident, type, actor, via, at,
// detail]) of org ?2 in their order, each with its incident's artifact
// count; none of an incident the org does not have.
const insertEventsSQL = `INSERT INTO incident_events (org_id, incident_id, type, actor, via, at, artifact_count, detail)
	SELECT i.org_id, i.id, j.value ->> '$[1]', j.value ->> '$[2]', j.value ->> '$[3]', j.value ->> '$[4]', i.artifact_count, j.value ->> '$[5]'
	FROM json_each(?1) j CROSS JOIN incidents i ON i.id = j.value ->> '$[0]' AND +i.org_id = ?2 ORDER BY j.key`

const eventCols = `id, incident_id, type, actor, via, at, artifact_count, detail`

func scanEvent(row interface{ Scan(...any) error }) (*vigil.IncidentEvent, error) {
	var ev vigil.IncidentEvent
	var at int64
	var detail string
	if err := row.Scan(&ev.ID, &ev.IncidentID, &ev.Type, &ev.Actor, &ev.Via, &at, &ev.ArtifactCount, &detail); err != nil {
		return nil, err
	}
	ev.At = fromNanos(at)
	if err := json.Unmarshal([]byte(detail), &ev.Detail); err != nil {
		return nil, fmt.Errorf("incident event %d detail: %w", ev.ID, err)
	}
	return &ev, nil
}

// IncidentHistory returns a page of the events of incident id of org,
// oldest first, and their total.
func (s *Store) IncidentHistory(ctx context.Context, org, id string, p vigil.Page) ([]*vigil.IncidentEvent, int, error) {
	var total int
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM incident_events WHERE incident_id = ?1 AND +org_id = ?2)
		FROM incidents WHERE id = ?1 AND org_id = ?2`, id, org).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, vigil.NotFound("incident")
	}
	if err != nil {
		return nil, 0, wrap("IncidentHistory", err)
	}
	out, err := collect(ctx, s.r, scanEvent, `SELECT `+eventCols+` FROM incident_events WHERE incident_id = ? AND +org_id = ?
		ORDER BY id LIMIT ? OFFSET ?`, append([]any{id, org}, pageArgs(p)...)...)
	return out, total, wrap("IncidentHistory", err)
}

// IncidentEventsAfter returns up to limit events of org after stream
// position after, in the order they were committed: here the id, as one
// writer commits them one after the other.
func (s *Store) IncidentEventsAfter(ctx context.Context, org string, after int64, limit int) ([]*vigil.IncidentEvent, error) {
	out, err := collect(ctx, s.r, scanEvent, `SELECT `+eventCols+` FROM incident_events WHERE org_id = ? AND id > ?
		ORDER BY id LIMIT ?`, org, after, limit)
	for _, ev := range out {
		ev.Seq = ev.ID
	}
	return out, wrap("IncidentEventsAfter", err)
}

// IncidentEventsHead returns the position of org's newest event.
func (s *Store) IncidentEventsHead(ctx context.Context, org string) (int64, error) {
	var head int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM incident_events WHERE org_id = ?`, org).Scan(&head)
	return head, wrap("IncidentEventsHead", err)
}

// statusHistory returns the status changes of incident id of org, oldest
// first: the history of the single-incident response.
func statusHistory(ctx context.Context, q querier, org, id string) ([]vigil.StatusChange, error) {
	evs, err := collect(ctx, q, scanEvent, `SELECT `+eventCols+` FROM incident_events WHERE incident_id = ? AND +org_id = ? AND type = ?
		ORDER BY id`, id, org, vigil.EventStatusChanged)
	if err != nil {
		return nil, err
	}
	out := make([]vigil.StatusChange, len(evs))
	for i, ev := range evs {
		out[i] = vigil.StatusChange{Actor: ev.Actor, At: ev.At, From: ev.Detail.FromStatus, To: ev.Detail.ToStatus}
	}
	return out, nil
}
