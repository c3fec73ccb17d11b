package sqlite_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// The detection signals counted in memory (correlate.Tally) must fire
// exactly what the store alone fires: these tests run the same detections
// through a store with a Tally and one that records every signal.

var tallyBase = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

func openTallyStore(t *testing.T, path string, memory int) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{DetectionMemory: memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// scanDetection is a port scan as the detectors make one: 5 packets on
// at least 3 ports within a minute.
func scanDetection(key string, sigs []vigil.Signal) *vigil.Detection {
	return &vigil.Detection{Detector: "scan", Key: key, Span: time.Minute, MinCount: 5, MinDistinct: 3, Signals: sigs,
		Describe: func(key string, w vigil.WindowState) vigil.Finding {
			return vigil.Finding{Type: "recon", Severity: vigil.SeverityLow, Title: "scan from " + key,
				Description: fmt.Sprintf("%s: %d packets, %d ports, %s to %s, grown %v", key, w.Count, w.Distinct,
					w.First.Format(time.TimeOnly), w.Last.Format(time.TimeOnly), w.Grown)}
		}}
}

// signalAt returns a signal of key at base+at on port member, with an
// artifact stored in s (and in each of also).
func signalAt(t *testing.T, id, key string, at time.Duration, member string, stores ...*sqlite.Store) vigil.Signal {
	t.Helper()
	ts := tallyBase.Add(at)
	for _, s := range stores {
		a := &vigil.Artifact{ID: id, Source: "firewall", Raw: "SRC=" + key + " DPT=" + member, Timestamp: ts, CreatedAt: ts,
			Metadata: json.RawMessage(`{}`)}
		if err := s.InsertArtifacts(t.Context(), "org", []*vigil.Artifact{a}); err != nil {
			t.Fatal(err)
		}
	}
	return vigil.Signal{Key: key, ArtifactID: id, At: ts, Member: member,
		Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}}}
}

// observed lists what a store's detections recorded: each observation's
// description and artifacts, sorted.
func observed(t *testing.T, s *sqlite.Store) []string {
	t.Helper()
	obs, _, err := s.ListObservations(t.Context(), "org", vigil.ObservationFilter{Page: vigil.Page{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range obs {
		ids := slices.Clone(o.ArtifactIDs)
		slices.Sort(ids)
		out = append(out, fmt.Sprintf("%s %v", o.Description, ids))
	}
	sort.Strings(out)
	return out
}

func detectAll(t *testing.T, s *sqlite.Store, ds ...*vigil.Detection) int {
	t.Helper()
	got, err := correlate.NewEngine(s, nil, vigil.DefaultCorrelationPolicy()).Detect(t.Context(), "org", ds)
	if err != nil {
		t.Fatal(err)
	}
	return len(got)
}

// TestTallyMatchesTheStore: a random stream of scans over 40 addresses,
// out of order within a batch and between batches (within the lateness),
// a fifth of the batches delivered twice, through a store that holds at
// most 25 signals in memory (so keys spill to the database all the
// time), or the default 100,000 (nothing spills), and a store that
// records every signal: both record the same
// observations with the same artifacts. A third of the addresses are
// IPv6, longer than the keys the Tally holds inline.
func TestTallyMatchesTheStore(t *testing.T) {
	for seed, memory := range []int{25, 0, 25, 0} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := t.TempDir()
			tallied := openTallyStore(t, filepath.Join(dir, "tally.db"), memory)
			plain := openTallyStore(t, filepath.Join(dir, "plain.db"), -1)
			r := rand.New(rand.NewPCG(uint64(seed), 99))
			var stream []vigil.Signal
			for i := range 1500 {
				n := min(r.IntN(40), r.IntN(40)) // a few busy keys, a tail of quiet ones
				key := fmt.Sprintf("198.51.100.%d", n)
				if n%3 == 0 {
					key = fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:ffff:%d", n) // longer than the keys held inline
				}
				at := time.Duration(i)*700*time.Millisecond - time.Duration(r.IntN(60))*time.Second
				stream = append(stream, signalAt(t, fmt.Sprintf("a%05d", i), key, at, fmt.Sprint(r.IntN(5)), tallied, plain))
			}
			fired := 0
			for len(stream) > 0 {
				n := min(1+r.IntN(30), len(stream))
				batch := stream[:n]
				stream = stream[n:]
				for range 1 + min(1, r.IntN(5)/4) { // a redelivery now and then
					byKey := map[string][]vigil.Signal{}
					var keys []string
					for _, sg := range batch {
						if byKey[sg.Key] == nil {
							keys = append(keys, sg.Key)
						}
						byKey[sg.Key] = append(byKey[sg.Key], sg)
					}
					var ds []*vigil.Detection
					for _, k := range keys {
						sigs := byKey[k]
						sort.SliceStable(sigs, func(i, j int) bool { return sigs[i].At.Before(sigs[j].At) })
						ds = append(ds, scanDetection(k, sigs))
					}
					a, b := detectAll(t, tallied, ds...), detectAll(t, plain, ds...)
					if a != b {
						t.Fatalf("a batch recorded %d observations with the tally, %d without", a, b)
					}
					fired += a
				}
			}
			st, held, hot := tallied.Tally().Stats()
			t.Logf("%d detections recorded; tally: %+v, %d signals held, %d hot keys", fired, st, held, hot)
			if st.Promoted == 0 || held == 0 || (st.Spilled+st.Logged == 0) != (memory == 0) || (st.Logged == 0) != (memory == 0) {
				t.Fatalf("tally %+v, %d held: want keys held, promoted and spilled", st, held)
			}
			if a, b := observed(t, tallied), observed(t, plain); !slices.Equal(a, b) {
				t.Fatalf("observations differ:\ntally %d: %q\nstore %d: %q", len(a), a, len(b), b)
			}
		})
	}
}

