package correlate

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestHeldSignalRoundTrip: what a signal becomes when the Tally holds it
// gives back the same signal, whatever its id, nodes and fields, also
// after the codec was renumbered for the signals still held.
func TestHeldSignalRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	ip := func(v string, key bool) vigil.NodeRef { return vigil.NodeRef{Type: vigil.NodeIP, Value: v, Key: key} }
	cases := []struct {
		name string
		key  string
		sg   vigil.Signal
	}{
		{"port scan: the key's address, a literal target and host", "203.0.113.9", vigil.Signal{Key: "203.0.113.9",
			ArtifactID: vigil.NewID(), At: at, Member: "443",
			Nodes: []vigil.NodeRef{ip("203.0.113.9", true), ip("192.0.2.10", false), {Type: vigil.NodeHost, Value: "edge-01"}}}},
		{"host sweep: the key's first field", "203.0.113.9|22", vigil.Signal{Key: "203.0.113.9|22",
			ArtifactID: vigil.NewID(), At: at, Member: "192.0.2.10",
			Nodes: []vigil.NodeRef{ip("203.0.113.9", true), ip("192.0.2.10", false)}}},
		{"suricata: the key's second field", "2100498|198.51.100.4", vigil.Signal{Key: "2100498|198.51.100.4",
			ArtifactID: vigil.NewID(), At: at, Nodes: []vigil.NodeRef{ip("198.51.100.4", true)}}},
		{"an id that is no UUID", "k", vigil.Signal{Key: "k", ArtifactID: "a1", At: at, Count: 3}},
		{"an upper-case UUID stays upper-case", "k", vigil.Signal{Key: "k", ArtifactID: "0192F6A4-7C1E-7B3A-9D2E-4F5A6B7C8D9E", At: at}},
		{"evidence, unit, engine event", "k", vigil.Signal{Key: "k", ArtifactID: vigil.NewID(), At: at,
			Evidence: true, Unit: "q-51342", EngineEvent: true, Member: "root"}},
		{"a signal keyed apart from its detection", "k", vigil.Signal{Key: "other", ArtifactID: vigil.NewID(), At: at}},
		{"a value holding the separators of the encoding", "k", vigil.Signal{Key: "k", ArtifactID: vigil.NewID(), At: at,
			Nodes: []vigil.NodeRef{{Type: "x\x00", Value: "\x01|\x00k"}, {Type: "x", Value: "\x00"}}}},
		{"a negative count", "k", vigil.Signal{Key: "k", ArtifactID: vigil.NewID(), At: at, Count: -2}},
	}
	c := newHeldCodec()
	held := make([]heldSignal, len(cases))
	for i, tc := range cases {
		held[i] = c.encode(tc.key, tc.sg)
		if got := c.decode(tc.key, held[i]); !reflect.DeepEqual(got, tc.sg) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.sg)
		}
	}
	// Fill the codec with entries no held signal uses, then renumber it
	// for the odd cases only.
	for i := range 1000 {
		c.encode(fmt.Sprint(i), vigil.Signal{Member: fmt.Sprint("m", i), ArtifactID: fmt.Sprint("x", i),
			Nodes: []vigil.NodeRef{{Type: "t", Value: fmt.Sprint(i)}}})
	}
	kept := []int{1, 3, 5, 7}
	n := c.rebuild(func(yield func([]heldSignal)) {
		for _, i := range kept {
			yield(held[i : i+1])
		}
	})
	if n.size() >= 20 {
		t.Errorf("the rebuilt codec holds %d entries for %d signals", n.size(), len(kept))
	}
	for _, i := range kept {
		if got := n.decode(cases[i].key, held[i]); !reflect.DeepEqual(got, cases[i].sg) {
			t.Errorf("%s, after the rebuild:\n got %+v\nwant %+v", cases[i].name, got, cases[i].sg)
		}
	}
}

