package correlate

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestTallySnapshot: a Tally restored from another's snapshot holds the
// same signals of the same keys, in memory and in its spill log, and
// routes the next signals as the first would; the keys the store holds
// signals of take the snapshot's as pending, sent with their next.
func TestTallySnapshot(t *testing.T) {
	fill := func() *Tally {
		tl := NewTally(2*time.Minute, 50)
		if err := tl.SpillTo(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			key := fmt.Sprintf("11.0.%d.%d", i/250, i%250)
			if i%7 == 0 {
				key = fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:ffff:%d", i) // longer than the keys held inline
			}
			at := t0.Add(time.Duration(i) * time.Millisecond)
			sigs := []vigil.Signal{logSignal(key, i, at, "22")}
			if i%10 == 0 { // two ports: held in memory, below the threshold of 3
				sigs = append(sigs, logSignal(key, 1000+i, at, "23"))
			}
			if i%3 == 0 {
				sigs[0].Unit = fmt.Sprint("sshd[", i, "]")
				sigs[0].ArtifactID = fmt.Sprint("a-", i) // no UUID
				sigs[0].Count = 3
			}
			// As the store does: what goes to it is written.
			tl.committed(tl.route("org", []*vigil.Detection{logScan(key, sigs...)}, t0))
		}
		return tl
	}
	orig := fill()
	var snap bytes.Buffer
	saved, err := orig.Save(&snap)
	if err != nil {
		t.Fatal(err)
	}
	if saved < 250 {
		t.Fatalf("saved %d keys, want most of 300 (some spilled to the store)", saved)
	}
	_, wantHeld, _ := orig.Stats()
	want := drained(orig.Drain())

	restored := NewTally(2*time.Minute, 50)
	if err := restored.SpillTo(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	// The store holds signals of one key: the snapshot's go with its next.
	restored.Hold("org", "port_scan", "11.0.0.1", t0.UnixNano())
	n, err := restored.Restore(bytes.NewReader(snap.Bytes()))
	if err != nil || n != saved {
		t.Fatalf("restored %d keys, %v; want %d", n, err, saved)
	}
	if _, held, _ := restored.Stats(); held+restored.LogHeld() < wantHeld {
		t.Fatalf("%d signals held and %d logged after the restore, want %d held before", held, restored.LogHeld(), wantHeld)
	}
	next := logSignal("11.0.0.1", 5000, t0.Add(time.Second), "24")
	r := restored.route("org", []*vigil.Detection{logScan("11.0.0.1", next)}, t0)
	if len(r.ds) != 1 || len(r.ds[0].Signals) != 2 {
		t.Fatalf("the store's key routed %d detections (%v), want 1 of its restored signal and its next", len(r.ds), r.ds[0].Signals)
	}
	// A key logged before comes again: it fires with its restored signal
	// and another restored in memory.
	key := "11.0.0.12"
	r = restored.route("org", []*vigil.Detection{logScan(key, logSignal(key, 6000, t0.Add(time.Second), "25"), logSignal(key, 6001, t0.Add(time.Second), "26"))}, t0)
	if len(r.ds) != 1 || len(r.ds[0].Signals) != 3 {
		t.Fatalf("a restored key and 2 more ports routed %v, want it to fire with 3 signals", r.ds)
	}
	got := drained(restored.Drain())
	got = slices.DeleteFunc(got, func(s string) bool { return len(s) > 8 && (s[:9] == "11.0.0.1 " || s[:10] == "11.0.0.12 ") })
	want = slices.DeleteFunc(want, func(s string) bool { return len(s) > 8 && (s[:9] == "11.0.0.1 " || s[:10] == "11.0.0.12 ") })
	if !slices.Equal(got, want) {
		t.Fatalf("restored %d signals, want %d:\n%q\n%q", len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
	}

	// A damaged snapshot restores nothing.
	b := bytes.Clone(snap.Bytes())
	b[len(b)/2] ^= 1
	empty := NewTally(2*time.Minute, 50)
	if n, err := empty.Restore(bytes.NewReader(b)); err == nil || n != 0 {
		t.Fatalf("a damaged snapshot restored %d keys, %v", n, err)
	}
	if _, held, _ := empty.Stats(); held != 0 {
		t.Fatalf("a damaged snapshot left %d signals held", held)
	}
}

// drained is every signal of hs as sigString gives it, sorted.
func drained(hs []Held) []string {
	var out []string
	for _, h := range hs {
		for _, sg := range h.Signals {
			out = append(out, h.Key.Key+" "+sigString(sg))
		}
	}
	slices.Sort(out)
	return out
}

// TestTallySnapshotPending: the signals a hot key carries to a
// transaction that did not commit are saved, and held again after the
// restore.
func TestTallySnapshotPending(t *testing.T) {
	tl := NewTally(2*time.Minute, 50)
	key := "11.0.0.9"
	var sigs []vigil.Signal
	for i, port := range []string{"22", "23", "24"} {
		sigs = append(sigs, logSignal(key, i, t0.Add(time.Duration(i)*time.Second), port))
	}
	if r := tl.route("org", []*vigil.Detection{logScan(key, sigs...)}, t0); len(r.ds) != 1 || len(r.pending) != 1 {
		t.Fatalf("3 ports routed %d detections, %d pending; want the key to go to the store", len(r.ds), len(r.pending))
	}
	var snap bytes.Buffer
	if n, err := tl.Save(&snap); err != nil || n != 1 {
		t.Fatalf("saved %d keys, %v; want the pending one", n, err)
	}
	restored := NewTally(2*time.Minute, 50)
	if n, err := restored.Restore(bytes.NewReader(snap.Bytes())); err != nil || n != 1 {
		t.Fatalf("restored %d keys, %v", n, err)
	}
	if got := drained(restored.Drain()); len(got) != 3 {
		t.Fatalf("restored %q, want the 3 pending signals", got)
	}
}