// TestTallySpillKeepsTheCount: a key spilled to the database to keep
// within the memory bound, with 9 packets on 2 ports (more than the spill
// log takes as one record), fires at its tenth on a third port: the
// spilled signals count.
func TestTallySpillKeepsTheCount(t *testing.T) {
	s := openTallyStore(t, filepath.Join(t.TempDir(), "v.db"), 1)
	var sigs []vigil.Signal
	var ids []string
	for i := range 9 {
		sigs = append(sigs, signalAt(t, fmt.Sprint("s", i), "203.0.113.9", time.Duration(i)*time.Second, fmt.Sprint(i%2), s))
		ids = append(ids, fmt.Sprint("s", i))
	}
	if n := detectAll(t, s, scanDetection("203.0.113.9", sigs)); n != 0 {
		t.Fatalf("9 packets on 2 ports fired %d", n)
	}
	if st, held, _ := s.Tally().Stats(); st.Spilled != 1 || st.Logged != 0 || held != 0 {
		t.Fatalf("tally %+v, %d held: want the key spilled to the database", st, held)
	}
	tenth := signalAt(t, "s9", "203.0.113.9", 9*time.Second, "2", s)
	if n := detectAll(t, s, scanDetection("203.0.113.9", []vigil.Signal{tenth})); n != 1 {
		t.Fatalf("the tenth packet recorded %d observations, want 1", n)
	}
	want := fmt.Sprintf("203.0.113.9: 10 packets, 3 ports, 09:00:00 to 09:00:09, grown false %v", append(ids, "s9"))
	if got := observed(t, s); len(got) != 1 || got[0] != want {
		t.Fatalf("observations %q, want %q", got, want)
	}
}

