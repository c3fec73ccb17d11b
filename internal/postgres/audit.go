package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// insertAudit records the entries a write transaction noted in its
// request's trail.
func insertAudit(ctx context.Context, tx pgx.Tx, entries []vigil.AuditEntry) error {
	for _, e := range entries {
		if _, err := tx.Exec(ctx, `INSERT INTO audit_log (org_id, actor, at, method, path, resource_type, resource_id, before, after)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.OrgID, e.Actor, nanos(e.At), e.Method, e.Path, e.ResourceType, e.ResourceID,
			jsonArg(e.Before), jsonArg(e.After)); err != nil {
			return err
		}
	}
	return nil
}

// jsonArg is raw as a JSONB argument, or NULL when there is none.
func jsonArg(raw []byte) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}

// ListAudit returns a page of org's matching audit entries, newest first.
func (s *Store) ListAudit(ctx context.Context, org string, f vigil.AuditFilter) ([]*vigil.AuditEntry, int, error) {
	var c conds
	c.add("org_id = ?", org)
	for _, m := range [...]struct{ col, v string }{{"actor", f.Actor}, {"resource_type", f.ResourceType}, {"resource_id", f.ResourceID}} {
		if m.v != "" {
			c.add(m.col+" = ?", m.v)
		}
	}
	c.timeRange("at", vigil.TimeRange{Start: f.From, End: f.To})
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM audit_log WHERE `+c.where, c.args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListAudit", err)
	}
	limit, args := c.page(f.Page)
	rows, err := s.pool.Query(ctx, `SELECT id, org_id, actor, at, method, path, resource_type, resource_id, before::text, after::text
		FROM audit_log WHERE `+c.where+` ORDER BY id DESC`+limit, args...)
	if err != nil {
		return nil, 0, wrap("ListAudit", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*vigil.AuditEntry, error) {
		var e vigil.AuditEntry
		var at int64
		var before, after *string
		if err := row.Scan(&e.ID, &e.OrgID, &e.Actor, &at, &e.Method, &e.Path, &e.ResourceType, &e.ResourceID, &before, &after); err != nil {
			return nil, err
		}
		e.At = fromNanos(at)
		e.Before, e.After = rawJSON(before), rawJSON(after)
		return &e, nil
	})
	if out == nil {
		out = []*vigil.AuditEntry{}
	}
	return out, total, wrap("ListAudit", err)
}

// rawJSON is the JSON text s, or JSON null when there is none.
func rawJSON(s *string) []byte {
	if s == nil {
		return []byte("null")
	}
	return []byte(*s)
}

// PruneAudit deletes the audit entries of every org recorded before t.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM audit_log WHERE at < $1`, nanos(before))
	if err != nil {
		return 0, wrap("PruneAudit", err)
	}
	return int(tag.RowsAffected()), nil
}
