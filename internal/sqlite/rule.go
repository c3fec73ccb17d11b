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

// CreateRule stores a classification rule of org, unless org has
// vigil.MaxRules already; an enabled rule marks org's re-classification
// pending.
func (s *Store) CreateRule(ctx context.Context, org string, r *vigil.Rule) error {
	r.OrgID = org
	err := s.tx(ctx, func(tx *wtx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM rules WHERE org_id = ?`, org).Scan(&n); err != nil {
			return err
		}
		if n >= vigil.MaxRules {
			return tooManyRules()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO rules (`+ruleCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, org, r.Name, r.Priority, r.Enabled, r.Severity, r.TargetInfrastructure, string(r.Conditions), nanos(r.CreatedAt), nanos(r.UpdatedAt)); err != nil {
			return err
		}
		if err := vigil.Audit(ctx, org, vigil.AuditClassificationRule, r.ID, nil, r); err != nil {
			return err
		}
		return markReclassify(ctx, tx, org, nil, r, r.CreatedAt)
	})
	return wrap("CreateRule", err)
}

// tooManyRules is the error of a rule beyond vigil.MaxRules.
func tooManyRules() error {
	return vigil.Errorf(vigil.ECONFLICT, "the organization has %d classification rules, the most it may have; delete some first", vigil.MaxRules)
}

// markReclassify marks org's re-classification pending when a write
// from before to after can change how incidents are classified; a mark
// already there counts one more write and restarts its pass.
func markReclassify(ctx context.Context, tx *wtx, org string, before, after *vigil.Rule, now time.Time) error {
	if !vigil.Reclassifies(before, after) {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO reclassify (org_id, generation, cursor, queued_at) VALUES (?, 1, '', ?)
		ON CONFLICT (org_id) DO UPDATE SET generation = generation + 1, cursor = ''`, org, nanos(now))
	return err
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
	out, total, err := orgPage(ctx, s.r, "rules", ruleCols, "priority, created_at, id", scanRule, org, p)
	return out, total, wrap("ListRules", err)
}

// UpdateRule applies a partial update to a rule of org; one that changes
// nothing writes nothing.
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
		before := *r
		u.Apply(r)
		out = r
		if r.Same(&before) {
			return nil
		}
		r.UpdatedAt = now
		if _, err = tx.ExecContext(ctx, `UPDATE rules SET name = ?, priority = ?, enabled = ?, severity = ?, target_infrastructure = ?,
			conditions = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
			r.Name, r.Priority, r.Enabled, r.Severity, r.TargetInfrastructure, string(r.Conditions), nanos(now), org, id); err != nil {
			return err
		}
		if err := vigil.Audit(ctx, org, vigil.AuditClassificationRule, id, &before, r); err != nil {
			return err
		}
		return markReclassify(ctx, tx, org, &before, r, now)
	})
	return out, wrap("UpdateRule", err)
}

// DeleteRule removes a rule of org; an enabled one marks org's
// re-classification pending.
func (s *Store) DeleteRule(ctx context.Context, org, id string) error {
	err := s.tx(ctx, func(tx *wtx) error {
		r, err := scanRule(tx.QueryRowContext(ctx, `DELETE FROM rules WHERE org_id = ? AND id = ? RETURNING `+ruleCols, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("classification rule")
		}
		if err != nil {
			return err
		}
		if err := vigil.Audit(ctx, org, vigil.AuditClassificationRule, id, r, nil); err != nil {
			return err
		}
		return markReclassify(ctx, tx, org, r, nil, vigil.Now())
	})
	return wrap("DeleteRule", err)
}

// ReclassifyPending reports whether org's open incidents await
// re-classification.
func (s *Store) ReclassifyPending(ctx context.Context, org string) (bool, error) {
	var pending bool
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM reclassify WHERE org_id = ?)`, org).Scan(&pending)
	return pending, wrap("ReclassifyPending", err)
}

// ClaimReclassify claims the re-classification that has waited longest.
func (s *Store) ClaimReclassify(ctx context.Context, now, until time.Time) (*vigil.Reclassification, error) {
	var out *vigil.Reclassification
	err := s.tx(ctx, func(tx *wtx) error {
		c := vigil.Reclassification{Until: until}
		err := tx.QueryRowContext(ctx, `SELECT org_id, generation, cursor FROM reclassify
			WHERE claimed_until IS NULL OR claimed_until <= ? ORDER BY queued_at, org_id LIMIT 1`, nanos(now)).
			Scan(&c.OrgID, &c.Generation, &c.Cursor)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE reclassify SET claimed_until = ? WHERE org_id = ?`, nanos(until), c.OrgID); err != nil {
			return err
		}
		out = &c
		return nil
	})
	return out, wrap("ClaimReclassify", err)
}

// ReleaseReclassify ends a claim.
func (s *Store) ReleaseReclassify(ctx context.Context, c vigil.Reclassification, cursor string, done bool, now time.Time) error {
	err := s.tx(ctx, func(tx *wtx) error {
		if done {
			res, err := tx.ExecContext(ctx, `DELETE FROM reclassify WHERE org_id = ? AND generation = ? AND claimed_until = ?`,
				c.OrgID, c.Generation, nanos(c.Until))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				return nil
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE reclassify SET claimed_until = NULL, queued_at = ?,
			cursor = CASE WHEN generation = ? THEN ? ELSE cursor END WHERE org_id = ? AND claimed_until = ?`,
			nanos(now), c.Generation, cursor, c.OrgID, nanos(c.Until))
		return err
	})
	return wrap("ReleaseReclassify", err)
}
