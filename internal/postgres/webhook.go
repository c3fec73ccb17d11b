package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

const webhookCols = `id, org_id, url, event_types, enabled, secret, since, created_by, created_at, updated_at`

func scanWebhook(row pgx.Row) (*vigil.Webhook, error) {
	var w vigil.Webhook
	var created, updated int64
	if err := row.Scan(&w.ID, &w.OrgID, &w.URL, &w.EventTypes, &w.Enabled, &w.Secret, &w.Since, &w.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	w.EventTypes = perms(w.EventTypes)
	w.CreatedAt, w.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &w, nil
}

// CreateWebhook stores a subscription of org, unless org already has
// vigil.MaxWebhooks. Creations in one org take turns (an advisory lock on
// the org), so that two at once cannot both pass the limit.
func (s *Store) CreateWebhook(ctx context.Context, org string, w *vigil.Webhook) error {
	w.OrgID = org
	return wrap("CreateWebhook", s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vigil/webhooks/' || $1, 0))`, org); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO webhooks (`+webhookCols+`)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
			WHERE (SELECT COUNT(*) FROM webhooks WHERE org_id = $2) < $11`,
			w.ID, org, w.URL, perms(w.EventTypes), w.Enabled, w.Secret, w.Since, w.CreatedBy,
			nanos(w.CreatedAt), nanos(w.UpdatedAt), vigil.MaxWebhooks)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d webhooks; delete one first", vigil.MaxWebhooks)
		}
		return vigil.Audit(ctx, org, vigil.AuditWebhook, w.ID, nil, w)
	}))
}

// GetWebhook returns one subscription of org.
func (s *Store) GetWebhook(ctx context.Context, org, id string) (*vigil.Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, wrap("GetWebhook", notFound(err, "webhook"))
	}
	return w, nil
}

// ListWebhooks returns a page of org's subscriptions, oldest first.
func (s *Store) ListWebhooks(ctx context.Context, org string, p vigil.Page) ([]*vigil.Webhook, int, error) {
	out, total, err := orgPage(ctx, s.pool, "webhooks", webhookCols, "created_at, id", scanWebhook, org, p)
	return out, total, wrap("ListWebhooks", err)
}

// UpdateWebhook applies u to a subscription of org.
func (s *Store) UpdateWebhook(ctx context.Context, org, id string, u vigil.WebhookUpdate, now time.Time) (*vigil.Webhook, error) {
	var types []string
	if u.EventTypes != nil {
		types = perms(u.EventTypes)
	}
	var out *vigil.Webhook
	err := s.tx(ctx, func(tx pgx.Tx) error {
		before, err := scanWebhook(tx.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id))
		if err != nil {
			return notFound(err, "webhook")
		}
		if out, err = scanWebhook(tx.QueryRow(ctx, `UPDATE webhooks SET url = COALESCE($1, url), event_types = COALESCE($2, event_types),
			enabled = COALESCE($3, enabled), updated_at = $4 WHERE org_id = $5 AND id = $6 RETURNING `+webhookCols,
			u.URL, types, u.Enabled, nanos(now), org, id)); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditWebhook, id, before, out)
	})
	if err != nil {
		return nil, wrap("UpdateWebhook", err)
	}
	return out, nil
}

// DeleteWebhook removes a subscription of org; its delivery log goes
// with it (ON DELETE CASCADE).
func (s *Store) DeleteWebhook(ctx context.Context, org, id string) error {
	return wrap("DeleteWebhook", s.tx(ctx, func(tx pgx.Tx) error {
		w, err := scanWebhook(tx.QueryRow(ctx, `DELETE FROM webhooks WHERE org_id = $1 AND id = $2 RETURNING `+webhookCols, org, id))
		if err != nil {
			return notFound(err, "webhook")
		}
		return vigil.Audit(ctx, org, vigil.AuditWebhook, id, w, nil)
	}))
}

// AllWebhooks returns the subscriptions of every org.
func (s *Store) AllWebhooks(ctx context.Context) ([]*vigil.Webhook, error) {
	out, err := collect(ctx, s.pool, scanWebhook, `SELECT `+webhookCols+` FROM webhooks ORDER BY org_id, created_at, id`)
	return out, wrap("AllWebhooks", err)
}

// WebhookCursor returns how far the dispatcher went through org's events.
func (s *Store) WebhookCursor(ctx context.Context, org string) (int64, bool, error) {
	var pos int64
	err := s.pool.QueryRow(ctx, `SELECT position FROM webhook_cursors WHERE org_id = $1`, org).Scan(&pos)
	if errNoRows(err) {
		return 0, false, nil
	}
	return pos, err == nil, wrap("WebhookCursor", err)
}

const deliveryCols = `id, org_id, webhook_id, event_id, event_type, incident_id, state, status_code, attempts, last_error,
	next_attempt_at, created_at, updated_at`

func deliveryArgs(org string, d *vigil.WebhookDelivery) []any {
	return []any{d.ID, org, d.WebhookID, d.EventID, d.EventType, d.IncidentID, d.State, d.StatusCode, d.Attempts, d.LastError,
		nanosPtr(d.NextAttemptAt), nanos(d.CreatedAt), nanos(d.UpdatedAt)}
}

func scanDelivery(row pgx.Row) (*vigil.WebhookDelivery, error) {
	var d vigil.WebhookDelivery
	var org string
	var next *int64
	var created, updated int64
	if err := row.Scan(&d.ID, &org, &d.WebhookID, &d.EventID, &d.EventType, &d.IncidentID, &d.State, &d.StatusCode, &d.Attempts,
		&d.LastError, &next, &created, &updated); err != nil {
		return nil, err
	}
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = timePtr(next), fromNanos(created), fromNanos(updated)
	return &d, nil
}

// insertDelivery is the insert of a delivery of a subscription that
// exists; onConflict says what a delivery already logged becomes.
func insertDelivery(onConflict string) string {
	return `INSERT INTO webhook_deliveries (` + deliveryCols + `)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = $3 AND org_id = $2)
		ON CONFLICT (id) DO ` + onConflict
}

// RecordWebhookDispatch logs the queued deliveries and moves org's cursor
// forward to position, in one transaction.
func (s *Store) RecordWebhookDispatch(ctx context.Context, org string, position int64, ds []*vigil.WebhookDelivery) error {
	return wrap("RecordWebhookDispatch", s.tx(ctx, func(tx pgx.Tx) error {
		for _, d := range ds {
			if _, err := tx.Exec(ctx, insertDelivery("NOTHING"), deliveryArgs(org, d)...); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhook_cursors (org_id, position) VALUES ($1, $2)
			ON CONFLICT (org_id) DO UPDATE SET position = GREATEST(webhook_cursors.position, excluded.position)`, org, position)
		return err
	}))
}

