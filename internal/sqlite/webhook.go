package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/vigil-soc/vigil"
)

const webhookCols = `id, org_id, url, event_types, enabled, secret, since, created_by, created_at, updated_at`

func scanWebhook(row interface{ Scan(...any) error }) (*vigil.Webhook, error) {
	var w vigil.Webhook
	var types string
	var created, updated int64
	if err := row.Scan(&w.ID, &w.OrgID, &w.URL, &types, &w.Enabled, &w.Secret, &w.Since, &w.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(types), &w.EventTypes); err != nil {
		return nil, err
	}
	w.CreatedAt, w.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &w, nil
}

func typesJSON(types []string) string {
	b, _ := json.Marshal(types)
	return string(b)
}

// CreateWebhook stores a subscription of org, unless org already has
// vigil.MaxWebhooks.
func (s *Store) CreateWebhook(ctx context.Context, org string, w *vigil.Webhook) error {
	w.OrgID = org
	return wrap("CreateWebhook", s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookCols+`)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
			WHERE (SELECT COUNT(*) FROM webhooks WHERE org_id = ?2) < ?11`,
			w.ID, org, w.URL, typesJSON(w.EventTypes), w.Enabled, w.Secret, w.Since, w.CreatedBy,
			nanos(w.CreatedAt), nanos(w.UpdatedAt), vigil.MaxWebhooks)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d webhooks; delete one first", vigil.MaxWebhooks)
		}
		return vigil.Audit(ctx, org, vigil.AuditWebhook, w.ID, nil, w)
	}))
}

