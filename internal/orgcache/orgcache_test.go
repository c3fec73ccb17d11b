package orgcache

import (
	"context"
	"testing"
	"time"
)

func TestCacheReadsAgainAfterTTLAndInvalidate(t *testing.T) {
	ctx := context.Background()
	reads := 0
	var c *Cache[int]
	invalidateDuringRead := false
	c = New(10*time.Second, func(_ context.Context, org string) (int, error) {
		reads++
		if invalidateDuringRead {
			invalidateDuringRead = false
			c.Invalidate(org)
		}
		return reads, nil
	})
	t0 := time.Unix(1000, 0)
	steps := []struct {
		name       string
		at         time.Duration
		invalidate bool
		during     bool
		want       int
	}{
		{"first read", 0, false, false, 1},
		{"within the TTL: kept", 5 * time.Second, false, false, 1},
		{"past the TTL: read again", 11 * time.Second, false, false, 2},
		{"invalidated: read again", 12 * time.Second, true, false, 3},
		{"invalidated while reading: returned, not kept", 13 * time.Second, true, true, 4},
		{"so the next get reads again", 14 * time.Second, false, false, 5},
		{"and that one is kept", 15 * time.Second, false, false, 5},
	}
	for _, s := range steps {
		if s.invalidate {
			c.Invalidate("acme")
		}
		invalidateDuringRead = s.during
		got, err := c.Get(ctx, "acme", t0.Add(s.at))
		if err != nil || got != s.want {
			t.Fatalf("%s: got %d, %v; want %d", s.name, got, err, s.want)
		}
	}
}
