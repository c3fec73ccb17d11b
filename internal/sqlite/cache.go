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

// cacheGetSQL reads a cached look-up.
const cacheGetSQL = `SELECT value, negative, fetched_at FROM enrich_cache WHERE provider = ? AND key = ?`

// CacheGet returns the cached look-up of (provider, key), or nil. The
// enricher asks once per new address (its background check), tens of
// thousands a minute on an internet edge: the statement is prepared once
// on each reader connection, not once per call (preparing was ≈ 40 % of
// its CPU).
func (s *Store) CacheGet(ctx context.Context, provider, key string) (*vigil.CacheEntry, error) {
	e := vigil.CacheEntry{Provider: provider, Key: key}
	var value sql.NullString
	var fetched int64
	s.cacheGet.once.Do(func() {
		// Without one (an error here), each call prepares its own.
		s.cacheGet.st, _ = s.r.PrepareContext(context.WithoutCancel(ctx), cacheGetSQL)
	})
	var row *sql.Row
	if s.cacheGet.st != nil {
		row = s.cacheGet.st.QueryRowContext(ctx, provider, key)
	} else {
		row = s.r.QueryRowContext(ctx, cacheGetSQL, provider, key)
	}
	err := row.Scan(&value, &e.Negative, &fetched)
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
