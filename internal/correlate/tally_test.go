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
	if r := route(det("old", t0.Add(10*time.Minute))); len(r.ds) != 0 || tl.cold[coldRef{tl.pairs[[2]string{"org", "scan"}], "old"}] == nil ||
		len(tl.cold[coldRef{tl.pairs[[2]string{"org", "scan"}], "old"}].sigs) != 1 {
		t.Fatalf("the forgotten key's next signal: %d for the database, want it held alone", len(r.ds))
	}
}
