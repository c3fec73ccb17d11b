package correlate

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestDetectGrowsAnIncidentOncePerBatch: the bursts of two keys whose
// observations are in one incident grow in one batch. The incident takes
// what they bring once (GrowIncident: their one node and two artifacts,
// each once), after both observations grew, and then records each
// growth's incident.grew. Failing before: each growth wrote the incident
// and recorded its event on its own.
func TestDetectGrowsAnIncidentOncePerBatch(t *testing.T) {
	tx := newFake()
	var ds []*vigil.Detection
	for _, key := range []string{"k1", "k2"} {
		k := DetectionKey{"bf", key}
		tx.bursts[k] = []Burst{{DetectionKey: k, ObservationID: "obs-" + key, IncidentID: "inc",
			Last: nanos(t0.Add(-10 * time.Second)), Open: true, Severity: vigil.SeverityMedium, Signals: 3}}
		d := detection(t0.Add(time.Second), 2) // the same two artifacts for both keys
		d.Key = key
		ds = append(ds, d)
	}
	e := NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	got, err := e.Detect(t.Context(), "org", ds)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Detect = %+v, want both observations grown", got)
	}
	var grows, events []int
	lastGrowth := -1
	for i, l := range tx.log {
		switch {
		case strings.HasPrefix(l, "GrowIncident"):
			grows = append(grows, i)
			if l != "GrowIncident inc 1 2" {
				t.Errorf("%s: want incident inc given its one node and two artifacts, each once", l)
			}
		case strings.HasPrefix(l, "RecordEvent "+vigil.EventGrew+" inc"):
			events = append(events, i)
		case strings.HasPrefix(l, "GrowObservation"):
			lastGrowth = i
		}
	}
	if len(grows) != 1 || len(events) != 2 {
		t.Fatalf("log %v: want one GrowIncident and two incident.grew events", tx.log)
	}
	if grows[0] < lastGrowth || slices.ContainsFunc(events, func(i int) bool { return i < grows[0] }) {
		t.Errorf("log %v: want the incident written after both growths, and their events after it", tx.log)
	}
}
