package correlate

import (
	"hash/maphash"
	"time"
)

// goneKeys holds, compactly, the keys whose signals the store holds and
// whose last transaction committed: a 64-bit hash of each, per org,
// detector and slot of its newest signal's time, instead of a map entry
// of its own. On an internet-facing host most of them are scanning
// addresses spilled to the store when the Tally was full, never seen
// again; a map entry each (its key's three strings and a hotKey) took
// hundreds of megabytes at a few thousand new addresses a second. A key
// found here is routed to the store, as a hot key is; two keys sharing a
// hash only send one of them to the store without need, which counts it
// exactly all the same.
type goneKeys struct {
	seed  maphash.Seed
	slots map[goneSlot]map[uint64]struct{}
	n     int
}

type goneSlot struct {
	org, detector string
	slot          int64
}

// goneSlots is how many slots a horizon spans: a key is forgotten at most
// a slot's width after its horizon passed.
const goneSlots = 4

func newGoneKeys() goneKeys {
	return goneKeys{seed: maphash.MakeSeed(), slots: map[goneSlot]map[uint64]struct{}{}}
}

func (g *goneKeys) hash(tk tallyKey) uint64 {
	var h maphash.Hash
	h.SetSeed(g.seed)
	h.WriteString(tk.org)
	h.WriteByte(0)
	h.WriteString(tk.detector)
	h.WriteByte(0)
	h.WriteString(tk.key)
	return h.Sum64()
}

// width is the slots' width for keys whose horizon is horizon.
func width(horizon time.Duration) int64 { return max(int64(horizon)/goneSlots, int64(time.Second)) }

// add records tk, its newest signal at newest (Unix nanoseconds).
func (g *goneKeys) add(tk tallyKey, newest int64, horizon time.Duration) {
	s := goneSlot{tk.org, tk.detector, newest / width(horizon)}
	m := g.slots[s]
	if m == nil {
		m = map[uint64]struct{}{}
		g.slots[s] = m
	}
	h := g.hash(tk)
	if _, ok := m[h]; !ok {
		m[h] = struct{}{}
		g.n++
	}
}

// has reports whether tk may be among the keys recorded with a newest
// signal within horizon of mark (Unix nanoseconds): the newest signal of
// its org and detector.
func (g *goneKeys) has(tk tallyKey, mark int64, horizon time.Duration) bool {
	if g.n == 0 {
		return false
	}
	w := width(horizon)
	h := g.hash(tk)
	for s := (mark - int64(horizon)) / w; s <= mark/w; s++ {
		if _, ok := g.slots[goneSlot{tk.org, tk.detector, s}][h]; ok {
			return true
		}
	}
	return false
}

// expire forgets the slots wholly before their detector's horizon
// (horizon returns it, and the newest signal of the org and detector).
func (g *goneKeys) expire(horizon func(org, detector string) (time.Duration, int64, bool)) {
	for s, m := range g.slots {
		h, mark, ok := horizon(s.org, s.detector)
		if w := width(h); ok && (s.slot+1)*w <= mark-int64(h) {
			g.n -= len(m)
			delete(g.slots, s)
		}
	}
}
