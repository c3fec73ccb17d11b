// Package orgcache holds one value per org, read again after a TTL or
// at once after Invalidate: the per-org caches of suppressions and
// detection rules.
package orgcache

import (
	"context"
	"sync"
	"time"
)

// maxOrgs bounds the orgs a Cache holds before it forgets the stale ones.
const maxOrgs = 10000

// Cache keeps each org's value for at most its TTL. It is safe for
// concurrent use.
type Cache[T any] struct {
	ttl  time.Duration
	load func(ctx context.Context, org string) (T, error)

	mu   sync.Mutex
	orgs map[string]*entry[T]
}

type entry[T any] struct {
	val    T
	ok     bool // false: to be read again
	loaded time.Time
	gen    uint64 // advanced by Invalidate, so that a read begun before it is not kept
}

// New returns a Cache that reads an org's value with load and keeps it
// for ttl.
func New[T any](ttl time.Duration, load func(ctx context.Context, org string) (T, error)) *Cache[T] {
	return &Cache[T]{ttl: ttl, load: load, orgs: map[string]*entry[T]{}}
}

// Invalidate forgets org's value: the next Get reads it again.
func (c *Cache[T]) Invalidate(org string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.orgs[org]
	if e == nil {
		e = &entry[T]{}
		c.orgs[org] = e
	}
	var zero T
	e.val, e.ok = zero, false
	e.gen++
}

// Get returns org's value as of now, reading it when it is missing,
// older than the TTL or invalidated. The read runs without the lock; a
// value read while an Invalidate happened is returned but not kept.
func (c *Cache[T]) Get(ctx context.Context, org string, now time.Time) (T, error) {
	c.mu.Lock()
	e := c.orgs[org]
	if e != nil && e.ok && now.Sub(e.loaded) < c.ttl {
		v := e.val
		c.mu.Unlock()
		return v, nil
	}
	var gen uint64
	if e != nil {
		gen = e.gen
	}
	c.mu.Unlock()

	v, err := c.load(ctx, org)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.orgs) >= maxOrgs {
		for k, x := range c.orgs {
			if !x.ok || now.Sub(x.loaded) >= c.ttl {
				delete(c.orgs, k)
			}
		}
	}
	if e = c.orgs[org]; e == nil {
		e = &entry[T]{}
		c.orgs[org] = e
	}
	if e.gen == gen {
		e.val, e.ok, e.loaded = v, true, now
	}
	return v, nil
}