// TestTallyRebuildsItsCodec: once most of the codec's entries serve keys
// long forgotten, the sweep renumbers it, and the keys still held come
// back whole when they fire.
func TestTallyRebuildsItsCodec(t *testing.T) {
	tl := NewTally(time.Minute, 0)
	scan := func(key string, at time.Time, port int) *vigil.Detection {
		return &vigil.Detection{Detector: "port_scan", Key: key, Span: time.Minute, MinCount: 3, MinDistinct: 3,
			Signals: []vigil.Signal{{Key: key, ArtifactID: vigil.NewID(), At: at, Member: fmt.Sprint(port),
				Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}, {Type: vigil.NodeHost, Value: fmt.Sprint("h", port)}}}}}
	}
	clock := t0
	// Many keys that come once and go, over 16 minutes, then one that
	// stays.
	for i := range 2 * codecRebuildFrom {
		at := t0.Add(time.Duration(i) * 16 * time.Minute / (2 * codecRebuildFrom))
		tl.route("org", []*vigil.Detection{scan(fmt.Sprint("k", i), at, 1000+i)}, clock)
	}
	if s := tl.codec.size(); s < 2*codecRebuildFrom {
		t.Fatalf("the codec holds %d entries, want one per port and list at least", s)
	}
	clock = clock.Add(sweepEvery)
	tl.route("org", []*vigil.Detection{scan("198.51.100.1", t0.Add(16*time.Minute), 1)}, clock)
	tl.route("org", []*vigil.Detection{scan("198.51.100.1", t0.Add(16*time.Minute+time.Second), 2)}, clock)
	if s := tl.codec.size(); s >= codecRebuildFrom {
		t.Fatalf("the codec holds %d entries after the sweep, want it rebuilt", s)
	}
	r := tl.route("org", []*vigil.Detection{scan("198.51.100.1", t0.Add(16*time.Minute+2*time.Second), 3)}, clock)
	if len(r.ds) != 1 || len(r.ds[0].Signals) != 3 {
		t.Fatalf("the third port: %d detections for the store, want the key with its 3 signals", len(r.ds))
	}
	for i, sg := range r.ds[0].Signals {
		want := fmt.Sprint(i + 1)
		if sg.Member != want || len(sg.Nodes) != 2 || sg.Nodes[0].Value != "198.51.100.1" || sg.Nodes[1].Value != "h"+want {
			t.Errorf("signal %d: %+v, want port %s with its nodes", i, sg, want)
		}
	}
}

// BenchmarkTallyHeldKeys measures what a key seen once costs the Tally
// while it holds it: 1.2 M new scanning addresses, one packet each, one a
// 0.1 ms of event time (2 minutes), through a Tally large enough to hold
// them all. Reported: the heap per held key after a GC, and the time of
// a GC with them held, and the CPU it took (gc-cpu-ms: what repeats
// on a loaded machine).
func BenchmarkTallyHeldKeys(b *testing.B) {
	const keys = 1_200_000
	for b.Loop() {
		tl := NewTally(2*time.Minute, 2*keys)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keys {
			at := t0.Add(time.Duration(i) * 100 * time.Microsecond)
			key := fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255)
			d := &vigil.Detection{Detector: "port_scan", Key: key, Span: time.Minute, MinCount: 20, MinDistinct: 20,
				Signals: []vigil.Signal{{Key: key, ArtifactID: vigil.NewID(), At: at, Member: "22",
					Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}, {Type: vigil.NodeIP, Value: "203.0.113.10"},
						{Type: vigil.NodeHost, Value: "edge-01"}}}}}
			tl.route("org", []*vigil.Detection{d}, t0)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		start, cpu := time.Now(), gcCPU()
		runtime.GC()
		gc, gcCPUTime := time.Since(start), gcCPU()-cpu
		_, held, _ := tl.Stats()
		if held != keys {
			b.Fatalf("%d held, want %d", held, keys)
		}
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/keys, "heap-B/held-key")
		b.ReportMetric(float64(gc.Milliseconds()), "gc-ms")
		b.ReportMetric(gcCPUTime*1000, "gc-cpu-ms")
		runtime.KeepAlive(tl)
	}
}

// gcCPU returns the CPU seconds the garbage collector took so far.
func gcCPU() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}
