package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// insertEventSQL records an event in the history of incident $1 of org
// $2, with the incident's artifact count as the statement sees it;
// nothing when org has no such incident.
const insertEventSQL = `INSERT INTO incident_events (org_id, incident_id, type, actor, via, at, artifact_count, detail)
	SELECT org_id, id, $3, $4, $5, $6, artifact_count, $7 FROM incidents WHERE id = $1 AND org_id = $2`

// eventArgs returns the arguments of insertEventSQL for ev of org.
func eventArgs(org string, ev vigil.IncidentEvent) ([]any, error) {
	detail, err := json.Marshal(ev.Detail)
	if err != nil {
		return nil, fmt.Errorf("incident event detail: %w", err)
	}
	return []any{ev.IncidentID, org, ev.Type, ev.Actor, ev.Via, nanos(ev.At), string(detail)}, nil
}

// RecordEvent queues the event's insert: it reads the incident's counts
// as the statements queued before it leave them.
func (t *corrTx) RecordEvent(_ context.Context, ev vigil.IncidentEvent) error {
	args, err := eventArgs(t.org, ev)
	if err != nil {
		return err
	}
	t.exec(insertEventSQL, args...)
	return nil
}

// RecordEvents queues the inserts of evs, in order.
func (t *corrTx) RecordEvents(ctx context.Context, evs []vigil.IncidentEvent) error {
	for _, ev := range evs {
		if err := t.RecordEvent(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

const eventCols = `id, COALESCE(pos, 0), incident_id, type, actor, via, at, artifact_count, detail`

func scanEvent(row pgx.CollectableRow) (*vigil.IncidentEvent, error) {
	var ev vigil.IncidentEvent
	var at int64
	var detail []byte
	if err := row.Scan(&ev.ID, &ev.Seq, &ev.IncidentID, &ev.Type, &ev.Actor, &ev.Via, &at, &ev.ArtifactCount, &detail); err != nil {
		return nil, err
	}
	ev.At = fromNanos(at)
	if err := json.Unmarshal(detail, &ev.Detail); err != nil {
		return nil, fmt.Errorf("incident event %d detail: %w", ev.ID, err)
	}
	return &ev, nil
}

func collectEvents(ctx context.Context, q querier, sql string, args ...any) ([]*vigil.IncidentEvent, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scanEvent)
	if out == nil {
		out = []*vigil.IncidentEvent{}
	}
	return out, err
}

// IncidentHistory returns a page of the events of incident id of org,
// oldest first, and their total.
func (s *Store) IncidentHistory(ctx context.Context, org, id string, p vigil.Page) ([]*vigil.IncidentEvent, int, error) {
	var total int
	err := s.pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM incident_events WHERE incident_id = $1 AND org_id = $2)
		FROM incidents WHERE id = $1 AND org_id = $2`, id, org).Scan(&total)
	if err != nil {
		return nil, 0, wrap("IncidentHistory", notFound(err, "incident"))
	}
	out, err := collectEvents(ctx, s.pool, `SELECT `+eventCols+` FROM incident_events WHERE incident_id = $1 AND org_id = $2
		ORDER BY id LIMIT $3 OFFSET $4`, append([]any{id, org}, pageArgs(p)...)...)
	return out, total, wrap("IncidentHistory", err)
}

// sequenceLock is the advisory lock of the one sequencer at a time.
var sequenceLock = lockKey("vigil/incident-events/sequence")

// IncidentEventsAfter returns up to limit events of org after stream
// position after, in the order they became visible. Event ids are taken
// before commit, so a transaction may commit an id lower than one already
// read: the stream reads positions instead, given here to the committed
// events that have none yet, in id order (which keeps each incident's
// order, since each change locks its incident), by one sequencer at a
// time, each after the last one's positions.
func (s *Store) IncidentEventsAfter(ctx context.Context, org string, after int64, limit int) ([]*vigil.IncidentEvent, error) {
	if err := s.sequenceEvents(ctx); err != nil {
		return nil, wrap("IncidentEventsAfter", err)
	}
	out, err := collectEvents(ctx, s.pool, `SELECT `+eventCols+` FROM incident_events WHERE org_id = $1 AND pos > $2
		ORDER BY pos LIMIT $3`, org, after, limit)
	return out, wrap("IncidentEventsAfter", err)
}

// sequenceEvents gives the committed events without a position theirs.
func (s *Store) sequenceEvents(ctx context.Context) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, sequenceLock)
		b.Queue(`UPDATE incident_events e SET pos = m.base + t.n
			FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM incident_events WHERE pos IS NULL ORDER BY id LIMIT 10000) t,
				(SELECT COALESCE(MAX(pos), 0) AS base FROM incident_events) m
			WHERE e.id = t.id`)
		return sendBatch(ctx, tx, b)
	})
}

// IncidentEventsHead returns the position of org's newest event, once the
// committed events have theirs: an event committed later gets a higher one.
func (s *Store) IncidentEventsHead(ctx context.Context, org string) (int64, error) {
	if err := s.sequenceEvents(ctx); err != nil {
		return 0, wrap("IncidentEventsHead", err)
	}
	var head int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(pos), 0) FROM incident_events WHERE org_id = $1`, org).Scan(&head)
	return head, wrap("IncidentEventsHead", err)
}

// statusHistory returns the status changes of incident id of org, oldest
// first: the history of the single-incident response.
func statusHistory(ctx context.Context, q querier, org, id string) ([]vigil.StatusChange, error) {
	evs, err := collectEvents(ctx, q, `SELECT `+eventCols+` FROM incident_events WHERE incident_id = $1 AND org_id = $2 AND type = $3
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
