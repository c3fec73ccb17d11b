package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/vigil-soc/vigil"
)

// SetArtifactEnrichment records the enrichment of an artifact of org.
func (s *Store) SetArtifactEnrichment(ctx context.Context, org, id string, enrichment json.RawMessage) error {
	_, err := s.w.ExecContext(ctx, `UPDATE artifacts SET enrichment = ? WHERE org_id = ? AND id = ?`, string(enrichment), org, id)
	return wrap("SetArtifactEnrichment", err)
}

// CacheGet returns the cached look-up of (provider, key), or nil.
func (s *Store) CacheGet(ctx context.Context, provider, key string) (*vigil.CacheEntry, error) {
	e := vigil.CacheEntry{Provider: provider, Key: key}
	var value sql.NullString
	var fetched int64
	err := s.r.QueryRowContext(ctx, `SELECT value, negative, fetched_at FROM enrich_cache WHERE provider = ? AND key = ?`,
		provider, key).Scan(&value, &e.Negative, &fetched)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("CacheGet", err)
	}
	if value.Valid {
		e.Value = json.RawMessage(value.String)
	}
	e.FetchedAt = fromNanos(fetched)
	return &e, nil
}

// CachePut stores or replaces a cached look-up.
func (s *Store) CachePut(ctx context.Context, e *vigil.CacheEntry) error {
	var value any
	if len(e.Value) > 0 {
		value = string(e.Value)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO enrich_cache (provider, key, value, negative, fetched_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (provider, key) DO UPDATE SET value = excluded.value, negative = excluded.negative, fetched_at = excluded.fetched_at`,
		e.Provider, e.Key, value, e.Negative, nanos(e.FetchedAt))
	return wrap("CachePut", err)
}
