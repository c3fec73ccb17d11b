package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

const apiKeyCols = `id, org_id, name, permissions, hash, created_by, created_at, last_used_at, revoked_at`

func scanAPIKey(row pgx.Row) (*vigil.APIKey, error) {
	var k vigil.APIKey
	var created int64
	var used, revoked *int64
	if err := row.Scan(&k.ID, &k.OrgID, &k.Name, &k.Permissions, &k.Hash, &k.CreatedBy, &created, &used, &revoked); err != nil {
		return nil, err
	}
	k.Permissions = perms(k.Permissions)
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = fromNanos(created), timePtr(used), timePtr(revoked)
	return &k, nil
}

// CreateAPIKey stores a key of org, unless org already has
// vigil.MaxAPIKeys. Creations in one org take turns (an advisory lock on
// the org), so that two at once cannot both pass the limit.
func (s *Store) CreateAPIKey(ctx context.Context, org string, k *vigil.APIKey) error {
	k.OrgID = org
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vigil/api_keys/' || $1, 0))`, org); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO api_keys (`+apiKeyCols+`)
			SELECT $1, $2, $3, $4, $5, $6, $7, NULL, NULL
			WHERE (SELECT COUNT(*) FROM api_keys WHERE org_id = $2) < $8`,
			k.ID, org, k.Name, perms(k.Permissions), k.Hash, k.CreatedBy, nanos(k.CreatedAt), vigil.MaxAPIKeys)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return vigil.Errorf(vigil.ECONFLICT, "an organization has at most %d API keys, revoked ones included", vigil.MaxAPIKeys)
		}
		k.LastUsedAt, k.RevokedAt = nil, nil
		return vigil.Audit(ctx, org, vigil.AuditAPIKey, k.ID, nil, k)
	})
	return wrap("CreateAPIKey", err)
}

// GetAPIKey returns one key of org.
func (s *Store) GetAPIKey(ctx context.Context, org, id string) (*vigil.APIKey, error) {
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, wrap("GetAPIKey", notFound(err, "API key"))
	}
	return k, nil
}

// ListAPIKeys returns a page of org's keys, newest first.
func (s *Store) ListAPIKeys(ctx context.Context, org string, p vigil.Page) ([]*vigil.APIKey, int, error) {
	out, total, err := orgPage(ctx, s.pool, "api_keys", apiKeyCols, "created_at DESC, id DESC", scanAPIKey, org, p)
	return out, total, wrap("ListAPIKeys", err)
}

// RevokeAPIKey marks a key of org revoked at now, once.
func (s *Store) RevokeAPIKey(ctx context.Context, org, id string, now time.Time) (*vigil.APIKey, error) {
	var out *vigil.APIKey
	err := s.tx(ctx, func(tx pgx.Tx) error {
		k, err := scanAPIKey(tx.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id))
		if err != nil {
			return notFound(err, "API key")
		}
		out = k
		if k.RevokedAt != nil {
			return nil
		}
		before := *k
		at := fromNanos(nanos(now))
		k.RevokedAt = &at
		if _, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE org_id = $2 AND id = $3`, nanos(now), org, id); err != nil {
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
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE id = $1`, id))
	if err != nil {
		return nil, wrap("LookupAPIKey", notFound(err, "API key"))
	}
	return k, nil
}

// TouchAPIKey moves a key's last use forward to t.
func (s *Store) TouchAPIKey(ctx context.Context, org, id string, t time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = $1
		WHERE org_id = $2 AND id = $3 AND (last_used_at IS NULL OR last_used_at < $1)`, nanos(t), org, id)
	return wrap("TouchAPIKey", err)
}
