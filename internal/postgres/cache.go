package postgres

import (
	"context"
	"encoding/json"

	"github.com/vigil-soc/vigil"
)

// SetArtifactEnrichment records the enrichment of an artifact of org. As
// SetArtifactEvent, it finds the artifact's partition through artifact_ids.
func (s *Store) SetArtifactEnrichment(ctx context.Context, org, id string, enrichment json.RawMessage) error {
	_, err := s.pool.Exec(ctx, `UPDATE artifacts SET enrichment = $3::text::json WHERE org_id = $1 AND id = $2
		AND ts = (SELECT ts FROM artifact_ids WHERE org_id = $1 AND id = $2)`, org, id, jsonOrNull(enrichment))
	return wrap("SetArtifactEnrichment", err)
}

// CacheGet returns the cached look-up of (provider, key), or nil. Entries
// are public data shared by every org (vigil.CacheEntry), so the table has
// no org.
func (s *Store) CacheGet(ctx context.Context, provider, key string) (*vigil.CacheEntry, error) {
	e := vigil.CacheEntry{Provider: provider, Key: key}
	var value *string
	var fetched int64
	err := s.pool.QueryRow(ctx, `SELECT value::text, negative, fetched_at FROM enrich_cache WHERE provider = $1 AND key = $2`,
		provider, key).Scan(&value, &e.Negative, &fetched)
	if errNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("CacheGet", err)
	}
	if value != nil {
		e.Value = json.RawMessage(*value)
	}
	e.FetchedAt = fromNanos(fetched)
	return &e, nil
}

// CachePut stores or replaces a cached look-up.
func (s *Store) CachePut(ctx context.Context, e *vigil.CacheEntry) error {
	value := jsonOrNull(e.Value)
	_, err := s.pool.Exec(ctx, `INSERT INTO enrich_cache (provider, key, value, negative, fetched_at) VALUES ($1, $2, $3::text::json, $4, $5)
		ON CONFLICT (provider, key) DO UPDATE SET value = excluded.value, negative = excluded.negative, fetched_at = excluded.fetched_at`,
		e.Provider, e.Key, value, e.Negative, nanos(e.FetchedAt))
	return wrap("CachePut", err)
}