// TestTallyLogsKeysOfOneSignal: the keys of one signal a full Tally
// spills go to its spill log, not the database (whose writer paid a row
// for each), and count all the same: a logged key's next packets fire
// with its first, and a restart counts the keys logged when the store
// closed.
func TestTallyLogsKeysOfOneSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{DetectionMemory: 10})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 300
	key := func(i int) string { return fmt.Sprintf("198.51.%d.%d", i/250, i%250) }
	for i := range keys {
		sg := signalAt(t, fmt.Sprintf("k%04d", i), key(i), time.Duration(i)*10*time.Millisecond, "0", s)
		detectAll(t, s, scanDetection(key(i), []vigil.Signal{sg}))
	}
	inDB := 0
	if err := s.Correlate(t.Context(), "org", func(tx correlate.Tx) error {
		for i := range keys {
			sigs, err := tx.WindowSignals(t.Context(), correlate.DetectionKey{Detector: "scan", Key: key(i)}, 0, tallyBase.Add(time.Hour).UnixNano(), 10)
			if err != nil {
				return err
			}
			inDB += len(sigs)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if inDB != 0 {
		t.Fatalf("the database holds %d signals of the %d keys of one packet, want none", inDB, keys)
	}
	if st, held, _ := s.Tally().Stats(); st.Logged < keys-10 || st.Spilled != 0 || held > 10 {
		t.Fatalf("tally %+v, %d held: want the keys beyond the limit logged", st, held)
	}
	// Four more packets of a key: it fires with its first.
	var more []vigil.Signal
	for j := 1; j < 5; j++ {
		more = append(more, signalAt(t, fmt.Sprintf("k0007-%d", j), key(7), 5*time.Second, fmt.Sprint(j), s))
	}
	if n := detectAll(t, s, scanDetection(key(7), more)); n != 1 {
		t.Fatalf("a logged key's 4 more packets recorded %d observations, want 1", n)
	}
	want := "198.51.0.7: 5 packets, 5 ports, 09:00:00 to 09:00:05, grown false [k0007 k0007-1 k0007-2 k0007-3 k0007-4]"
	if got := observed(t, s); len(got) != 1 || got[0] != want {
		t.Fatalf("observations %q, want %q", got, want)
	}
	// The rest are written when the store closes, and count after it.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-tally"); !os.IsNotExist(err) {
		t.Fatalf("the spill log's directory after Close: %v", err)
	}
	s = openTallyStore(t, path, 10)
	more = more[:0]
	for j := 1; j < 5; j++ {
		more = append(more, signalAt(t, fmt.Sprintf("k0200-%d", j), key(200), 5*time.Second, fmt.Sprint(j), s))
	}
	if n := detectAll(t, s, scanDetection(key(200), more)); n != 1 {
		t.Fatalf("after the restart, a key's 4 more packets recorded %d observations, want 1 with its first", n)
	}
}

// TestTallyRestart: the signals held in memory when the store closes are
// written to its snapshot, and after a restart they are held in memory
// again and count with the next; the snapshot is gone once read, and a
// damaged one starts the counts from zero without failing the open.
func TestTallyRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := "203.0.113.9"
	var sigs []vigil.Signal
	for i := range 4 {
		sigs = append(sigs, signalAt(t, fmt.Sprint("s", i), key, time.Duration(i)*time.Second, fmt.Sprint(i), s))
	}
	detectAll(t, s, scanDetection(key, sigs))
	if _, held, _ := s.Tally().Stats(); held != 4 {
		t.Fatalf("%d signals held, want 4", held)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snapshot := path + "-tally.snapshot"
	saved, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatalf("no snapshot after Close: %v", err)
	}
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, held, hot := s.Tally().Stats(); held != 4 || hot != 0 {
		t.Fatalf("after the restart %d signals held, %d keys known to the database; want 4, 0", held, hot)
	}
	if _, err := os.Stat(snapshot); !os.IsNotExist(err) {
		t.Fatalf("the snapshot after the open: %v, want it removed", err)
	}
	fifth := signalAt(t, "s4", key, 5*time.Second, "4", s)
	if n := detectAll(t, s, scanDetection(key, []vigil.Signal{fifth})); n != 1 {
		t.Fatalf("the fifth packet after the restart recorded %d observations, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A damaged snapshot: the open goes on, its counts start from zero.
	saved[len(saved)/2] ^= 0xff
	if err := os.WriteFile(snapshot, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatalf("a damaged snapshot failed the open: %v", err)
	}
	defer s.Close()
	if !strings.Contains(logged.String(), "damaged") {
		t.Fatalf("the damaged snapshot was not logged: %q", logged.String())
	}
	if _, err := os.Stat(snapshot); !os.IsNotExist(err) {
		t.Fatalf("the damaged snapshot after the open: %v, want it removed", err)
	}
}

// TestTallyLate: a signal more than the lateness behind its detector's
// newest goes to the database with the signals held of its key, and fires
// with them; keys whose newest signal is more than span + lateness behind
// are forgotten.
func TestTallyLate(t *testing.T) {
	s := openTallyStore(t, filepath.Join(t.TempDir(), "v.db"), 0)
	key := "203.0.113.9"
	var sigs []vigil.Signal
	for i := range 4 {
		sigs = append(sigs, signalAt(t, fmt.Sprint("s", i), key, time.Duration(i)*time.Second, fmt.Sprint(i), s))
	}
	detectAll(t, s, scanDetection(key, sigs))
	// Another address, 10 minutes on: the key's next packet is late.
	now := signalAt(t, "n0", "192.0.2.1", 10*time.Minute, "1", s)
	detectAll(t, s, scanDetection("192.0.2.1", []vigil.Signal{now}))
	late := signalAt(t, "s4", key, 5*time.Second, "4", s)
	if n := detectAll(t, s, scanDetection(key, []vigil.Signal{late})); n != 1 {
		t.Fatalf("the late fifth packet recorded %d observations, want 1", n)
	}
	if st, _, _ := s.Tally().Stats(); st.Late != 1 {
		t.Fatalf("tally %+v: want one late detection", st)
	}
}

// BenchmarkDetectNewKeys is the cost of a detection key seen once (a
// scanning address's single packet): batches of 1000 new keys, one
// second of event time apart (1000 new keys a second), through
// Engine.Detect on a store with its Tally ("memory"), on one whose Tally
// holds 1000 signals so that almost every key spills ("spill"), and on
// one that records every signal ("database"). ns/op is per key.
func BenchmarkDetectNewKeys(b *testing.B) {
	for _, bc := range []struct {
		name   string
		memory int
	}{{"memory", 0}, {"spill", 1000}, {"database", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "v.db"), sqlite.Options{DetectionMemory: bc.memory})
			if err != nil {
				b.Fatal(err)
			}
			e := correlate.NewEngine(s, nil, vigil.DefaultCorrelationPolicy())
			const batch = 1000
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for i := 0; i < b.N; i += batch {
				at := tallyBase.Add(time.Duration(i/batch) * time.Second)
				ds := make([]*vigil.Detection, 0, batch)
				for k := range min(batch, b.N-i) {
					key := fmt.Sprintf("11.%d.%d.%d", (i+k)>>16&255, (i+k)>>8&255, (i+k)&255)
					ds = append(ds, scanDetection(key, []vigil.Signal{{Key: key, ArtifactID: fmt.Sprint("a", i+k), At: at, Member: "22",
						Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}}}}))
				}
				if _, err := e.Detect(b.Context(), "org", ds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.StopTimer()
			s.Close() // writes the keys held in memory: once per process, not per key
		})
	}
}

// processCPU returns the CPU time (user and system) of the process so far.
func processCPU(b *testing.B) time.Duration { return storetest.ProcessCPU(b) }