// RecordWebhookAttempt writes d in the delivery log.
func (s *Store) RecordWebhookAttempt(ctx context.Context, org string, d *vigil.WebhookDelivery) error {
	_, err := s.pool.Exec(ctx, insertDelivery(`UPDATE SET state = excluded.state, status_code = excluded.status_code,
		attempts = excluded.attempts, last_error = excluded.last_error, next_attempt_at = excluded.next_attempt_at,
		updated_at = excluded.updated_at WHERE webhook_deliveries.org_id = excluded.org_id`), deliveryArgs(org, d)...)
	return wrap("RecordWebhookAttempt", err)
}

// GetWebhookDelivery returns one delivery of org.
func (s *Store) GetWebhookDelivery(ctx context.Context, org, id string) (*vigil.WebhookDelivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, wrap("GetWebhookDelivery", notFound(err, "webhook delivery"))
	}
	return d, nil
}

// ListWebhookDeliveries returns a page of a subscription's delivery log,
// newest first.
func (s *Store) ListWebhookDeliveries(ctx context.Context, org, webhook string, p vigil.Page) ([]*vigil.WebhookDelivery, int, error) {
	var total int
	err := s.pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = $1 AND org_id = $2)
		FROM webhooks WHERE id = $1 AND org_id = $2`, webhook, org).Scan(&total)
	if err != nil {
		return nil, 0, wrap("ListWebhookDeliveries", notFound(err, "webhook"))
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE webhook_id = $1 AND org_id = $2
		ORDER BY created_at DESC, event_id DESC LIMIT $3 OFFSET $4`, append([]any{webhook, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("ListWebhookDeliveries", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.WebhookDelivery, error) { return scanDelivery(r) })
	if out == nil {
		out = []*vigil.WebhookDelivery{}
	}
	return out, total, wrap("ListWebhookDeliveries", err)
}

// PruneWebhookDeliveries forgets the finished deliveries of every org
// last written before before.
func (s *Store) PruneWebhookDeliveries(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < $1`, nanos(before))
	if err != nil {
		return 0, wrap("PruneWebhookDeliveries", err)
	}
	return int(tag.RowsAffected()), nil
}
