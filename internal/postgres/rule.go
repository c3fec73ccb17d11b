package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

const ruleCols = `id, org_id, name, priority, enabled, severity, target_infrastructure, conditions::text, created_at, updated_at`

func scanRule(row pgx.Row) (*vigil.Rule, error) {
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
	_, err := s.pool.Exec(ctx, `INSERT INTO rules (id, org_id, name, priority, enabled, severity, target_infrastructure,
		conditions, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::json, $9, $10)`,
		r.ID, org, r.Name, r.Priority, r.Enabled, r.Severity, r.TargetInfrastructure, string(r.Conditions), nanos(r.CreatedAt), nanos(r.UpdatedAt))
	return wrap("CreateRule", err)
}

// GetRule returns one rule of org.
func (s *Store) GetRule(ctx context.Context, org, id string) (*vigil.Rule, error) {
	r, err := scanRule(s.pool.QueryRow(ctx, `SELECT `+ruleCols+` FROM rules WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, wrap("GetRule", notFound(err, "classification rule"))
	}
	return r, nil
}

// ListRules returns a page of org's rules by ascending priority, older
// first on ties.
func (s *Store) ListRules(ctx context.Context, org string, p vigil.Page) ([]*vigil.Rule, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM rules WHERE org_id = $1`, org).Scan(&total); err != nil {
		return nil, 0, wrap("ListRules", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+ruleCols+` FROM rules WHERE org_id = $1
		ORDER BY priority, created_at, id LIMIT $2 OFFSET $3`, append([]any{org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("ListRules", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.Rule, error) { return scanRule(r) })
	if err != nil {
		return nil, 0, wrap("ListRules", err)
	}
	if out == nil {
		out = []*vigil.Rule{}
	}
	return out, total, nil
}

// UpdateRule applies a partial update to a rule of org.
func (s *Store) UpdateRule(ctx context.Context, org, id string, u vigil.RuleUpdate, now time.Time) (*vigil.Rule, error) {
	var out *vigil.Rule
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleCols+` FROM rules WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id))
		if err != nil {
			return notFound(err, "classification rule")
		}
		u.Apply(r)
		r.UpdatedAt = now
		_, err = tx.Exec(ctx, `UPDATE rules SET name = $1, priority = $2, enabled = $3, severity = $4, target_infrastructure = $5,
			conditions = $6::text::json, updated_at = $7 WHERE org_id = $8 AND id = $9`,
			r.Name, r.Priority, r.Enabled, r.Severity, r.TargetInfrastructure, string(r.Conditions), nanos(now), org, id)
		out = r
		return err
	})
	return out, wrap("UpdateRule", err)
}

// DeleteRule removes a rule of org.
func (s *Store) DeleteRule(ctx context.Context, org, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM rules WHERE org_id = $1 AND id = $2`, org, id)
	if err != nil {
		return wrap("DeleteRule", err)
	}
	if tag.RowsAffected() == 0 {
		return vigil.NotFound("classification rule")
	}
	return nil
}
