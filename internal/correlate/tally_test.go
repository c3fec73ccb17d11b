package correlate

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestTallyForgetsPastTheHorizon: a key whose newest signal is more than
// span + lateness behind its detector's newest is forgotten at the next
// sweep, and its next signal counts from nothing; a key within the
// horizon is kept.
func TestTallyForgetsPastTheHorizon(t *testing.T) {
	tl := NewTally(2*time.Minute, 0)
	det := func(key string, at time.Time) *vigil.Detection {
		return &vigil.Detection{Detector: "scan", Key: key, Span: time.Minute, MinCount: 5,
			Signals: []vigil.Signal{{ArtifactID: fmt.Sprint(key, at.Unix()), At: at}}}
	}
	clock := t0
	route := func(ds ...*vigil.Detection) routed {
		clock = clock.Add(sweepEvery)
		return tl.route("org", ds, clock)
	}
	route(det("old", t0), det("near", t0.Add(7*time.Minute)))
	if r := route(det("new", t0.Add(10*time.Minute))); len(r.ds) != 0 {
		t.Fatalf("%d detections for the database, want none (one signal each)", len(r.ds))
	}
	st, held, _ := tl.Stats()
	if st.Expired != 1 || held != 2 {
		t.Fatalf("tally %+v, %d held; want the key 3 minutes past the horizon forgotten, the other two held", st, held)
	}
	// The forgotten key's next signal is no late one: it starts anew.
	if r := route(det("old", t0.Add(10*time.Minute))); len(r.ds) != 0 || heldOf(tl, "org", "scan", "old") != 1 {
		t.Fatalf("the forgotten key's next signal: %d for the database, want it held alone", len(r.ds))
	}
}

// TestTallyPruneKeepsLongWindows: Prune forgets the held signals the
// retention does not keep, and keeps those of the detectors it keeps
// longer.
func TestTallyPruneKeepsLongWindows(t *testing.T) {
	tl := NewTally(2*time.Minute, 0)
	det := func(detector string) *vigil.Detection {
		return &vigil.Detection{Detector: detector, Key: "k", Span: 48 * time.Hour, MinCount: 5,
			Signals: []vigil.Signal{{ArtifactID: detector, At: t0}}}
	}
	tl.route("org", []*vigil.Detection{det("sigma:corr"), det("scan")}, t0)
	keep := vigil.SignalRetention{Before: t0.Add(time.Hour), Longer: map[string]time.Time{"sigma:": t0.Add(-time.Hour)}}
	if n := tl.Prune(keep); n != 1 {
		t.Fatalf("Prune forgot %d signals, want scan's one", n)
	}
	if _, held, _ := tl.Stats(); held != 1 {
		t.Fatalf("%d held, want the correlation's signal", held)
	}
	keep.Longer["sigma:"] = t0.Add(time.Minute)
	if n := tl.Prune(keep); n != 1 {
		t.Fatalf("Prune past the long bound forgot %d, want 1", n)
	}
}

// heldOf returns how many signals tl holds in memory of (org, detector,
// key).
func heldOf(tl *Tally, org, detector, key string) int {
	_, c := tl.coldOf(tallyKey{org, detector, key})
	if c == nil {
		return 0
	}
	return len(c.sigs)
}
