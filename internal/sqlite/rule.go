package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/vigil-soc/vigil"
)

const ruleCols = `id, org_id, name, priority, enabled, severity, target_infrastructure, conditions, created_at, updated_at`

func scanRule(row interface{ Scan(...any) error }) (*vigil.Rule, error) {
	var r vigil.Rule
	var cond string
	var created, updated int64
	if err := row.Scan(&r.ID, &r.OrgID, &r.Name, &r.Priority, &r.Enabled, &r.Severity, &r.TargetInfrastructure, &cond, &created, &updated); err != nil {
		return nil, err
	}
	r.Conditions = json.RawMessage(cond)
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &r, nil
}

// CreateRule stores a classification rule of org.
func (s *Store) CreateRule(ctx context.Context, org string, r *vigil.Rule) error {
	r.OrgID = org
	_, err := s.w.ExecContext(ctx, `INSERT INTO rules (`+ruleCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, org, r.Name, r.Priority, r.Enabled, r.Severity, r.TargetInfrastructure, string(r.Conditions), nanos(r.CreatedAt), nanos(r.UpdatedAt))
	return wrap("CreateRule", err)
}

// GetRule returns one rule of org.
func (s *Store) GetRule(ctx context.Context, org, id string) (*vigil.Rule, error) {
	r, err := scanRule(s.r.QueryRowContext(ctx, `SELECT `+ruleCols+` FROM rules WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("classification rule")
	}
	return r, wrap("GetRule", err)
}

// ListRules returns a page of org's rules by ascending priority, older
// first on ties.
func (s *Store) ListRules(ctx context.Context, org string, p vigil.Page) ([]*vigil.Rule, int, error) {
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM rules WHERE org_id = ?`, org).Scan(&total); err != nil {
		return nil, 0, wrap("ListRules", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+ruleCols+` FROM rules WHERE org_id = ?
		ORDER BY priority, created_at, id LIMIT ? OFFSET ?`, append([]any{org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("ListRules", err)
	}
	defer rows.Close()
	out := []*vigil.Rule{}
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, 0, wrap("ListRules", err)
		}
		out = append(out, r)
	}
	return out, total, wrap("ListRules", rows.Err())
}

// UpdateRule applies a partial update to a rule of org.
func (s *Store) UpdateRule(ctx context.Context, org, id string, u vigil.RuleUpdate, now time.Time) (*vigil.Rule, error) {
	var out *vigil.Rule
	err := s.tx(ctx, func(tx *wtx) error {
		r, err := scanRule(tx.QueryRowContext(ctx, `SELECT `+ruleCols+` FROM rules WHERE org_id = ? AND id = ?`, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("classification rule")
		}
		if err != nil {
			return err
		}
		u.Apply(r)
		r.UpdatedAt = now
		_, err = tx.ExecContext(ctx, `UPDATE rules SET name = ?, priority = ?, enabled = ?, severity = ?, target_infrastructure = ?,
			conditions = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
			r.Name, r.Priority, r.Enabled, r.Severity, r.TargetInfrastructure, string(r.Conditions), nanos(now), org, id)
		out = r
		return err
	})
	return out, wrap("UpdateRule", err)
}

// DeleteRule removes a rule of org.
func (s *Store) DeleteRule(ctx context.Context, org, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM rules WHERE org_id = ? AND id = ?`, org, id)
	if err != nil {
		return wrap("DeleteRule", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return vigil.NotFound("classification rule")
	}
	return nil
}
