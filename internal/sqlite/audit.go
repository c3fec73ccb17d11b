package sqlite

import (
	"context"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// insertAudit records the entries a write transaction noted in its
// request's trail.
func insertAudit(ctx context.Context, tx *wtx, entries []vigil.AuditEntry) error {
	for _, e := range entries {
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (org_id, actor, at, method, path, resource_type, resource_id, before, after)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.OrgID, e.Actor, nanos(e.At), e.Method, e.Path, e.ResourceType, e.ResourceID,
			nullJSON(e.Before), nullJSON(e.After)); err != nil {
			return err
		}
	}
	return nil
}

// ListAudit returns a page of org's matching audit entries, newest first.
func (s *Store) ListAudit(ctx context.Context, org string, f vigil.AuditFilter) ([]*vigil.AuditEntry, int, error) {
	where, args := []string{"org_id = ?"}, []any{org}
	for _, c := range [...]struct{ col, v string }{{"actor", f.Actor}, {"resource_type", f.ResourceType}, {"resource_id", f.ResourceID}} {
		if c.v != "" {
			where, args = append(where, c.col+" = ?"), append(args, c.v)
		}
	}
	where, args = rangeClause("at", vigil.TimeRange{Start: f.From, End: f.To}, where, args)
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_log WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListAudit", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, org_id, actor, at, method, path, resource_type, resource_id, before, after
		FROM audit_log WHERE `+cond+` ORDER BY id DESC LIMIT ? OFFSET ?`, append(args, pageArgs(f.Page)...)...)
	if err != nil {
		return nil, 0, wrap("ListAudit", err)
	}
	defer rows.Close()
	out := []*vigil.AuditEntry{}
	for rows.Next() {
		var e vigil.AuditEntry
		var at int64
		var before, after *string
		if err := rows.Scan(&e.ID, &e.OrgID, &e.Actor, &at, &e.Method, &e.Path, &e.ResourceType, &e.ResourceID, &before, &after); err != nil {
			return nil, 0, wrap("ListAudit", err)
		}
		e.At = fromNanos(at)
		e.Before, e.After = rawJSON(before), rawJSON(after)
		out = append(out, &e)
	}
	return out, total, wrap("ListAudit", rows.Err())
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
	res, err := s.w.ExecContext(ctx, `DELETE FROM audit_log WHERE at < ?`, nanos(before))
	if err != nil {
		return 0, wrap("PruneAudit", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("PruneAudit", err)
}
