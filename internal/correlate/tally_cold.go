package correlate

import (
	"cmp"
	"math"
	"slices"
)

// coldKeys are the Tally's cold keys and their signals, held without a
// pointer for the collector to follow: most keys of an internet-facing
// host are scanning addresses seen once, and a map of a million of them,
// each pointing to its own key string and signals, cost the collector
// every one of those pointers at every cycle (BenchmarkTallyHeldKeys).
// A key is its (org, detector) pair by number and its bytes inline (an
// IPv4 address, with a port); its one signal is the map's value. Keys
// longer than inlineKey are numbered (longs), and the few keys that hold
// more than one signal keep them in many.
type coldKeys struct {
	// one has every cold key: its only signal, or (heldMany) the time of
	// the newest of its signals in many.
	one  map[coldRef]heldSignal
	many map[coldRef]*coldKey
	// longs numbers the keys longer than inlineKey; names and free are
	// by number.
	longs     map[longKey]uint32
	longNames []longKey
	longFree  []uint32
	// scratch is what get returns for a key of one signal: the Tally
	// works on one key at a time, under its lock.
	scratch coldKey
	// dels counts the keys forgotten since one was last rebuilt (compact).
	dels int
}

// coldRef is a cold key without a pointer: its (org, detector) pair by
// number and its key's bytes, or the number of a long key (n is
// longMark).
type coldRef struct {
	pair uint32
	n    uint8
	b    [inlineKey]byte
}

// inlineKey is the longest key held inline: an IPv4 address with a port
// ("203.0.113.7|65535") and then some, for a coldRef of 32 bytes.
const inlineKey = 27

const longMark = math.MaxUint8

type longKey struct {
	pair uint32
	key  string
}

// coldKey is the signals of one key, by time; ids are their artifacts,
// once it holds indexFrom.
type coldKey struct {
	sigs []heldSignal
	ids  map[heldIdent]bool
}

func newColdKeys() coldKeys {
	return coldKeys{one: map[coldRef]heldSignal{}, many: map[coldRef]*coldKey{}, longs: map[longKey]uint32{}}
}

