package correlate

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestColdKeys: keys short and long keep their signals, one inline or
// many, through get and put; a forgotten long key's number serves the
// next, and every key reads back as itself.
func TestColdKeys(t *testing.T) {
	cs := newColdKeys()
	short, long, long2 := "203.0.113.7|65535", strings.Repeat("a", inlineKey+1), "2001:db8:ffff:ffff:ffff:ffff:ffff:1"
	put := func(pair uint32, key string, ats ...int64) coldRef {
		t.Helper()
		r := cs.intern(pair, key)
		c := cs.get(r)
		if c == nil {
			c = cs.fresh()
		}
		for _, at := range ats {
			c.sigs = append(c.sigs, heldSignal{at: at, count: 1})
		}
		cs.put(r, c)
		return r
	}
	want := func(pair uint32, key string, ats ...int64) {
		t.Helper()
		r, ok := cs.find(pair, key)
		var got []int64
		if c := cs.get(r); ok && c != nil {
			for _, h := range c.sigs {
				got = append(got, h.at)
			}
		}
		if len(got) != len(ats) {
			t.Fatalf("%d %q holds %v, want %v", pair, key, got, ats)
		}
		for i := range ats {
			if got[i] != ats[i] {
				t.Fatalf("%d %q holds %v, want %v", pair, key, got, ats)
			}
		}
		if ok && len(ats) > 0 && cs.key(r) != key {
			t.Fatalf("%q reads back as %q", key, cs.key(r))
		}
	}
	put(0, short, 1)
	rl := put(0, long, 2)
	put(1, long, 3)
	put(0, short, 4, 5) // one to many
	want(0, short, 1, 4, 5)
	want(0, long, 2)
	want(1, long, 3)
	if len(cs.many) != 1 || cs.one[mustFind(t, &cs, 0, short)].at != 5 {
		t.Fatalf("many %d, the many key's entry %+v: want one key of many, its newest at 5", len(cs.many), cs.one[mustFind(t, &cs, 0, short)])
	}
	c := cs.get(mustFind(t, &cs, 0, short))
	c.trim(5) // many to one
	cs.put(mustFind(t, &cs, 0, short), c)
	want(0, short, 5)
	if len(cs.many) != 0 {
		t.Fatalf("%d keys of many, want none", len(cs.many))
	}
	cs.del(rl)
	want(0, long)
	if r := cs.intern(0, long2); r.long() != rl.long() {
		t.Fatalf("the next long key is number %d, want the forgotten %d", r.long(), rl.long())
	}
	want(1, long, 3)
	// A key promoted as it comes, never put, leaves no number behind.
	cs.del(cs.intern(2, long))
	if r := cs.intern(3, long); r.long() != rl.long()+2 {
		t.Fatalf("a long key after one forgotten unput is number %d, want %d", r.long(), rl.long()+2)
	}
	var n int
	cs.each(func(hs []heldSignal) { n += len(hs) })
	if n != 2 {
		t.Fatalf("each saw %d signals, want 2", n)
	}
}

func mustFind(t *testing.T, cs *coldKeys, pair uint32, key string) coldRef {
	t.Helper()
	r, ok := cs.find(pair, key)
	if !ok {
		t.Fatalf("no key %q", key)
	}
	return r
}

// TestTallyHeapFlatUnderChurn: a Tally whose keys come and go — an
// internet-facing host's scanners, each held for its horizon and then
// forgotten — holds about the same memory after millions of them as
// after its first few ten thousand: its maps are rebuilt at the size of
// what they hold (coldKeys.compact). Before, a Go map's tables never
// shrank and grew past what they held: the Tally's share of the edge
// mix's heap grew through a run.
func TestTallyHeapFlatUnderChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("routes 1.2 M keys")
	}
	const live = 20_000 // keys within their horizon at any time
	span, lateness := time.Minute, 2*time.Minute
	step := (span + lateness) / live
	tl := NewTally(lateness, 10*live)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	var base, steady uint64
	for i := range 60 * live {
		if i == 0 {
			base = heap()
		}
		if i == 3*live {
			steady = heap() - base
		}
		at := t0.Add(time.Duration(i) * step)
		key := fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		d := &vigil.Detection{Detector: "port_scan", Key: key, Span: span, MinCount: 20, MinDistinct: 20,
			Signals: []vigil.Signal{{Key: key, ArtifactID: vigil.NewID(), At: at, Member: "22",
				Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}}}}}
		tl.route("org", []*vigil.Detection{d}, at)
	}
	end := heap() - base
	_, held, _ := tl.Stats()
	if held > 2*live {
		t.Fatalf("%d keys held, want about %d within the horizon", held, live)
	}
	t.Logf("heap: %d kB after %d keys, %d kB after %d (%d held)", steady>>10, 3*live, end>>10, 60*live, held)
	if end > steady*3/2 {
		t.Errorf("the Tally's heap grew from %d kB to %d kB while it held the same number of keys", steady>>10, end>>10)
	}
	runtime.KeepAlive(tl)
}
