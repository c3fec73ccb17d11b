package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/vigil-soc/vigil"
)

const apiKeyCols = `id, org_id, name, permissions, hash, created_by, created_at, last_used_at, revoked_at`

func scanAPIKey(row interface{ Scan(...any) error }) (*vigil.APIKey, error) {
	var k vigil.APIKey
	var perms string
	var created int64
	var used, revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.OrgID, &k.Name, &perms, &k.Hash, &k.CreatedBy, &created, &used, &revoked); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(perms), &k.Permissions); err != nil {
		return nil, err
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = fromNanos(created), timePtr(used), timePtr(revoked)
	return &k, nil
}

// CreateAPIKey stores a key of org, unless org already has
// vigil.MaxAPIKeys.
func (s *Store) CreateAPIKey(ctx context.Context, org string, k *vigil.APIKey) error {
	k.OrgID = org
	perms, _ := json.Marshal(k.Permissions)
	k.LastUsedAt, k.RevokedAt = nil, nil
	return wrap("CreateAPIKey", s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO api_keys (`+apiKeyCols+`)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, NULL
			WHERE (SELECT COUNT(*) FROM api_keys WHERE org_id = ?2) < ?8`,
			k.ID, org, k.Name, string(perms), k.Hash, k.CreatedBy, nanos(k.CreatedAt), vigil.MaxAPIKeys)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d API keys, revoked ones included", vigil.MaxAPIKeys)
		}
		return vigil.Audit(ctx, org, vigil.AuditAPIKey, k.ID, nil, k)
	}))
}

// GetAPIKey returns one key of org.
func (s *Store) GetAPIKey(ctx context.Context, org, id string) (*vigil.APIKey, error) {
	k, err := scanAPIKey(s.r.QueryRowContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("API key")
	}
	return k, wrap("GetAPIKey", err)
}

// ListAPIKeys returns a page of org's keys, newest first.
func (s *Store) ListAPIKeys(ctx context.Context, org string, p vigil.Page) ([]*vigil.APIKey, int, error) {
	out, total, err := orgPage(ctx, s.r, "api_keys", apiKeyCols, "created_at DESC, id DESC", scanAPIKey, org, p)
	return out, total, wrap("ListAPIKeys", err)
}

// RevokeAPIKey marks a key of org revoked at now, once.
func (s *Store) RevokeAPIKey(ctx context.Context, org, id string, now time.Time) (*vigil.APIKey, error) {
	var out *vigil.APIKey
	err := s.tx(ctx, func(tx *wtx) error {
		k, err := scanAPIKey(tx.QueryRowContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE org_id = ? AND id = ?`, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("API key")
		}
		if err != nil {
			return err
		}
		out = k
		if k.RevokedAt != nil {
			return nil
		}
		before := *k
		at := fromNanos(nanos(now))
		k.RevokedAt = &at
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND id = ?`, nanos(now), org, id); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditAPIKey, id, &before, k)
	})
	if err != nil {
		return nil, wrap("RevokeAPIKey", err)
	}
	return out, nil
}

// LookupAPIKey returns the key with id, of whichever org.
func (s *Store) LookupAPIKey(ctx context.Context, id string) (*vigil.APIKey, error) {
	k, err := scanAPIKey(s.r.QueryRowContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("API key")
	}
	return k, wrap("LookupAPIKey", err)
}

// TouchAPIKey moves a key's last use forward to t.
func (s *Store) TouchAPIKey(ctx context.Context, org, id string, t time.Time) error {
	_, err := s.w.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?1
		WHERE org_id = ?2 AND id = ?3 AND (last_used_at IS NULL OR last_used_at < ?1)`, nanos(t), org, id)
	return wrap("TouchAPIKey", err)
}