// find returns the ref of key of pair, false when no cold key can have it.
func (cs *coldKeys) find(pair uint32, key string) (coldRef, bool) {
	r := coldRef{pair: pair}
	if len(key) <= inlineKey {
		r.n = uint8(len(key))
		copy(r.b[:], key)
		return r, true
	}
	n, ok := cs.longs[longKey{pair, key}]
	r.n = longMark
	r.b[0], r.b[1], r.b[2], r.b[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return r, ok
}

// intern returns the ref of key of pair, numbering it when long.
func (cs *coldKeys) intern(pair uint32, key string) coldRef {
	if r, ok := cs.find(pair, key); ok {
		return r
	}
	var n uint32
	if k := len(cs.longFree); k > 0 {
		n, cs.longFree = cs.longFree[k-1], cs.longFree[:k-1]
		cs.longNames[n] = longKey{pair, key}
	} else {
		n = uint32(len(cs.longNames))
		cs.longNames = append(cs.longNames, longKey{pair, key})
	}
	cs.longs[longKey{pair, key}] = n
	r, _ := cs.find(pair, key)
	return r
}

func (r coldRef) long() uint32 {
	return uint32(r.b[0]) | uint32(r.b[1])<<8 | uint32(r.b[2])<<16 | uint32(r.b[3])<<24
}

// key returns the key r stands for.
func (cs *coldKeys) key(r coldRef) string {
	if r.n == longMark {
		return cs.longNames[r.long()].key
	}
	return string(r.b[:r.n])
}

// get returns the signals of r, nil when it is no cold key. A key of one
// signal comes back in the scratch key, valid until the next get: put
// stores what became of it.
func (cs *coldKeys) get(r coldRef) *coldKey {
	h, ok := cs.one[r]
	if !ok {
		return nil
	}
	if h.flags&heldMany != 0 {
		return cs.many[r]
	}
	return cs.scratchOf(h)
}

// scratchOf returns the scratch key holding hs.
func (cs *coldKeys) scratchOf(hs ...heldSignal) *coldKey {
	c := cs.fresh()
	c.sigs = append(c.sigs, hs...)
	return c
}

// fresh returns the scratch key, empty: a key to put once it holds some.
func (cs *coldKeys) fresh() *coldKey {
	c := &cs.scratch
	c.sigs, c.ids = c.sigs[:0], nil
	return c
}

// put records c as the signals of r (forgetting r when it holds none).
func (cs *coldKeys) put(r coldRef, c *coldKey) {
	switch {
	case len(c.sigs) == 0:
		cs.del(r)
	case len(c.sigs) == 1 && c.ids == nil:
		delete(cs.many, r)
		cs.one[r] = c.sigs[0]
	default:
		if c == &cs.scratch {
			c = &coldKey{sigs: slices.Clone(c.sigs), ids: c.ids}
			cs.scratch.ids = nil
		}
		cs.many[r] = c
		cs.one[r] = heldSignal{at: c.newest(), flags: heldMany}
	}
}

// del forgets r (interned, put or not).
func (cs *coldKeys) del(r coldRef) {
	if h, ok := cs.one[r]; ok {
		delete(cs.one, r)
		cs.dels++
		if h.flags&heldMany != 0 {
			delete(cs.many, r)
		}
	}
	if r.n != longMark {
		return
	}
	n := r.long()
	if k := cs.longNames[n]; cs.longs[k] == n && k.key != "" {
		delete(cs.longs, k)
		cs.longNames[n] = longKey{}
		cs.longFree = append(cs.longFree, n)
	}
}

// compactAfter is how many keys, beyond twice those held, a map forgets
// before it is rebuilt (shouldCompact).
const compactAfter = 1 << 16

// shouldCompact reports whether a map holding held keys, which forgot
// dels since it was last rebuilt, is rebuilt now. A Go map never shrinks,
// and one whose keys come and go (every scanner's address, held for
// minutes, then spilled or expired) keeps growing its tables past what it
// holds: 100,000 keys took 11 MB once inserted and 44 MB after millions
// had come and gone, and the Tally's share of the edge mix's heap grew by
// 10 MB every two minutes of a run. The rebuild costs a walk of the keys
// held, at most once per twice their number forgotten.
func shouldCompact(dels, held int) bool { return dels > 2*held+compactAfter }

// rebuilt returns a copy of m at the size of what it holds (see
// shouldCompact); not maps.Clone, which copies m's tables as they are.
func rebuilt[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// compact rebuilds one and many once they forgot enough (shouldCompact).
func (cs *coldKeys) compact() {
	if shouldCompact(cs.dels, len(cs.one)) {
		cs.one, cs.many, cs.dels = rebuilt(cs.one), rebuilt(cs.many), 0
	}
}

// signals returns the signals of r, whose entry in one is h; a key of one
// signal's are in buf.
func (cs *coldKeys) signals(r coldRef, h heldSignal, buf *[1]heldSignal) []heldSignal {
	if h.flags&heldMany != 0 {
		return cs.many[r].sigs
	}
	buf[0] = h
	return buf[:]
}

// count returns how many signals the key whose entry in one is h holds.
func (cs *coldKeys) count(r coldRef, h heldSignal) int {
	if h.flags&heldMany != 0 {
		return len(cs.many[r].sigs)
	}
	return 1
}

// each calls f with every held signal, in place: what f changes is kept.
func (cs *coldKeys) each(f func(hs []heldSignal)) {
	for r, h := range cs.one {
		if h.flags&heldMany == 0 {
			buf := [1]heldSignal{h}
			f(buf[:])
			cs.one[r] = buf[0]
		}
	}
	for _, c := range cs.many {
		f(c.sigs)
	}
}

// newest is the time of c's newest signal, Unix nanoseconds.
func (c *coldKey) newest() int64 {
	if len(c.sigs) == 0 {
		return math.MinInt64
	}
	return c.sigs[len(c.sigs)-1].at
}

// trim forgets the signals before horizon (Unix nanoseconds) and returns
// how many it forgot.
func (c *coldKey) trim(horizon int64) int {
	i := 0
	for i < len(c.sigs) && c.sigs[i].at < horizon {
		if c.ids != nil {
			delete(c.ids, identOf(c.sigs[i]))
		}
		i++
	}
	if i > 0 {
		c.sigs = slices.Delete(c.sigs, 0, i)
	}
	return i
}

// holds reports whether c holds a signal of artifact id.
func (c *coldKey) holds(id heldIdent) bool {
	if c.ids != nil {
		return c.ids[id]
	}
	return slices.ContainsFunc(c.sigs, func(h heldSignal) bool { return identOf(h) == id })
}

// counted reports whether a signal of sg's unit within unitSpan of it
// counts already.
func (c *coldKey) counted(sg heldSignal) bool {
	from := sg.at - int64(unitSpan)
	i, _ := slices.BinarySearchFunc(c.sigs, from, func(h heldSignal, at int64) int { return cmp.Compare(h.at, at) })
	for ; i < len(c.sigs) && c.sigs[i].at <= sg.at+int64(unitSpan); i++ {
		if h := c.sigs[i]; h.unit == sg.unit && h.flags&heldEvidence == 0 {
			return true
		}
	}
	return false
}
