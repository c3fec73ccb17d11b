package sqlite

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"sync"
	"unique"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// newestCache keeps the newest signals of the (detector, key)s whose
// bursts grow, so that a burst growing at every batch is described from
// memory: reading its newest thousand signals again at every batch was a
// third of the growth's cost (docs/benchmarks.md, issue 18).
//
// An entry holds every signal of its key from its bound on, in the
// table's order (time, then artifact): it is filled by a read of the
// table and kept whole by RecordSignals, which adds each signal it
// records. That holds because this process alone
// writes the database (its data directory's lock) and every write of
// detect_signals goes through a transaction of Store.tx, which a reader
// of the cache is in too: the cache changes with the transactions in
// the order they commit. A transaction that does not commit drops every
// entry it read or changed; a prune drops them all.
type newestCache struct {
	mu      sync.Mutex
	entries map[signalKey]*newestEntry
	rows    int    // the signals of all entries
	total   int    // at most this many
	clock   uint64 // for least recently used
}

type signalKey struct {
	org string
	correlate.DetectionKey
}

type newestEntry struct {
	// bound: every signal of the key from bound on (by compareCached) is
	// in sigs. Its at and artifact only count: a bound within one time
	// keeps a burst of thousands of signals a second (a fast scan)
	// cached, where a bound on times alone would drop them all.
	bound cachedSignal
	sigs  []cachedSignal // sorted by compareCached, none before bound
	used  uint64
}

// whole reports whether e holds every signal of its key at or after at.
func (e *newestEntry) whole(at int64) bool {
	return e.bound.at < at || e.bound.at == at && e.bound.artifact == [16]byte{}
}

// cachedSignal is a signal in 40 bytes: its artifact id is a canonical
// UUID's bytes (a key with any other id is not cached) and its member
// shared by every signal that names it.
type cachedSignal struct {
	at       int64
	artifact [16]byte
	member   unique.Handle[string]
	weight   int32
}

// cachedOf returns sg as cached, false when its id is not a canonical
// UUID.
func cachedOf(at int64, artifact, member string, weight int) (cachedSignal, bool) {
	id, ok := correlate.CanonicalUUID(artifact)
	return cachedSignal{at: at, artifact: id, member: unique.Make(member), weight: int32(min(max(weight, math.MinInt32), math.MaxInt32))}, ok
}

const (
	// newestTotal bounds the signals cached, 40 bytes each (about 64 with
	// the slices' room to grow): the least recently used keys go first. The dataset replay grows about
	// a thousand bursts at once, most of a few signals.
	newestTotal = 1 << 17
	// newestRows bounds the signals an entry holds, its oldest dropped
	// first; it must exceed what a grow reads (correlate's maxGrowScan,
	// 1,000) for the cache to answer a burst of more signals.
	newestRows = 1536
)

func newNewestCache(total int) *newestCache {
	return &newestCache{entries: map[signalKey]*newestEntry{}, total: total}
}

// newest returns the newest limit signals of k in [from, to], newest
// first, as the table would (equal times: the greater artifact id
// first), and false when the entry cannot tell them all.
func (c *newestCache) newest(k signalKey, from, to int64, limit int) ([]vigil.Signal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e == nil {
		return nil, false
	}
	c.clock++
	e.used = c.clock
	// sigs[lo:hi] are the entry's signals in [from, to].
	hi := atOrAfter(e.sigs, to+1)
	lo := min(atOrAfter(e.sigs, from), hi)
	if !e.whole(from) && hi-lo < limit {
		return nil, false // signals before the bound would be among them
	}
	lo = max(lo, hi-limit)
	out := make([]vigil.Signal, 0, hi-lo)
	for i := hi - 1; i >= lo; i-- {
		out = append(out, e.sigs[i].signal())
	}
	return out, true
}

