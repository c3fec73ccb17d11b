package correlate

import (
	"hash/maphash"
	"slices"
	"time"
)

// goneKeys holds, compactly, the keys whose signals the store holds and
// whose last transaction committed: a 64-bit hash of each, per org,
// detector and slot of its newest signal's time, instead of a map entry
// of its own (and, once sealed, 32 bits of it: goneSet). On an
// internet-facing host most of them are scanning addresses spilled to the
// store when the Tally was full, never seen again; a map entry each (its key's three strings and a hotKey) took
// hundreds of megabytes at a few thousand new addresses a second. A key
// found here is routed to the store, as a hot key is; two keys sharing a
// hash only send one of them to the store without need, which counts it
// exactly all the same.
type goneKeys struct {
	seed  maphash.Seed
	slots map[goneSlot]*goneSet
	n     int
}

type goneSlot struct {
	org, detector string
	slot          int64
}

// goneSet is the keys of one slot: the newest as their hashes in a map
// (open), the others as the high 32 bits of their hashes, sorted
// (sealed) — 4 bytes a key, where a map entry took 10 to 20 and an alert
// key stays for its detector's hour and more: on the internet-edge mix
// the map of 64-bit hashes grew the live heap by 29 MB over 30 minutes
// (docs/benchmarks.md). A key whose fingerprint another one shares is
// routed to the store without need, as with a shared hash: at 500,000
// keys a slot, one look-up in 8,000 or so.
type goneSet struct {
	open   map[uint64]struct{}
	sealed []uint32
}

// goneSealAt is how many keys a slot's map holds before they are sealed.
const goneSealAt = 1 << 14

func (s *goneSet) has(h uint64) bool {
	if _, ok := s.open[h]; ok {
		return true
	}
	_, ok := slices.BinarySearch(s.sealed, uint32(h>>32))
	return ok
}

func (s *goneSet) len() int { return len(s.open) + len(s.sealed) }

// seal moves the open keys into sealed.
func (s *goneSet) seal() {
	if len(s.open) == 0 {
		return
	}
	add := make([]uint32, 0, len(s.open))
	for h := range s.open {
		add = append(add, uint32(h>>32))
	}
	slices.Sort(add)
	// Merged with the sealed ones, which are sorted already: a slot's
	// keys are sealed every goneSealAt of them.
	fp := make([]uint32, 0, len(s.sealed)+len(add))
	i, j := 0, 0
	for i < len(s.sealed) || j < len(add) {
		var v uint32
		if j == len(add) || i < len(s.sealed) && s.sealed[i] <= add[j] {
			v, i = s.sealed[i], i+1
		} else {
			v, j = add[j], j+1
		}
		if len(fp) == 0 || fp[len(fp)-1] != v {
			fp = append(fp, v)
		}
	}
	s.sealed, s.open = slices.Clip(fp), nil
}

// goneSlots is how many slots a horizon spans: a key is forgotten at most
// a slot's width after its horizon passed.
const goneSlots = 4

func newGoneKeys() goneKeys {
	return goneKeys{seed: maphash.MakeSeed(), slots: map[goneSlot]*goneSet{}}
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
	set := g.slots[s]
	if set == nil {
		set = &goneSet{}
		g.slots[s] = set
	}
	h := g.hash(tk)
	if set.has(h) {
		return
	}
	if set.open == nil {
		set.open = map[uint64]struct{}{}
	}
	set.open[h] = struct{}{}
	g.n++
	if len(set.open) >= goneSealAt {
		g.seal(set)
	}
}

// seal seals set, keeping n the count of what the slots hold (two keys
// may share a fingerprint).
func (g *goneKeys) seal(set *goneSet) {
	g.n -= set.len()
	set.seal()
	g.n += set.len()
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
		if set := g.slots[goneSlot{tk.org, tk.detector, s}]; set != nil && set.has(h) {
			return true
		}
	}
	return false
}

// expire forgets the slots wholly before their detector's horizon
// (horizon returns it, and the newest signal of the org and detector),
// and seals the others but the newest.
func (g *goneKeys) expire(horizon func(org, detector string) (time.Duration, int64, bool)) {
	for s, set := range g.slots {
		h, mark, ok := horizon(s.org, s.detector)
		if !ok {
			continue
		}
		switch w := width(h); {
		case (s.slot+1)*w <= mark-int64(h):
			g.n -= set.len()
			delete(g.slots, s)
		case s.slot < mark/w:
			g.seal(set)
		}
	}
}
