package sqlite_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// spilledKeys are n keys of 1 to 3 scan signals each, on artifacts stored
// in the stores, the first key's first signal given twice.
func spilledKeys(t *testing.T, n int, stores ...*sqlite.Store) []correlate.KeySignals {
	t.Helper()
	var out []correlate.KeySignals
	for i := range n {
		key := fmt.Sprintf("198.51.%d.%d", i/250, i%250)
		k := correlate.KeySignals{DetectionKey: correlate.DetectionKey{Detector: "scan", Key: key}}
		for j := range 1 + i%3 {
			k.Signals = append(k.Signals, signalAt(t, fmt.Sprintf("k%04d-%d", i, j), key, time.Duration(i+j)*time.Second, fmt.Sprint(j), stores...))
		}
		out = append(out, k)
	}
	out[0].Signals = append(out[0].Signals, out[0].Signals[0])
	return out
}

// TestRecordSpilledAsRecordSignals: the signals of 200 keys spilled at
// once (statements of 64 rows and fewer) are what RecordSignals of each
// key records, a signal repeated and a batch delivered again counting
// once.
func TestRecordSpilledAsRecordSignals(t *testing.T) {
	dir := t.TempDir()
	batched := openTallyStore(t, filepath.Join(dir, "batched.db"), -1)
	each := openTallyStore(t, filepath.Join(dir, "each.db"), -1)
	ks := spilledKeys(t, 200, batched, each)
	for range 2 { // the second time, a redelivery
		if err := batched.Correlate(t.Context(), "org", func(tx correlate.Tx) error {
			return tx.(correlate.SpillRecorder).RecordSpilled(t.Context(), ks)
		}); err != nil {
			t.Fatal(err)
		}
		if err := each.Correlate(t.Context(), "org", func(tx correlate.Tx) error {
			for _, k := range ks {
				if _, err := tx.RecordSignals(t.Context(), k.DetectionKey, k.Signals); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(s *sqlite.Store) []string {
		var out []string
		if err := s.Correlate(t.Context(), "org", func(tx correlate.Tx) error {
			for _, k := range ks {
				sigs, err := tx.WindowSignals(t.Context(), k.DetectionKey, 0, tallyBase.Add(time.Hour).UnixNano(), 100)
				if err != nil {
					return err
				}
				for _, sg := range sigs {
					out = append(out, fmt.Sprintf("%s %s %s %s %d %v", k.Key, sg.ArtifactID, sg.At.Format(time.RFC3339Nano), sg.Member, sg.Weight(), sg.Nodes))
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := read(batched), read(each)
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Fatalf("spilled at once: %d signals, one key at a time: %d\n%q\n%q", len(a), len(b), a[:min(5, len(a))], b[:min(5, len(b))])
	}
}

// BenchmarkRecordSpilled records what a full Tally spills in a batch of
// the internet-edge mix, 750 new keys of one port-scan signal each, in
// one transaction, into a store that holds 300,000 such keys: "each" as
// RecordSignals of each key, "spilled" at once (RecordSpilled). ns/op is
// per batch, cpu-ms/op the process's CPU per batch (what repeats on a
// loaded machine); the same rows are written either way.
//
//	go test -run '^$' -bench RecordSpilled -benchtime 200x -count 6 ./internal/sqlite/
func BenchmarkRecordSpilled(b *testing.B) {
	const perBatch, before = 750, 300_000
	for _, mode := range []string{"each", "spilled"} {
		b.Run(mode, func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "v.db"), sqlite.Options{DetectionMemory: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			next := 0
			batch := func() []correlate.KeySignals {
				ks := make([]correlate.KeySignals, perBatch)
				for i := range ks {
					key := fmt.Sprintf("11.%d.%d.%d", next>>16&255, next>>8&255, next&255)
					at := tallyBase.Add(time.Duration(next) * 100 * time.Microsecond)
					ks[i] = correlate.KeySignals{DetectionKey: correlate.DetectionKey{Detector: "port_scan", Key: key},
						Signals: []vigil.Signal{{Key: key, ArtifactID: vigil.NewID(), At: at, Member: "22",
							Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}, {Type: vigil.NodeIP, Value: "203.0.113.10"}}}}}
					next++
				}
				return ks
			}
			record := func(ks []correlate.KeySignals, spilled bool) {
				if err := s.Correlate(b.Context(), "org", func(tx correlate.Tx) error {
					if spilled {
						return tx.(correlate.SpillRecorder).RecordSpilled(b.Context(), ks)
					}
					for _, k := range ks {
						if _, err := tx.RecordSignals(b.Context(), k.DetectionKey, k.Signals); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			for range before / perBatch {
				record(batch(), true)
			}
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				ks := batch()
				cpu0 := storetest.ProcessCPU(b)
				b.StartTimer()
				record(ks, mode == "spilled")
				cpu += storetest.ProcessCPU(b) - cpu0
			}
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
	}
}
