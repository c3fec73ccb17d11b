package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

const suppressionCols = `id, org_id, name, enabled, reason, conditions::text, expires_at, suppressed_count, last_suppressed_at,
	created_by, created_at, updated_at`

func scanSuppression(row pgx.Row) (*vigil.Suppression, error) {
	var s vigil.Suppression
	var cond string
	var expires, last *int64
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

func timePtr(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := fromNanos(*n)
	return &t
}

func nanosPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// CreateSuppression stores a suppression of org, unless org already has
// vigil.MaxSuppressions. Creations in one org take turns (an advisory
// lock on the org), so that two at once cannot both pass the limit.
func (s *Store) CreateSuppression(ctx context.Context, org string, sp *vigil.Suppression) error {
	sp.OrgID = org
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vigil/suppressions/' || $1, 0))`, org); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO suppressions (id, org_id, name, enabled, reason, conditions, expires_at,
			suppressed_count, last_suppressed_at, created_by, created_at, updated_at)
			SELECT $1, $2, $3, $4, $5, $6::text::json, $7, 0, NULL, $8, $9, $10
			WHERE (SELECT COUNT(*) FROM suppressions WHERE org_id = $2) < $11`,
			sp.ID, org, sp.Name, sp.Enabled, sp.Reason, string(sp.Conditions), nanosPtr(sp.ExpiresAt),
			sp.CreatedBy, nanos(sp.CreatedAt), nanos(sp.UpdatedAt), vigil.MaxSuppressions)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d suppressions; delete some first", vigil.MaxSuppressions)
		}
		sp.SuppressedCount, sp.LastSuppressedAt = 0, nil
		return vigil.Audit(ctx, org, vigil.AuditSuppression, sp.ID, nil, sp)
	})
	return wrap("CreateSuppression", err)
}

// GetSuppression returns one suppression of org.
func (s *Store) GetSuppression(ctx context.Context, org, id string) (*vigil.Suppression, error) {
	sp, err := scanSuppression(s.pool.QueryRow(ctx, `SELECT `+suppressionCols+` FROM suppressions WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, wrap("GetSuppression", notFound(err, "suppression"))
	}
	return sp, nil
}

// ListSuppressions returns a page of org's suppressions, newest first.
func (s *Store) ListSuppressions(ctx context.Context, org string, p vigil.Page) ([]*vigil.Suppression, int, error) {
	out, total, err := orgPage(ctx, s.pool, "suppressions", suppressionCols, "created_at DESC, id DESC", scanSuppression, org, p)
	return out, total, wrap("ListSuppressions", err)
}

// UpdateSuppression applies a partial update to a suppression of org.
func (s *Store) UpdateSuppression(ctx context.Context, org, id string, u vigil.SuppressionUpdate, now time.Time) (*vigil.Suppression, error) {
	var out *vigil.Suppression
	err := s.tx(ctx, func(tx pgx.Tx) error {
		sp, err := scanSuppression(tx.QueryRow(ctx, `SELECT `+suppressionCols+` FROM suppressions WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id))
		if err != nil {
			return notFound(err, "suppression")
		}
		before := *sp
		u.Apply(sp)
		sp.UpdatedAt = now
		if _, err := tx.Exec(ctx, `UPDATE suppressions SET name = $1, enabled = $2, reason = $3, conditions = $4::text::json,
			expires_at = $5, updated_at = $6 WHERE org_id = $7 AND id = $8`,
			sp.Name, sp.Enabled, sp.Reason, string(sp.Conditions), nanosPtr(sp.ExpiresAt), nanos(now), org, id); err != nil {
			return err
		}
		out = sp
		return vigil.Audit(ctx, org, vigil.AuditSuppression, id, &before, sp)
	})
	if err != nil {
		return nil, wrap("UpdateSuppression", err)
	}
	return out, nil
}

// DeleteSuppression removes a suppression of org and the record of what
// it swallowed.
func (s *Store) DeleteSuppression(ctx context.Context, org, id string) error {
	return wrap("DeleteSuppression", s.tx(ctx, func(tx pgx.Tx) error {
		sp, err := scanSuppression(tx.QueryRow(ctx, `DELETE FROM suppressions WHERE org_id = $1 AND id = $2 RETURNING `+suppressionCols, org, id))
		if err != nil {
			return notFound(err, "suppression")
		}
		if _, err = tx.Exec(ctx, `DELETE FROM suppressed_signals WHERE org_id = $1 AND suppression_id = $2`, org, id); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditSuppression, id, sp, nil)
	}))
}

// CountSuppressed records hits once per (suppression, detector, key,
// artifact) and adds the new ones to their suppressions' counts, in one
// statement.
func (s *Store) CountSuppressed(ctx context.Context, org string, hits []vigil.SuppressedSignal, now time.Time) ([]vigil.SuppressedSignal, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	sids := make([]string, len(hits))
	dets := make([]string, len(hits))
	keys := make([]string, len(hits))
	arts := make([]string, len(hits))
	for i, h := range hits {
		sids[i], dets[i], keys[i], arts[i] = h.SuppressionID, h.Detector, h.Key, h.ArtifactID
	}
	var fresh []vigil.SuppressedSignal
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH fresh AS (
				INSERT INTO suppressed_signals (org_id, suppression_id, detector, key, artifact_id, at)
				SELECT $1, h.s, h.d, h.k, h.a, $2 FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS h(s, d, k, a)
				WHERE EXISTS (SELECT 1 FROM suppressions x WHERE x.org_id = $1 AND x.id = h.s)
				ON CONFLICT DO NOTHING
				RETURNING suppression_id, detector, key, artifact_id),
			counted AS (
				UPDATE suppressions x SET suppressed_count = x.suppressed_count + c.n,
					last_suppressed_at = GREATEST(COALESCE(x.last_suppressed_at, $2), $2)
				FROM (SELECT suppression_id, COUNT(*) AS n FROM fresh GROUP BY suppression_id) c
				WHERE x.org_id = $1 AND x.id = c.suppression_id)
			SELECT suppression_id, detector, key, artifact_id FROM fresh`,
			org, nanos(now), sids, dets, keys, arts)
		if err != nil {
			return err
		}
		fresh, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.SuppressedSignal, error) {
			var h vigil.SuppressedSignal
			err := r.Scan(&h.SuppressionID, &h.Detector, &h.Key, &h.ArtifactID)
			return h, err
		})
		return err
	})
	if err != nil {
		return nil, wrap("CountSuppressed", err)
	}
	return fresh, nil
}
