package correlate

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// logScan is a port scan's detection of key: 3 packets on 3 ports within
// a minute, its signals sigs.
func logScan(key string, sigs ...vigil.Signal) *vigil.Detection {
	return &vigil.Detection{Detector: "port_scan", Key: key, Span: time.Minute, MinCount: 3, MinDistinct: 3, Signals: sigs}
}

// logSignal is a packet of key at at on port, as the firewall's detector
// gives one: the source a key node (read back from the key), the
// destination context.
func logSignal(key string, i int, at time.Time, port string) vigil.Signal {
	return vigil.Signal{Key: key, ArtifactID: fmt.Sprintf("0195f3c2-7b1e-7cc0-9a5e-%012d", i), At: at, Member: port,
		Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}, {Type: vigil.NodeIP, Value: "203.0.113.10"}}}
}

// tallyClock routes org's detections through a Tally, each call a
// millisecond after the last.
type tallyClock struct {
	tl  *Tally
	now time.Time
}

func (c *tallyClock) route(ds ...*vigil.Detection) routed {
	c.now = c.now.Add(time.Millisecond)
	return c.tl.route("org", ds, c.now)
}

// loggingTally returns a Tally of limit signals that spills to a log in
// dir, its clock at t0.
func loggingTally(t *testing.T, dir string, limit int) *tallyClock {
	t.Helper()
	tl := NewTally(2*time.Minute, limit)
	if err := tl.SpillTo(dir); err != nil {
		t.Fatal(err)
	}
	return &tallyClock{tl: tl, now: t0}
}