// GetWebhook returns one subscription of org.
func (s *Store) GetWebhook(ctx context.Context, org, id string) (*vigil.Webhook, error) {
	w, err := scanWebhook(s.r.QueryRowContext(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("webhook")
	}
	return w, wrap("GetWebhook", err)
}

// ListWebhooks returns a page of org's subscriptions, oldest first.
func (s *Store) ListWebhooks(ctx context.Context, org string, p vigil.Page) ([]*vigil.Webhook, int, error) {
	out, total, err := orgPage(ctx, s.r, "webhooks", webhookCols, "created_at, id", scanWebhook, org, p)
	return out, total, wrap("ListWebhooks", err)
}

// UpdateWebhook applies u to a subscription of org.
func (s *Store) UpdateWebhook(ctx context.Context, org, id string, u vigil.WebhookUpdate, now time.Time) (*vigil.Webhook, error) {
	var types *string
	if u.EventTypes != nil {
		t := typesJSON(u.EventTypes)
		types = &t
	}
	var out *vigil.Webhook
	err := s.tx(ctx, func(tx *wtx) error {
		get := `SELECT ` + webhookCols + ` FROM webhooks WHERE org_id = ? AND id = ?`
		before, err := scanWebhook(tx.QueryRowContext(ctx, get, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("webhook")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET url = COALESCE(?1, url), event_types = COALESCE(?2, event_types),
			enabled = COALESCE(?3, enabled), updated_at = ?4 WHERE org_id = ?5 AND id = ?6`,
			u.URL, types, u.Enabled, nanos(now), org, id); err != nil {
			return err
		}
		if out, err = scanWebhook(tx.QueryRowContext(ctx, get, org, id)); err != nil {
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
	return wrap("DeleteWebhook", s.tx(ctx, func(tx *wtx) error {
		w, err := scanWebhook(tx.QueryRowContext(ctx, `DELETE FROM webhooks WHERE org_id = ? AND id = ? RETURNING `+webhookCols, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("webhook")
		}
		if err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditWebhook, id, w, nil)
	}))
}

// AllWebhooks returns the subscriptions of every org.
func (s *Store) AllWebhooks(ctx context.Context) ([]*vigil.Webhook, error) {
	out, err := collect(ctx, s.r, scanWebhook, `SELECT `+webhookCols+` FROM webhooks ORDER BY org_id, created_at, id`)
	return out, wrap("AllWebhooks", err)
}

// WebhookCursor returns how far the dispatcher went through org's events.
func (s *Store) WebhookCursor(ctx context.Context, org string) (int64, bool, error) {
	var pos int64
	err := s.r.QueryRowContext(ctx, `SELECT position FROM webhook_cursors WHERE org_id = ?`, org).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return pos, err == nil, wrap("WebhookCursor", err)
}

// RecordWebhookDispatch logs the queued deliveries and moves org's cursor
// forward to position, in one transaction.
func (s *Store) RecordWebhookDispatch(ctx context.Context, org string, position int64, ds []*vigil.WebhookDelivery) error {
	return wrap("RecordWebhookDispatch", s.tx(ctx, func(tx *wtx) error {
		for _, d := range ds {
			if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (`+deliveryCols+`)
				SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = ?3 AND org_id = ?2)
				ON CONFLICT (id) DO NOTHING`, deliveryArgs(org, d)...); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webhook_cursors (org_id, position) VALUES (?1, ?2)
			ON CONFLICT (org_id) DO UPDATE SET position = MAX(position, excluded.position)`, org, position)
		return err
	}))
}

const deliveryCols = `id, org_id, webhook_id, event_id, event_type, incident_id, state, status_code, attempts, last_error,
	next_attempt_at, created_at, updated_at`

func deliveryArgs(org string, d *vigil.WebhookDelivery) []any {
	return []any{d.ID, org, d.WebhookID, d.EventID, d.EventType, d.IncidentID, d.State, d.StatusCode, d.Attempts, d.LastError,
		nullNanos(d.NextAttemptAt), nanos(d.CreatedAt), nanos(d.UpdatedAt)}
}

func scanDelivery(row interface{ Scan(...any) error }) (*vigil.WebhookDelivery, error) {
	var d vigil.WebhookDelivery
	var org string
	var next sql.NullInt64
	var created, updated int64
	if err := row.Scan(&d.ID, &org, &d.WebhookID, &d.EventID, &d.EventType, &d.IncidentID, &d.State, &d.StatusCode, &d.Attempts,
		&d.LastError, &next, &created, &updated); err != nil {
		return nil, err
	}
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = timePtr(next), fromNanos(created), fromNanos(updated)
	return &d, nil
}

// RecordWebhookAttempt writes d in the delivery log.
func (s *Store) RecordWebhookAttempt(ctx context.Context, org string, d *vigil.WebhookDelivery) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO webhook_deliveries (`+deliveryCols+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = ?3 AND org_id = ?2)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, status_code = excluded.status_code, attempts = excluded.attempts,
			last_error = excluded.last_error, next_attempt_at = excluded.next_attempt_at, updated_at = excluded.updated_at
		WHERE webhook_deliveries.org_id = excluded.org_id`, deliveryArgs(org, d)...)
	return wrap("RecordWebhookAttempt", err)
}

// GetWebhookDelivery returns one delivery of org.
func (s *Store) GetWebhookDelivery(ctx context.Context, org, id string) (*vigil.WebhookDelivery, error) {
	d, err := scanDelivery(s.r.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("webhook delivery")
	}
	return d, wrap("GetWebhookDelivery", err)
}

// ListWebhookDeliveries returns a page of a subscription's delivery log,
// newest first.
func (s *Store) ListWebhookDeliveries(ctx context.Context, org, webhook string, p vigil.Page) ([]*vigil.WebhookDelivery, int, error) {
	var total int
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ?1 AND org_id = ?2)
		FROM webhooks WHERE id = ?1 AND org_id = ?2`, webhook, org).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, vigil.NotFound("webhook")
	}
	if err != nil {
		return nil, 0, wrap("ListWebhookDeliveries", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE webhook_id = ? AND org_id = ?
		ORDER BY created_at DESC, event_id DESC LIMIT ? OFFSET ?`, append([]any{webhook, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("ListWebhookDeliveries", err)
	}
	defer rows.Close()
	out := []*vigil.WebhookDelivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, 0, wrap("ListWebhookDeliveries", err)
		}
		out = append(out, d)
	}
	return out, total, wrap("ListWebhookDeliveries", rows.Err())
}

// PruneWebhookDeliveries forgets the finished deliveries of every org
// last written before before.
func (s *Store) PruneWebhookDeliveries(ctx context.Context, before time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < ?`, nanos(before))
	if err != nil {
		return 0, wrap("PruneWebhookDeliveries", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
