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

// CreateRule stores a classification rule of org, unless org has
// vigil.MaxRules already; an enabled rule marks org's re-classification
// pending. Creates of one org take turns (an advisory lock), so that
// concurrent ones cannot pass the bound together.
func (s *Store) CreateRule(ctx context.Context, org string, r *vigil.Rule) error {
	r.OrgID = org
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("vigil/rules", org)); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM rules WHERE org_id = $1`, org).Scan(&n); err != nil {
			return err
		}
		if n >= vigil.MaxRules {
			return vigil.Errorf(vigil.ECONFLICT, "the organization has %d classification rules, the most it may have; delete some first", vigil.MaxRules)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rules (id, org_id, name, priority, enabled, severity, target_infrastructure,
			conditions, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::json, $9, $10)`,
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

// markReclassify marks org's re-classification pending when a write
// from before to after can change how incidents are classified; a mark
// already there counts one more write and restarts its pass.
func markReclassify(ctx context.Context, tx pgx.Tx, org string, before, after *vigil.Rule, now time.Time) error {
	if !vigil.Reclassifies(before, after) {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO reclassify (org_id, generation, cursor, queued_at) VALUES ($1, 1, '', $2)
		ON CONFLICT (org_id) DO UPDATE SET generation = reclassify.generation + 1, cursor = ''`, org, nanos(now))
	return err
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
	out, total, err := orgPage(ctx, s.pool, "rules", ruleCols, "priority, created_at, id", scanRule, org, p)
	return out, total, wrap("ListRules", err)
}

// UpdateRule applies a partial update to a rule of org; one that changes
// nothing writes nothing.
func (s *Store) UpdateRule(ctx context.Context, org, id string, u vigil.RuleUpdate, now time.Time) (*vigil.Rule, error) {
	var out *vigil.Rule
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleCols+` FROM rules WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id))
		if err != nil {
			return notFound(err, "classification rule")
		}
		before := *r
		u.Apply(r)
		out = r
		if r.Same(&before) {
			return nil
		}
		r.UpdatedAt = now
		if _, err = tx.Exec(ctx, `UPDATE rules SET name = $1, priority = $2, enabled = $3, severity = $4, target_infrastructure = $5,
			conditions = $6::text::json, updated_at = $7 WHERE org_id = $8 AND id = $9`,
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
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanRule(tx.QueryRow(ctx, `DELETE FROM rules WHERE org_id = $1 AND id = $2 RETURNING `+ruleCols, org, id))
		if err != nil {
			return notFound(err, "classification rule")
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
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM reclassify WHERE org_id = $1)`, org).Scan(&pending)
	return pending, wrap("ReclassifyPending", err)
}

// ClaimReclassify claims the re-classification that has waited longest.
// Processes claiming at once skip each other's rows.
func (s *Store) ClaimReclassify(ctx context.Context, now, until time.Time) (*vigil.Reclassification, error) {
	c := vigil.Reclassification{Until: until}
	err := s.pool.QueryRow(ctx, `UPDATE reclassify SET claimed_until = $2 WHERE org_id = (
			SELECT org_id FROM reclassify WHERE claimed_until IS NULL OR claimed_until <= $1
			ORDER BY queued_at, org_id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING org_id, generation, cursor`, nanos(now), nanos(until)).Scan(&c.OrgID, &c.Generation, &c.Cursor)
	if errNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("ClaimReclassify", err)
	}
	return &c, nil
}

// ReleaseReclassify ends a claim.
func (s *Store) ReleaseReclassify(ctx context.Context, c vigil.Reclassification, cursor string, done bool, now time.Time) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if done {
			tag, err := tx.Exec(ctx, `DELETE FROM reclassify WHERE org_id = $1 AND generation = $2 AND claimed_until = $3`,
				c.OrgID, c.Generation, nanos(c.Until))
			if err != nil || tag.RowsAffected() > 0 {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE reclassify SET claimed_until = NULL, queued_at = $1,
			cursor = CASE WHEN generation = $2 THEN $3 ELSE cursor END WHERE org_id = $4 AND claimed_until = $5`,
			nanos(now), c.Generation, cursor, c.OrgID, nanos(c.Until))
		return err
	})
	return wrap("ReleaseReclassify", err)
}
