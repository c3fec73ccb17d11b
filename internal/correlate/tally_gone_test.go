package correlate

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestGoneKeys: a key recorded as gone is found while its newest signal
// is within its horizon of the mark, and forgotten once the slot it lies
// in is wholly past that horizon; other keys are not found.
func TestGoneKeys(t *testing.T) {
	const horizon = 4 * time.Minute
	g := newGoneKeys()
	at := func(d time.Duration) int64 { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Add(d).UnixNano() }
	k := tallyKey{"o1", "port_scan", "198.51.100.7"}
	g.add(k, at(10*time.Minute), horizon)
	for _, c := range []struct {
		name string
		key  tallyKey
		mark time.Duration
		want bool
	}{
		{"its own newest", k, 10 * time.Minute, true},
		{"within the horizon", k, 13 * time.Minute, true},
		{"another key", tallyKey{"o1", "port_scan", "198.51.100.8"}, 10 * time.Minute, false},
		{"another org", tallyKey{"o2", "port_scan", "198.51.100.7"}, 10 * time.Minute, false},
		{"another detector", tallyKey{"o1", "host_sweep", "198.51.100.7"}, 10 * time.Minute, false},
		{"past the horizon", k, 16 * time.Minute, false},
	} {
		mark := at(c.mark)
		if got := g.has(c.key, mark, horizon); got != c.want {
			t.Errorf("%s: has %v, want %v", c.name, got, c.want)
		}
	}
	horizonOf := func(string, string) (time.Duration, int64, bool) { return horizon, at(13 * time.Minute), true }
	if g.expire(horizonOf); g.n != 1 {
		t.Fatalf("expired at 13 min: %d keys left, want 1", g.n)
	}
	horizonOf = func(string, string) (time.Duration, int64, bool) { return horizon, at(15 * time.Minute), true }
	if g.expire(horizonOf); g.n != 0 || len(g.slots) != 0 {
		t.Fatalf("expired at 15 min: %d keys in %d slots left, want none", g.n, len(g.slots))
	}
}

// TestGoneKeysSealed: keys sealed (a slot past its newest, or one whose
// map filled) are still found, so is a key added to a sealed slot late,
// and few keys never added are: a fingerprint shared by chance routes a
// key to the store, which counts it exactly, but costs a read.
func TestGoneKeysSealed(t *testing.T) {
	const horizon = 4 * time.Minute
	g := newGoneKeys()
	at := func(d time.Duration) int64 { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Add(d).UnixNano() }
	key := func(i int) tallyKey {
		return tallyKey{"o1", "port_scan", fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255)}
	}
	const n = 3*goneSealAt + 100
	for i := range n {
		g.add(key(i), at(10*time.Minute), horizon)
	}
	if len(g.slots) != 1 {
		t.Fatalf("%d slots, want 1", len(g.slots))
	}
	for _, set := range g.slots {
		if len(set.sealed) == 0 || len(set.open) >= goneSealAt {
			t.Fatalf("a slot of %d keys: %d sealed, %d open; want the map sealed at %d", n, len(set.sealed), len(set.open), goneSealAt)
		}
	}
	// The mark moves into the next slot: the old one is sealed whole.
	horizonOf := func(string, string) (time.Duration, int64, bool) {
		return horizon, at(11*time.Minute + 30*time.Second), true
	}
	g.expire(horizonOf)
	for _, set := range g.slots {
		if len(set.open) != 0 {
			t.Fatalf("after the mark left the slot, %d keys still open", len(set.open))
		}
		for i := 1; i < len(set.sealed); i++ {
			if set.sealed[i-1] >= set.sealed[i] {
				t.Fatalf("sealed fingerprints out of order or twice at %d", i)
			}
		}
	}
	late := key(n + 1)
	g.add(late, at(10*time.Minute), horizon)
	mark := at(11 * time.Minute)
	for i := range n {
		if !g.has(key(i), mark, horizon) {
			t.Fatalf("key %d of %d not found once sealed", i, n)
		}
	}
	if !g.has(late, mark, horizon) {
		t.Error("a key added to a sealed slot is not found")
	}
	if g.n < n-5 || g.n > n+1 {
		t.Errorf("n = %d, want about %d", g.n, n+1)
	}
	stray := 0
	for i := n + 2; i < n+2+100_000; i++ {
		if g.has(key(i), mark, horizon) {
			stray++
		}
	}
	if stray > 10 {
		t.Errorf("%d of 100,000 keys never added are found; want a few at most", stray)
	}
}

// BenchmarkTallySpilledKeys measures what a key costs the Tally once it
// was spilled to the store and its transaction committed: one new
// scanning address a millisecond of event time, each one packet, through
// a Tally holding 1000 signals at most (so that almost every key spills),
// for 7 minutes of event time (the horizon of the longest of the scan
// detectors' keys) and more. Reported: the heap the Tally holds per such
// key after a GC.
func BenchmarkTallySpilledKeys(b *testing.B) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		tl := NewTally(2*time.Minute, 1000)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		const keys = 420_000 // 7 minutes at 1000 a second
		for i := range keys {
			at := t0.Add(time.Duration(i) * time.Millisecond)
			key := fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255)
			d := &vigil.Detection{Detector: "ssh_bruteforce", Key: key, Span: 5 * time.Minute, MinCount: 5,
				Signals: []vigil.Signal{{Key: key, ArtifactID: fmt.Sprint("a", i), At: at, Member: "root",
					Nodes: []vigil.NodeRef{{Type: "ip", Value: key, Key: true}}}}}
			tl.committed(tl.route("org", []*vigil.Detection{d}, at))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		st, held, known := tl.Stats()
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/float64(st.Spilled), "heap-B/spilled-key")
		b.ReportMetric(float64(held), "held")
		b.ReportMetric(float64(known), "known-keys")
		runtime.KeepAlive(tl)
	}
}