// TestTallyLogsKeysOfOneSignal: beyond its limit the Tally writes its keys
// of one signal to its spill log, not to the store (it hands the store
// nothing); a logged key that comes again fires with its logged signal
// whole, and the keys past their horizon leave the log with their files.
func TestTallyLogsKeysOfOneSignal(t *testing.T) {
	dir := t.TempDir()
	tc := loggingTally(t, dir, 100)
	tl, route := tc.tl, tc.route
	const keys = 20_000
	first := map[string]vigil.Signal{}
	for i := range keys {
		key := fmt.Sprintf("11.0.%d.%d", i/250, i%250)
		sg := logSignal(key, i, t0.Add(time.Duration(i)*time.Millisecond), "22")
		first[key] = sg
		if r := route(logScan(key, sg)); len(r.ds) != 0 {
			t.Fatalf("key %d: %d detections for the store, want none: a key of one signal is logged", i, len(r.ds))
		}
	}
	st, held, _ := tl.Stats()
	if st.Logged < keys-100 || st.Spilled != 0 || held > 100 || tl.LogHeld() != int(st.Logged) {
		t.Fatalf("tally %+v, %d held, %d logged: want the keys beyond the limit logged", st, held, tl.LogHeld())
	}
	// Every key that comes again within its minute fires with its first
	// packet, read back from the log or memory as it was given.
	for i := range keys {
		key := fmt.Sprintf("11.0.%d.%d", i/250, i%250)
		at := t0.Add(time.Duration(keys) * time.Millisecond)
		r := route(logScan(key, logSignal(key, keys+2*i, at, "23"), logSignal(key, keys+2*i+1, at, "80")))
		if len(r.ds) != 1 || len(r.ds[0].Signals) != 3 {
			t.Fatalf("key %d: %d detections, want one of its 3 packets", i, len(r.ds))
		}
		if got, want := sigString(r.ds[0].Signals[0]), sigString(first[key]); got != want {
			t.Fatalf("key %d's first packet came back as\n%s\nwant\n%s", i, got, want)
		}
	}
	st, _, _ = tl.Stats()
	if st.Unlogged != st.Logged || tl.LogHeld() != 0 {
		t.Fatalf("tally %+v, %d still logged: want every logged key read back once", st, tl.LogHeld())
	}
	// Past the horizon, the segments go with their files.
	for i := range 5000 {
		key := fmt.Sprintf("12.0.%d.%d", i/250, i%250)
		route(logScan(key, logSignal(key, 3*keys+i, t0.Add(time.Minute+time.Duration(i)*time.Millisecond), "22")))
	}
	late := t0.Add(10 * time.Minute)
	tc.now = tc.now.Add(time.Hour)
	route(logScan("13.0.0.1", logSignal("13.0.0.1", 4*keys, late, "22")))
	if n := tl.LogHeld(); n != 0 {
		t.Fatalf("%d keys logged 9 minutes past their horizon, want none", n)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > 1 { // the pair's segment taking records
		t.Fatalf("%d files left in the log's directory: %v", len(files), files)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the log's directory after Close: %v", err)
	}
}

// TestTallyDrainsTheLog: Drain returns the keys the log holds with those
// in memory, each signal as it was given, and marks them held by the
// store.
func TestTallyDrainsTheLog(t *testing.T) {
	tl := NewTally(2*time.Minute, 10)
	if err := tl.SpillTo(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 500 {
		key := fmt.Sprintf("11.0.%d.%d", i/250, i%250)
		if i%7 == 0 {
			key = fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:ffff:%d", i) // longer than the keys held inline
		}
		sg := logSignal(key, i, t0.Add(time.Duration(i)*time.Millisecond), fmt.Sprint(i%5))
		if i%3 == 0 {
			sg.Unit = fmt.Sprint("sshd[", i, "]")
			sg.ArtifactID = fmt.Sprint("a-", i) // no UUID
			sg.Count = 3
		}
		tl.route("org", []*vigil.Detection{logScan(key, sg)}, t0)
		want = append(want, key+" "+sigString(sg))
	}
	if tl.LogHeld() < 400 {
		t.Fatalf("%d keys logged, want most of 500", tl.LogHeld())
	}
	var got []string
	for _, h := range tl.Drain() {
		for _, sg := range h.Signals {
			got = append(got, h.Key.Key+" "+sigString(sg))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("drained %d signals, want %d:\n%q\n%q", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
	if _, _, hot := tl.Stats(); hot != 500 || tl.LogHeld() != 0 {
		t.Fatalf("%d keys known to the store after Drain, %d logged; want 500, 0", hot, tl.LogHeld())
	}
}

// sigString is everything of sg the store records.
func sigString(sg vigil.Signal) string {
	return fmt.Sprint(sg.Key, " ", sg.ArtifactID, " ", sg.At.UnixNano(), " ", sg.Member, " ", sg.Unit, " ", sg.Count, " ",
		sg.Evidence, " ", sg.EngineEvent, " ", sg.Nodes)
}

// BenchmarkTallyLoggedKeys is BenchmarkTallySpilledKeys with a spill log:
// one new scanning address a millisecond of event time, each one packet,
// through a Tally holding 1000 signals at most, for 7 minutes of event
// time, so that almost every key goes to the log. Reported: the heap the
// Tally holds per logged key after a GC (its files are not heap), and
// the time per key.
func BenchmarkTallyLoggedKeys(b *testing.B) {
	for b.Loop() {
		tl := NewTally(2*time.Minute, 1000)
		if err := tl.SpillTo(b.TempDir()); err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		const keys = 420_000 // 7 minutes at 1000 a second
		start := time.Now()
		for i := range keys {
			at := t0.Add(time.Duration(i) * time.Millisecond)
			key := fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255)
			d := &vigil.Detection{Detector: "ssh_bruteforce", Key: key, Span: 5 * time.Minute, MinCount: 5,
				Signals: []vigil.Signal{{Key: key, ArtifactID: fmt.Sprintf("0195f3c2-7b1e-7cc0-9a5e-%012d", i), At: at, Member: "root",
					Nodes: []vigil.NodeRef{{Type: "ip", Value: key, Key: true}}}}}
			tl.committed(tl.route("org", []*vigil.Detection{d}, at))
		}
		elapsed := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		st, held, known := tl.Stats()
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/float64(st.Logged), "heap-B/logged-key")
		b.ReportMetric(float64(elapsed.Nanoseconds())/keys, "ns/key")
		b.ReportMetric(float64(held), "held")
		b.ReportMetric(float64(known), "known-keys")
		b.ReportMetric(float64(tl.LogHeld()), "logged")
		runtime.KeepAlive(tl)
		if err := tl.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDefaultTallyBound: a Tally of the default bound holds 100,000
// signals and logs the keys of one signal beyond it, none going to the
// store; its log takes 9.6 M keys (4.8 M until the edge mix at 24,000
// artifacts a second filled it).
func TestDefaultTallyBound(t *testing.T) {
	tl := NewTally(0, 0)
	if err := tl.SpillTo(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	const keys = 250_000
	for i := range keys {
		key := fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		at := t0.Add(time.Duration(i) * time.Microsecond) // all within one horizon
		if r := tl.route("org", []*vigil.Detection{logScan(key, logSignal(key, i, at, "22"))}, at); len(r.ds) != 0 {
			t.Fatalf("key %d: %d detections for the store, want none", i, len(r.ds))
		}
	}
	st, held, _ := tl.Stats()
	if held > 100_000 || st.Logged < keys-100_000 || st.Spilled != 0 || st.Expired != 0 {
		t.Fatalf("tally %+v, %d held: want at most 100,000 held and the rest logged", st, held)
	}
	if tl.log.limit != 9_600_000 {
		t.Fatalf("the log takes %d keys, want 9,600,000", tl.log.limit)
	}
}

// TestTallyLogsKeysThatComeBack: a scanner that comes back within its
// horizon holds a few signals; beyond the limit such keys go to the spill
// log whole, not to the store, and fire with every signal as given when
// they meet the thresholds. A key of more than logSignalsMax signals
// still spills to the store.
func TestTallyLogsKeysThatComeBack(t *testing.T) {
	tc := loggingTally(t, t.TempDir(), 100)
	tl, route := tc.tl, tc.route
	const keys = 5_000
	keyOf := func(i int) string { return fmt.Sprintf("11.0.%d.%d", i/250, i%250) }
	first := map[string][]vigil.Signal{}
	for i := range keys {
		key := keyOf(i)
		at := t0.Add(time.Duration(i) * time.Millisecond)
		sigs := []vigil.Signal{logSignal(key, 2*i, at, "22"), logSignal(key, 2*i+1, at.Add(time.Millisecond), "23")}
		first[key] = sigs
		// Two packets, one batch each: the second finds the first wherever it is.
		if r := route(logScan(key, sigs[0])); len(r.ds) != 0 {
			t.Fatalf("key %d: %d detections for the store, want none", i, len(r.ds))
		}
		if r := route(logScan(key, sigs[1])); len(r.ds) != 0 {
			t.Fatalf("key %d came back: %d detections for the store, want none (logged with both packets)", i, len(r.ds))
		}
	}
	st, held, _ := tl.Stats()
	if st.Spilled != 0 || held > 100 || st.Logged < keys-100 {
		t.Fatalf("tally %+v, %d held: want the keys of two packets logged, none spilled to the store", st, held)
	}
	for i := range keys {
		key := keyOf(i)
		at := t0.Add(keys * time.Millisecond)
		r := route(logScan(key, logSignal(key, 2*keys+i, at, "80")))
		if len(r.ds) != 1 || len(r.ds[0].Signals) != 3 {
			t.Fatalf("key %d: %d detections, want one of its 3 packets", i, len(r.ds))
		}
		for j, want := range first[key] {
			if got := sigString(r.ds[0].Signals[j]); got != sigString(want) {
				t.Fatalf("key %d's packet %d came back as\n%s\nwant\n%s", i, j, got, sigString(want))
			}
		}
	}
	// A key of many packets on one port never fires a port scan; past
	// logSignalsMax it is no record for the log, and spills to the store.
	busy := "11.9.9.9"
	var sigs []vigil.Signal
	for i := range logSignalsMax + 1 {
		sigs = append(sigs, logSignal(busy, 4*keys+i, t0.Add(keys*time.Millisecond), "22"))
	}
	route(logScan(busy, sigs...))
	spilled := false
	for i := 0; i < 20_000 && !spilled; i++ {
		key := fmt.Sprintf("12.0.%d.%d", i/250, i%250)
		for _, d := range route(logScan(key, logSignal(key, 5*keys+i, t0.Add(keys*time.Millisecond), "22"))).ds {
			spilled = spilled || d.Key == busy && len(d.Signals) == logSignalsMax+1
		}
	}
	if !spilled {
		t.Fatalf("the key of %d packets was not spilled to the store whole", logSignalsMax+1)
	}
}
