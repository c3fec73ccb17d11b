package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-soc/vigil"
)

const suppressionCols = `id, org_id, name, enabled, reason, conditions, expires_at, suppressed_count, last_suppressed_at,
	created_by, created_at, updated_at`

func scanSuppression(row interface{ Scan(...any) error }) (*vigil.Suppression, error) {
	var s vigil.Suppression
	var cond string
	var expires, last sql.NullInt64
	var created, updated int64
	if err := row.Scan(&s.ID, &s.OrgID, &s.Name, &s.Enabled, &s.Reason, &cond, &expires, &s.SuppressedCount, &last,
		&s.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	s.Conditions = json.RawMessage(cond)
	s.ExpiresAt, s.LastSuppressedAt = timePtr(expires), timePtr(last)
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &s, nil
}

func timePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// CreateSuppression stores a suppression of org, unless org already has
// vigil.MaxSuppressions.
func (s *Store) CreateSuppression(ctx context.Context, org string, sp *vigil.Suppression) error {
	sp.OrgID = org
	sp.SuppressedCount, sp.LastSuppressedAt = 0, nil
	return wrap("CreateSuppression", s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO suppressions (`+suppressionCols+`)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, NULL, ?8, ?9, ?10
			WHERE (SELECT COUNT(*) FROM suppressions WHERE org_id = ?2) < ?11`,
			sp.ID, org, sp.Name, sp.Enabled, sp.Reason, string(sp.Conditions), nullNanos(sp.ExpiresAt),
			sp.CreatedBy, nanos(sp.CreatedAt), nanos(sp.UpdatedAt), vigil.MaxSuppressions)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d suppressions; delete some first", vigil.MaxSuppressions)
		}
		return vigil.Audit(ctx, org, vigil.AuditSuppression, sp.ID, nil, sp)
	}))
}

// GetSuppression returns one suppression of org.
func (s *Store) GetSuppression(ctx context.Context, org, id string) (*vigil.Suppression, error) {
	sp, err := scanSuppression(s.r.QueryRowContext(ctx, `SELECT `+suppressionCols+` FROM suppressions WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("suppression")
	}
	return sp, wrap("GetSuppression", err)
}

// ListSuppressions returns a page of org's suppressions, newest first.
func (s *Store) ListSuppressions(ctx context.Context, org string, p vigil.Page) ([]*vigil.Suppression, int, error) {
	out, total, err := orgPage(ctx, s.r, "suppressions", suppressionCols, "created_at DESC, id DESC", scanSuppression, org, p)
	return out, total, wrap("ListSuppressions", err)
}

// UpdateSuppression applies a partial update to a suppression of org.
func (s *Store) UpdateSuppression(ctx context.Context, org, id string, u vigil.SuppressionUpdate, now time.Time) (*vigil.Suppression, error) {
	var out *vigil.Suppression
	err := s.tx(ctx, func(tx *wtx) error {
		sp, err := scanSuppression(tx.QueryRowContext(ctx, `SELECT `+suppressionCols+` FROM suppressions WHERE org_id = ? AND id = ?`, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("suppression")
		}
		if err != nil {
			return err
		}
		before := *sp
		u.Apply(sp)
		sp.UpdatedAt = now
		if _, err = tx.ExecContext(ctx, `UPDATE suppressions SET name = ?, enabled = ?, reason = ?, conditions = ?, expires_at = ?,
			updated_at = ? WHERE org_id = ? AND id = ?`,
			sp.Name, sp.Enabled, sp.Reason, string(sp.Conditions), nullNanos(sp.ExpiresAt), nanos(now), org, id); err != nil {
			return err
		}
		out = sp
		return vigil.Audit(ctx, org, vigil.AuditSuppression, id, &before, sp)
	})
	return out, wrap("UpdateSuppression", err)
}

// DeleteSuppression removes a suppression of org and the record of what
// it swallowed.
func (s *Store) DeleteSuppression(ctx context.Context, org, id string) error {
	return wrap("DeleteSuppression", s.tx(ctx, func(tx *wtx) error {
		sp, err := scanSuppression(tx.QueryRowContext(ctx, `DELETE FROM suppressions WHERE org_id = ? AND id = ? RETURNING `+suppressionCols, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("suppression")
		}
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `DELETE FROM suppressed_signals WHERE org_id = ? AND suppression_id = ?`, org, id); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditSuppression, id, sp, nil)
	}))
}

// CountSuppressed records hits once per (suppression, detector, key,
// artifact) and adds the new ones to their suppressions' counts.
func (s *Store) CountSuppressed(ctx context.Context, org string, hits []vigil.SuppressedSignal, now time.Time) ([]vigil.SuppressedSignal, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	rows := make([][4]string, len(hits))
	for i, h := range hits {
		rows[i] = [4]string{h.SuppressionID, h.Detector, h.Key, h.ArtifactID}
	}
	body, _ := json.Marshal(rows)
	var fresh []vigil.SuppressedSignal
	err := s.tx(ctx, func(tx *wtx) error {
		fresh = fresh[:0]
		rs, err := tx.QueryContext(ctx, `INSERT INTO suppressed_signals (org_id, suppression_id, detector, key, artifact_id, at)
			SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, ?2 FROM json_each(?3) j
			WHERE EXISTS (SELECT 1 FROM suppressions s WHERE s.org_id = ?1 AND s.id = j.value ->> 0)
			ON CONFLICT DO NOTHING
			RETURNING suppression_id, detector, key, artifact_id`, org, nanos(now), string(body))
		if err != nil {
			return err
		}
		defer rs.Close()
		counts := map[string]int{}
		for rs.Next() {
			var h vigil.SuppressedSignal
			if err := rs.Scan(&h.SuppressionID, &h.Detector, &h.Key, &h.ArtifactID); err != nil {
				return err
			}
			fresh = append(fresh, h)
			counts[h.SuppressionID]++
		}
		if err := rs.Err(); err != nil {
			return err
		}
		rs.Close()
		for id, n := range counts {
			if _, err := tx.ExecContext(ctx, `UPDATE suppressions SET suppressed_count = suppressed_count + ?1,
				last_suppressed_at = MAX(COALESCE(last_suppressed_at, ?2), ?2) WHERE org_id = ?3 AND id = ?4`, n, nanos(now), org, id); err != nil {
				return fmt.Errorf("count: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("CountSuppressed", err)
	}
	return fresh, nil
}