// oldest returns the oldest limit signals of k at or after from, oldest
// first, as the table would (equal times: the smaller artifact id
// first), and false when the entry cannot tell them all.
func (c *newestCache) oldest(k signalKey, from int64, limit int) ([]vigil.Signal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e == nil || !e.whole(from) {
		return nil, false
	}
	c.clock++
	e.used = c.clock
	lo := atOrAfter(e.sigs, from)
	hi := min(len(e.sigs), lo+limit)
	out := make([]vigil.Signal, 0, hi-lo)
	for _, s := range e.sigs[lo:hi] {
		out = append(out, s.signal())
	}
	return out, true
}

func (s cachedSignal) signal() vigil.Signal {
	return vigil.Signal{At: fromNanos(s.at), Member: s.member.Value(), Count: int(s.weight), Evidence: s.weight == 0}
}

// fill makes the entry of k from rows read in one transaction: the
// newest signals of k at or after from, newest first, at most newestRows
// of them.
func (c *newestCache) fill(k signalKey, from int64, rows []cachedSignal) {
	e := &newestEntry{bound: cachedSignal{at: from}, sigs: rows}
	slices.Reverse(e.sigs)
	if len(e.sigs) > 0 && len(e.sigs) >= newestRows {
		e.bound = e.sigs[0] // older signals may go on below the limit
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	e.used = c.clock
	c.put(k, e)
}

// put sets the entry of k, and keeps the signals within c.total.
func (c *newestCache) put(k signalKey, e *newestEntry) {
	if old := c.entries[k]; old != nil {
		c.rows -= len(old.sigs)
	}
	c.entries[k] = e
	c.rows += len(e.sigs)
	c.shrink()
}

// shrink drops the least recently used entries while the signals exceed
// c.total.
func (c *newestCache) shrink() {
	if c.rows <= c.total {
		return
	}
	// The least recently used eighth of the keys go at once, so that
	// keeping within the bound costs little per entry made.
	used := make([]uint64, 0, len(c.entries))
	for _, e := range c.entries {
		used = append(used, e.used)
	}
	slices.Sort(used)
	before := used[len(used)/8]
	for k, e := range c.entries {
		if e.used <= before || c.rows > c.total && e.used < c.clock {
			c.rows -= len(e.sigs)
			delete(c.entries, k)
		}
	}
}

// add records signals of k that the table now holds, when k is cached,
// and reports whether it was.
// holds reports whether c has an entry of k.
func (c *newestCache) holds(k signalKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[k] != nil
}

func (c *newestCache) add(k signalKey, sigs []vigil.Signal) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e == nil {
		return false
	}
	n := len(e.sigs)
	c.clock++
	e.used = c.clock
	for _, sg := range sigs {
		s, ok := cachedOf(nanos(sg.At), sg.ArtifactID, sg.Member, sg.Weight())
		if !ok { // a key with an id that is no UUID is not cached
			c.rows -= n
			delete(c.entries, k)
			return true
		}
		if compareCached(s, e.bound) >= 0 {
			e.sigs = append(e.sigs, s)
		}
	}
	// A growing burst's signals mostly come after the ones it has.
	if !slices.IsSortedFunc(e.sigs[max(n-1, 0):], compareCached) {
		slices.SortFunc(e.sigs, compareCached)
	}
	if over := len(e.sigs) - newestRows; over > 0 {
		e.sigs = slices.Delete(e.sigs, 0, over)
		e.bound = e.sigs[0]
	}
	c.rows += len(e.sigs) - n
	c.shrink()
	return true
}

// atOrAfter returns the index of the first of sigs at or after at.
func atOrAfter(sigs []cachedSignal, at int64) int {
	i, _ := slices.BinarySearchFunc(sigs, at, func(s cachedSignal, at int64) int { return cmp.Compare(s.at, at) })
	return i
}

func compareCached(a, b cachedSignal) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return bytes.Compare(a.artifact[:], b.artifact[:])
}

// forget drops the entries of keys.
func (c *newestCache) forget(keys []signalKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if e := c.entries[k]; e != nil {
			c.rows -= len(e.sigs)
			delete(c.entries, k)
		}
	}
}

// clear drops every entry.
func (c *newestCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.rows = 0
}
