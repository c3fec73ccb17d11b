package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

const detectionRuleCols = `id, org_id, title, sigma_id, name, kind, level, enabled, rule, created_by, created_at, updated_at`

func scanDetectionRule(row pgx.Row) (*vigil.DetectionRule, error) {
	var r vigil.DetectionRule
	var created, updated int64
	if err := row.Scan(&r.ID, &r.OrgID, &r.Title, &r.SigmaID, &r.Name, &r.Kind, &r.Level, &r.Enabled, &r.Rule,
		&r.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &r, nil
}

// detectionRuleConflict names the field a uniqueness violation is about.
func detectionRuleConflict(err error) error {
	if vigil.ErrorCode(wrap("", err)) == vigil.ECONFLICT {
		return vigil.DetectionRuleConflict(err)
	}
	return err
}

// CreateDetectionRule stores a detection rule of org, unless org already
// has vigil.MaxDetectionRules or a rule of the same Sigma id or name.
// Creations in one org take turns (an advisory lock on the org), so that
// two at once cannot both pass the limit.
func (s *Store) CreateDetectionRule(ctx context.Context, org string, r *vigil.DetectionRule) error {
	r.OrgID = org
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vigil/detection-rules/' || $1, 0))`, org); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO detection_rules (`+detectionRuleCols+`)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
			WHERE (SELECT COUNT(*) FROM detection_rules WHERE org_id = $2) < $13`,
			r.ID, org, r.Title, r.SigmaID, r.Name, r.Kind, r.Level, r.Enabled, r.Rule, r.CreatedBy,
			nanos(r.CreatedAt), nanos(r.UpdatedAt), vigil.MaxDetectionRules)
		if err != nil {
			return detectionRuleConflict(err)
		}
		if tag.RowsAffected() == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d detection rules; delete some first", vigil.MaxDetectionRules)
		}
		return vigil.Audit(ctx, org, vigil.AuditDetectionRule, r.ID, nil, r)
	})
	return wrap("CreateDetectionRule", err)
}

// GetDetectionRule returns one detection rule of org.
func (s *Store) GetDetectionRule(ctx context.Context, org, id string) (*vigil.DetectionRule, error) {
	r, err := scanDetectionRule(s.pool.QueryRow(ctx, `SELECT `+detectionRuleCols+` FROM detection_rules WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, wrap("GetDetectionRule", notFound(err, "detection rule"))
	}
	return r, nil
}

// ListDetectionRules returns a page of org's detection rules, oldest first.
func (s *Store) ListDetectionRules(ctx context.Context, org string, p vigil.Page) ([]*vigil.DetectionRule, int, error) {
	out, total, err := orgPage(ctx, s.pool, "detection_rules", detectionRuleCols, "created_at, id", scanDetectionRule, org, p)
	return out, total, wrap("ListDetectionRules", err)
}

// UpdateDetectionRule applies an update to a detection rule of org.
func (s *Store) UpdateDetectionRule(ctx context.Context, org, id string, u vigil.DetectionRuleUpdate, now time.Time) (*vigil.DetectionRule, error) {
	var out *vigil.DetectionRule
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanDetectionRule(tx.QueryRow(ctx, `SELECT `+detectionRuleCols+` FROM detection_rules WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id))
		if err != nil {
			return notFound(err, "detection rule")
		}
		before := *r
		u.Apply(r)
		r.UpdatedAt = now
		if _, err := tx.Exec(ctx, `UPDATE detection_rules SET title = $1, sigma_id = $2, name = $3, kind = $4, level = $5,
			enabled = $6, rule = $7, updated_at = $8 WHERE org_id = $9 AND id = $10`,
			r.Title, r.SigmaID, r.Name, r.Kind, r.Level, r.Enabled, r.Rule, nanos(now), org, id); err != nil {
			return detectionRuleConflict(err)
		}
		out = r
		return vigil.Audit(ctx, org, vigil.AuditDetectionRule, id, &before, r)
	})
	if err != nil {
		return nil, wrap("UpdateDetectionRule", err)
	}
	return out, nil
}

// DeleteDetectionRule removes a detection rule of org.
func (s *Store) DeleteDetectionRule(ctx context.Context, org, id string) error {
	return wrap("DeleteDetectionRule", s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanDetectionRule(tx.QueryRow(ctx, `DELETE FROM detection_rules WHERE org_id = $1 AND id = $2 RETURNING `+detectionRuleCols, org, id))
		if err != nil {
			return notFound(err, "detection rule")
		}
		return vigil.Audit(ctx, org, vigil.AuditDetectionRule, id, r, nil)
	}))
}

// StarterRuleStates returns the starter rules org turned on or off.
func (s *Store) StarterRuleStates(ctx context.Context, org string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT rule_id, enabled FROM starter_rule_states WHERE org_id = $1`, org)
	if err != nil {
		return nil, wrap("StarterRuleStates", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		var on bool
		if err := rows.Scan(&id, &on); err != nil {
			return nil, wrap("StarterRuleStates", err)
		}
		out[id] = on
	}
	return out, wrap("StarterRuleStates", rows.Err())
}

// SetStarterRuleState records that org turned a starter rule on or off.
func (s *Store) SetStarterRuleState(ctx context.Context, org, id string, enabled bool, now time.Time) error {
	return wrap("SetStarterRuleState", s.tx(ctx, func(tx pgx.Tx) error {
		var before *bool
		err := tx.QueryRow(ctx, `SELECT enabled FROM starter_rule_states WHERE org_id = $1 AND rule_id = $2 FOR UPDATE`, org, id).Scan(&before)
		if err != nil && !errNoRows(err) {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO starter_rule_states (org_id, rule_id, enabled, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (org_id, rule_id) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = EXCLUDED.updated_at`,
			org, id, enabled, nanos(now)); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditStarterRule, id, vigil.StarterRuleFields(before), vigil.StarterRuleFields(&enabled))
	}))
}
