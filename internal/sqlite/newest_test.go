package sqlite

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// TestNewestCacheAnswersAsTheTable records signals of a few keys in many
// transactions, some rolled back, late and out of order, with times
// shared, past what the cache holds of a key, with prunes between, and
// checks that every NewestSignals and SignalsFrom answers what the table
// holds.
func TestNewestCacheAnswersAsTheTable(t *testing.T) {
	ctx := t.Context()
	s := openSignalStore(t)
	// Less than the three keys' signals: entries are dropped to make room.
	s.newest = newNewestCache(2 * newestRows)
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	keys := []correlate.DetectionKey{{Detector: "brute", Key: "198.51.100.1"}, {Detector: "brute", Key: "198.51.100.2"}, {Detector: "scan", Key: "198.51.100.1"}}
	members := []string{"", "root", "admin", "oracle", "test"}
	errRollback := errors.New("roll back")
	n, hits, oldHits := 0, 0, 0
	for round := range 300 {
		rollback := round%7 == 3
		err := s.Correlate(ctx, "org", func(tx correlate.Tx) error {
			ct := tx.(*corrTx)
			k := keys[rng.IntN(len(keys))]
			var sigs []vigil.Signal
			for range rng.IntN(120) {
				n++
				id := fmt.Sprintf("0190a000-0000-7000-8000-%012d", n)
				if k == keys[2] && n%50 == 0 {
					id = fmt.Sprintf("sensor-%d", n) // an id that is no UUID: not cached
				}
				// 300 times in all, so that many signals share one.
				sigs = append(sigs, vigil.Signal{ArtifactID: id,
					At: base.Add(time.Duration(rng.IntN(300)) * 4 * time.Second), Member: members[rng.IntN(len(members))],
					Count: rng.IntN(3), Evidence: rng.IntN(10) == 0})
			}
			if rng.IntN(10) == 0 && n > 10 { // a redelivery: recorded once
				sigs = append(sigs, vigil.Signal{ArtifactID: fmt.Sprintf("0190a000-0000-7000-8000-%012d", n-5), At: base})
			}
			if _, err := tx.RecordSignals(ctx, k, sigs); err != nil {
				return err
			}
			for range 3 {
				k := keys[rng.IntN(len(keys))]
				from := nanos(base.Add(time.Duration(rng.IntN(300)) * 4 * time.Second))
				to := from + int64(rng.IntN(900))*int64(time.Second)
				limit := []int{1, 7, 1000}[rng.IntN(3)]
				_, cached := ct.newest.newest(signalKey{"org", k}, from, to, limit)
				got, err := tx.NewestSignals(ctx, k, from, to, limit)
				if err != nil {
					return err
				}
				want, err := ct.points(ctx, newestSQL, "org", k.Detector, k.Key, from, to, limit)
				if err != nil {
					return err
				}
				if !slices.EqualFunc(got, want, sameSignal) {
					return fmt.Errorf("round %d, %v [%d, %d] limit %d (cached before: %v): %d signals, the table %d", round, k, from, to, limit, cached, len(got), len(want))
				}
				if cached {
					hits++
				}
				_, cached = ct.newest.oldest(signalKey{"org", k}, from, limit)
				got, err = tx.SignalsFrom(ctx, k, from, limit)
				if err != nil {
					return err
				}
				want, err = ct.points(ctx, oldestSQL, "org", k.Detector, k.Key, from, limit)
				if err != nil {
					return err
				}
				if !slices.EqualFunc(got, want, sameSignal) {
					return fmt.Errorf("round %d, %v from %d limit %d (cached before: %v): %d signals, the table %d", round, k, from, limit, cached, len(got), len(want))
				}
				if cached {
					oldHits++
				}
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		if err != nil && !(rollback && errors.Is(err, errRollback)) {
			t.Fatal(err)
		}
		rows := 0
		for _, e := range s.newest.entries {
			rows += len(e.sigs)
		}
		if rows != s.newest.rows || rows > s.newest.total {
			t.Fatalf("round %d: the cache holds %d signals and counts %d (at most %d)", round, rows, s.newest.rows, s.newest.total)
		}
		if round%50 == 49 {
			if _, err := s.PruneSignals(ctx, vigil.SignalRetention{Before: base.Add(10 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("the cache answered %d of 900 reads of the newest signals, %d of 900 of the oldest", hits, oldHits)
	if hits < 300 || oldHits < 300 {
		t.Errorf("the cache answered %d and %d of 900 reads; it should answer most", hits, oldHits)
	}
}

func sameSignal(a, b vigil.Signal) bool {
	return a.At.Equal(b.At) && a.Member == b.Member && a.Count == b.Count && a.Evidence == b.Evidence
}

// TestNewestCacheHoldsABurstOfOneTime: a fast scan logs thousands of
// packets within one second, each signal at the same time. The cache
// still answers its grows, as the table does.
func TestNewestCacheHoldsABurstOfOneTime(t *testing.T) {
	ctx := t.Context()
	s := openSignalStore(t)
	k := correlate.DetectionKey{Detector: "scan", Key: "198.51.100.9"}
	at := time.Now().Truncate(time.Second)
	n := 0
	for batch := range 4 {
		err := s.Correlate(ctx, "org", func(tx correlate.Tx) error {
			ct := tx.(*corrTx)
			var sigs []vigil.Signal
			for range 1000 {
				n++
				sigs = append(sigs, vigil.Signal{ArtifactID: fmt.Sprintf("0190a000-0000-7000-8000-%012d", (n*7919)%100000),
					At: at, Member: fmt.Sprint(n % 1024)})
			}
			if _, err := tx.RecordSignals(ctx, k, sigs); err != nil {
				return err
			}
			_, cached := ct.newest.newest(signalKey{"org", k}, nanos(at), nanos(at), 1000)
			got, err := tx.NewestSignals(ctx, k, nanos(at), nanos(at), 1000)
			if err != nil {
				return err
			}
			want, err := ct.points(ctx, newestSQL, "org", k.Detector, k.Key, nanos(at), nanos(at), 1000)
			if err != nil {
				return err
			}
			if !slices.EqualFunc(got, want, sameSignal) {
				return fmt.Errorf("batch %d: the cache's %d newest signals are not the table's %d", batch, len(got), len(want))
			}
			if batch > 0 && !cached {
				return fmt.Errorf("batch %d: the burst's signals, all at one time, were read again", batch)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// openSignalStore opens a store that writes every signal to its table,
// none held in memory.
func openSignalStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "v.db"), Options{DetectionMemory: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
