package enrich

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// The cache of outbound look-ups lives in the store (vigil.CacheEntry), so
// that it survives restarts and is shared by every worker process. Entries
// are per (provider, key), not per org: each org judges an entry's age
// against its own cache_ttl_hours. In front of the store sits memCache, a
// bounded in-process copy, so that a batch of artifacts naming the same
// busy addresses costs no store reads.

// memCacheSize bounds the in-process copy (entries are ~200 bytes).
const memCacheSize = 100_000

type cacheKey struct{ provider, key string }

type memCache struct {
	mu  sync.RWMutex
	m   map[cacheKey]*vigil.CacheEntry
	max int
}

func newMemCache(max int) *memCache {
	return &memCache{m: map[cacheKey]*vigil.CacheEntry{}, max: max}
}

func (c *memCache) get(provider, key string) *vigil.CacheEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[cacheKey{provider, key}]
}

// put keeps e unless a newer entry for its key is already held. When full
// it forgets an arbitrary eighth of the entries: they are still in the
// store.
func (c *memCache) put(e *vigil.CacheEntry) {
	k := cacheKey{e.Provider, e.Key}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.m[k]; ok && cur.FetchedAt.After(e.FetchedAt) {
		return
	}
	if len(c.m) >= c.max {
		n := c.max / 8
		for k := range c.m {
			if n <= 0 {
				break
			}
			delete(c.m, k)
			n--
		}
	}
	c.m[k] = e
}

// freshness decides which cache entries may be used.
type freshness struct {
	now    time.Time
	ttl    time.Duration // the org's cache_ttl_hours
	negTTL time.Duration // failures, whatever the org's TTL
	// since: entries fetched at or after it are used whatever their age;
	// set when refreshing an artifact, whose look-ups were made for it.
	since time.Time
}

// fresh reports whether e is usable: a positive entry younger than the
// org's TTL, a negative one younger than the fixed negative TTL.
func (f freshness) fresh(e *vigil.CacheEntry) bool {
	if e == nil {
		return false
	}
	if e.Negative {
		return e.FetchedAt.After(f.now.Add(-f.negTTL))
	}
	if !f.since.IsZero() && !e.FetchedAt.Before(f.since) {
		return true
	}
	return e.FetchedAt.After(f.now.Add(-f.ttl))
}

// cacheGet returns the entry of (provider, key) and whether it is fresh,
// from memory or else the store. A store error counts as a miss.
func (e *Enricher) cacheGet(ctx context.Context, provider, key string, f freshness) (*vigil.CacheEntry, bool) {
	if ent := e.mem.get(provider, key); f.fresh(ent) {
		return ent, true
	}
	ent, err := e.store.CacheGet(ctx, provider, key)
	if err != nil {
		if ctx.Err() == nil { // a stopping server's queued look-ups are no failure
			e.log.Warn("enrichment cache read failed", slog.String("provider", provider), slog.Any("error", err))
		}
		return nil, false
	}
	if ent == nil {
		return nil, false
	}
	e.mem.put(ent)
	return ent, f.fresh(ent)
}

// cachePut records a look-up in memory and in the store. A store error is
// logged: the result is still used for the artifacts waiting for it.
func (e *Enricher) cachePut(ctx context.Context, ent *vigil.CacheEntry) {
	e.mem.put(ent)
	if err := e.store.CachePut(ctx, ent); err != nil && ctx.Err() == nil {
		e.log.Warn("enrichment cache write failed", slog.String("provider", ent.Provider), slog.Any("error", err))
	}
}
