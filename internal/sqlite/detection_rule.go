package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/vigil-soc/vigil"
)

const detectionRuleCols = `id, org_id, title, sigma_id, name, kind, level, enabled, rule, created_by, created_at, updated_at`

func scanDetectionRule(row interface{ Scan(...any) error }) (*vigil.DetectionRule, error) {
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
func (s *Store) CreateDetectionRule(ctx context.Context, org string, r *vigil.DetectionRule) error {
	r.OrgID = org
	return wrap("CreateDetectionRule", s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO detection_rules (`+detectionRuleCols+`)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12
			WHERE (SELECT COUNT(*) FROM detection_rules WHERE org_id = ?2) < ?13`,
			r.ID, org, r.Title, r.SigmaID, r.Name, r.Kind, r.Level, r.Enabled, r.Rule, r.CreatedBy,
			nanos(r.CreatedAt), nanos(r.UpdatedAt), vigil.MaxDetectionRules)
		if err != nil {
			return detectionRuleConflict(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d detection rules; delete some first", vigil.MaxDetectionRules)
		}
		return vigil.Audit(ctx, org, vigil.AuditDetectionRule, r.ID, nil, r)
	}))
}

// GetDetectionRule returns one detection rule of org.
func (s *Store) GetDetectionRule(ctx context.Context, org, id string) (*vigil.DetectionRule, error) {
	r, err := scanDetectionRule(s.r.QueryRowContext(ctx, `SELECT `+detectionRuleCols+` FROM detection_rules WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("detection rule")
	}
	return r, wrap("GetDetectionRule", err)
}

// ListDetectionRules returns a page of org's detection rules, oldest first.
func (s *Store) ListDetectionRules(ctx context.Context, org string, p vigil.Page) ([]*vigil.DetectionRule, int, error) {
	out, total, err := orgPage(ctx, s.r, "detection_rules", detectionRuleCols, "created_at, id", scanDetectionRule, org, p)
	return out, total, wrap("ListDetectionRules", err)
}

// UpdateDetectionRule applies an update to a detection rule of org.
func (s *Store) UpdateDetectionRule(ctx context.Context, org, id string, u vigil.DetectionRuleUpdate, now time.Time) (*vigil.DetectionRule, error) {
	var out *vigil.DetectionRule
	err := s.tx(ctx, func(tx *wtx) error {
		r, err := scanDetectionRule(tx.QueryRowContext(ctx, `SELECT `+detectionRuleCols+` FROM detection_rules WHERE org_id = ? AND id = ?`, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("detection rule")
		}
		if err != nil {
			return err
		}
		before := *r
		u.Apply(r)
		r.UpdatedAt = now
		if _, err = tx.ExecContext(ctx, `UPDATE detection_rules SET title = ?, sigma_id = ?, name = ?, kind = ?, level = ?,
			enabled = ?, rule = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
			r.Title, r.SigmaID, r.Name, r.Kind, r.Level, r.Enabled, r.Rule, nanos(now), org, id); err != nil {
			return detectionRuleConflict(err)
		}
		out = r
		return vigil.Audit(ctx, org, vigil.AuditDetectionRule, id, &before, r)
	})
	return out, wrap("UpdateDetectionRule", err)
}

// DeleteDetectionRule removes a detection rule of org.
func (s *Store) DeleteDetectionRule(ctx context.Context, org, id string) error {
	return wrap("DeleteDetectionRule", s.tx(ctx, func(tx *wtx) error {
		r, err := scanDetectionRule(tx.QueryRowContext(ctx, `DELETE FROM detection_rules WHERE org_id = ? AND id = ? RETURNING `+detectionRuleCols, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("detection rule")
		}
		if err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditDetectionRule, id, r, nil)
	}))
}

// StarterRuleStates returns the starter rules org turned on or off.
func (s *Store) StarterRuleStates(ctx context.Context, org string) (map[string]bool, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT rule_id, enabled FROM starter_rule_states WHERE org_id = ?`, org)
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
	return wrap("SetStarterRuleState", s.tx(ctx, func(tx *wtx) error {
		var before *bool
		err := tx.QueryRowContext(ctx, `SELECT enabled FROM starter_rule_states WHERE org_id = ? AND rule_id = ?`, org, id).Scan(&before)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO starter_rule_states (org_id, rule_id, enabled, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (org_id, rule_id) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`,
			org, id, enabled, nanos(now)); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditStarterRule, id, vigil.StarterRuleFields(before), vigil.StarterRuleFields(&enabled))
	}))
}
