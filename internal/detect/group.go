package detect

import (
	"slices"

	"github.com/vigil-soc/vigil"
)

// grouper groups one detector's signals of a batch by key, keys in the
// order of their first signal and each key's signals oldest first (in
// the order given among those of one time), as a map of a slice per key
// did: in a handful of allocations a batch instead of three a key. Most
// keys of an internet-facing host's batch are scanners of one signal
// each, so those were most of the detect stage's allocations
// (docs/benchmarks.md, issue 34).
type grouper struct {
	ords    map[string]int32 // a key's number: its place in keys
	keys    []string
	pending []keyed // in the order given
	byKey   []keyed // pending grouped by key
	starts  []int32 // by key number, where its signals start in byKey; one more at the end
}

type keyed struct {
	sig vigil.Signal
	ctx any
	ord int32
}

func (g *grouper) reset() {
	clear(g.ords)
	g.keys, g.pending = g.keys[:0], g.pending[:0]
}

func (g *grouper) add(sg vigil.Signal, ctx any) {
	if g.ords == nil {
		g.ords = map[string]int32{}
	}
	ord, ok := g.ords[sg.Key]
	if !ok {
		ord = int32(len(g.keys))
		g.ords[sg.Key] = ord
		g.keys = append(g.keys, sg.Key)
	}
	g.pending = append(g.pending, keyed{sg, ctx, ord})
}

// group calls f with each key, its signals and their contexts: slices of
// a batch's arrays, made anew for each detector (the detections keep
// them), valid until the next reset.
func (g *grouper) group(f func(key string, sigs []vigil.Signal, ctxs []any)) {
	if len(g.pending) == 0 {
		return
	}
	// A counting sort by key number keeps the order given within a key.
	g.starts = slices.Grow(g.starts[:0], len(g.keys)+1)[:len(g.keys)+1]
	clear(g.starts)
	for _, p := range g.pending {
		g.starts[p.ord+1]++
	}
	for k := 1; k < len(g.starts); k++ {
		g.starts[k] += g.starts[k-1]
	}
	g.byKey = slices.Grow(g.byKey[:0], len(g.pending))[:len(g.pending)]
	for _, p := range g.pending {
		g.byKey[g.starts[p.ord]] = p
		g.starts[p.ord]++
	}
	// starts[k] is now where key k ends.
	sigs := make([]vigil.Signal, len(g.pending))
	ctxs := make([]any, len(g.pending))
	from := 0
	for k, key := range g.keys {
		to := int(g.starts[k])
		part := g.byKey[from:to]
		if !slices.IsSortedFunc(part, byTime) {
			slices.SortStableFunc(part, byTime)
		}
		for i, p := range part {
			sigs[from+i], ctxs[from+i] = p.sig, p.ctx
		}
		f(key, sigs[from:to:to], ctxs[from:to:to])
		from = to
	}
	clear(g.byKey) // no signal kept alive by the scratch
	clear(g.pending)
}

func byTime(a, b keyed) int { return a.sig.At.Compare(b.sig.At) }
