package sqlite

import "sync"

// grownNodes remembers, for the observations that bursts grew, the
// nodes a growth wrote to them and which of those it made keys, so that
// a growth bringing only nodes its observation already has, each a key
// where it asks for one, writes no row (growNodes). A growing burst
// names the same host and account at every batch: on the Windows mix
// with the starter Sigma rules that statement was a tenth of
// correlation's time, and changed nothing. It is a cache of what the
// store holds, which one process alone writes (correlate.Tallied):
// forgotten for an observation whose nodes a transaction replaces or
// deletes (UpdateObservation, DeleteObservation), and for those a
// transaction touched that did not commit.
type grownNodes struct {
	mu sync.Mutex
	m  map[string]map[string]bool // observation id → node id → a key
}

// grownMax bounds the observations remembered: past it, all are
// forgotten (each is learned again at its next growth).
const grownMax = 20000

// has reports whether observation obs is known to have every node of
// ids, a key where keys marks one.
func (c *grownNodes) has(obs string, ids []string, keys map[string]bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	known := c.m[obs]
	if known == nil {
		return false
	}
	for _, id := range ids {
		key, ok := known[id]
		if !ok || keys[id] && !key {
			return false
		}
	}
	return true
}

// add records that observation obs has the nodes ids, keys those that
// keys marks (at least).
func (c *grownNodes) add(obs string, ids []string, keys map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= grownMax {
		c.m = map[string]map[string]bool{}
	}
	known := c.m[obs]
	if known == nil {
		known = make(map[string]bool, len(ids))
		c.m[obs] = known
	}
	for _, id := range ids {
		known[id] = known[id] || keys[id]
	}
}

// forget drops what is known of the observations obs.
func (c *grownNodes) forget(obs []string) {
	if len(obs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range obs {
		delete(c.m, o)
	}
}
