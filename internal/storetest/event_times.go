package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// artifactsAt stores one artifact of org at each of the times given
// (offsets from base) and returns their ids in that order.
func artifactsAt(t *testing.T, s Store, org string, offsets ...time.Duration) []string {
	t.Helper()
	var out []string
	for i, d := range offsets {
		a := newArtifact("test", fmt.Sprintf("event %d at %s", i, d), at(d))
		mustInsertArtifacts(t, s, org, a)
		out = append(out, a.ID)
	}
	return out
}

// wantEventTimes fails t unless incident id of org spans [first, last]
// (offsets from base), or has no event times when none is true.
func wantEventTimes(t *testing.T, s Store, org, id, what string, first, last time.Duration, none bool) {
	t.Helper()
	inc := mustIncident(t, s, org, id)
	if none {
		if inc.FirstEventAt != nil || inc.LastEventAt != nil {
			t.Errorf("%s: event times %v..%v, want none", what, inc.FirstEventAt, inc.LastEventAt)
		}
		return
	}
	if inc.FirstEventAt == nil || inc.LastEventAt == nil || !inc.FirstEventAt.Equal(at(first)) || !inc.LastEventAt.Equal(at(last)) {
		t.Errorf("%s: event times %v..%v, want %v..%v", what, inc.FirstEventAt, inc.LastEventAt, at(first), at(last))
	}
}

// testIncidentEventTimes: an incident's event times follow its
// observations as they join, go, change and merge: its artifacts'
// timestamps, or the creation time of an observation that names none.
func testIncidentEventTimes(t *testing.T, s Store) {
	org := vigil.NewID()
	a := artifactsAt(t, s, org, 0, time.Second, 2*time.Second, 3*time.Second, 4*time.Second, 5*time.Second)
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), ipNode("198.51.100.9"))
	h := time.Hour
	o1 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h), n[:1], n[:1], ids(a[2], a[3])), policy)
	inc := o1.IncidentID
	wantEventTimes(t, s, org, inc, "opened", 2*time.Second, 3*time.Second, false)
	if got := mustIncident(t, s, org, inc); !got.CreatedAt.Equal(at(h)) {
		t.Errorf("created_at %v, want %v: the time Vigil saw it stays", got.CreatedAt, at(h))
	}
	o2 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h+time.Minute), n[:1], n[:1], ids(a[0])), policy)
	wantEventTimes(t, s, org, inc, "joined by an older event", 0, 3*time.Second, false)
	o3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(h+2*time.Minute), n[:1], n[:1], nil), policy)
	wantEventTimes(t, s, org, inc, "joined by an observation naming no artifact", 0, h+2*time.Minute, false)
	if o2.IncidentID != inc || o3.IncidentID != inc {
		t.Fatal("setup: the observations did not join one incident")
	}
	if err := deleteObservation(t.Context(), s, org, o3.ID); err != nil {
		t.Fatal(err)
	}
	wantEventTimes(t, s, org, inc, "its observation without artifacts deleted", 0, 3*time.Second, false)
	if _, err := updateObservation(t.Context(), s, org, o2.ID, vigil.ObservationUpdate{ArtifactIDs: &[]string{a[4]}}, at(h+3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	wantEventTimes(t, s, org, inc, "an observation's artifacts changed", 2*time.Second, 4*time.Second, false)

	// A second incident, merged into the first by an observation naming
	// both addresses: the first spans both and the bridge's.
	o4 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h+4*time.Minute), n[1:], n[1:], ids(a[5])), policy)
	if o4.IncidentID == inc {
		t.Fatal("setup: the other address joined the first incident")
	}
	mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h+5*time.Minute), n, n, ids(a[1])), policy)
	wantEventTimes(t, s, org, inc, "merged", time.Second, 5*time.Second, false)
	wantEventTimes(t, s, org, o4.IncidentID, "merged into another, with no observation left", 0, 0, true)

	// A burst fired, then grown by later lines.
	d := bruteForce(t, s, org, "192.0.2.50", at(10*time.Minute), 8)
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:5], d.Signals[5:]
	obsIDs := mustDetect(t, s, org, &first)
	if len(obsIDs) != 1 {
		t.Fatalf("the burst fired %v, want one observation", obsIDs)
	}
	burst := mustObservation(t, s, org, obsIDs[0]).IncidentID
	wantEventTimes(t, s, org, burst, "a burst fired", 10*time.Minute, 14*time.Minute, false)
	mustDetect(t, s, org, &rest)
	wantEventTimes(t, s, org, burst, "a burst grown", 10*time.Minute, 17*time.Minute, false)
}

// testIncidentEventOrder: lists sorted by first or last event time, and
// filtered on the span of the events; an incident without event times
// is last and matches no event filter.
func testIncidentEventOrder(t *testing.T, s Store) {
	org := vigil.NewID()
	sec := time.Second
	spans := [][]time.Duration{{10 * sec, 40 * sec}, {20 * sec}, {30 * sec, 50 * sec}, {60 * sec}}
	var inc []string
	for i, sp := range spans {
		o := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(time.Duration(i+1)*time.Hour), nil, nil, artifactsAt(t, s, org, sp...)), policy)
		inc = append(inc, o.IncidentID)
	}
	// The last one's only observation goes: it has no event times left.
	last := mustIncident(t, s, org, inc[3])
	if err := deleteObservation(t.Context(), s, org, last.Observations[0].ID); err != nil {
		t.Fatal(err)
	}
	wantEventTimes(t, s, org, inc[3], "without observations", 0, 0, true)
	x, y, z, w := inc[0], inc[1], inc[2], inc[3]
	for _, tc := range []struct {
		name  string
		f     vigil.IncidentFilter
		want  []string
		total int
	}{
		{"by first event", vigil.IncidentFilter{Sort: vigil.IncidentSortFirstEvent}, ids(z, y, x, w), 4},
		{"by last event", vigil.IncidentFilter{Sort: vigil.IncidentSortLastEvent}, ids(z, x, y, w), 4},
		{"by last event, page 2", vigil.IncidentFilter{Sort: vigil.IncidentSortLastEvent, Page: vigil.Page{Limit: 2, Offset: 2}}, ids(y, w), 4},
		{"events meeting [35 s, 45 s)", vigil.IncidentFilter{EventRange: vigil.TimeRange{Start: at(35 * sec), End: at(45 * sec)}}, ids(z, x), 2},
		{"events from 45 s", vigil.IncidentFilter{EventRange: vigil.TimeRange{Start: at(45 * sec)}}, ids(z), 1},
		{"events before 15 s", vigil.IncidentFilter{EventRange: vigil.TimeRange{End: at(15 * sec)}}, ids(x), 1},
		{"an event at the end is out", vigil.IncidentFilter{EventRange: vigil.TimeRange{Start: at(0), End: at(20 * sec)}}, ids(x), 1},
		{"an event at the start is in", vigil.IncidentFilter{EventRange: vigil.TimeRange{Start: at(20 * sec), End: at(21 * sec)}}, ids(y, x), 2},
		{"events and creation", vigil.IncidentFilter{EventRange: vigil.TimeRange{Start: at(35 * sec)}, Range: vigil.TimeRange{End: at(2 * time.Hour)}}, ids(x), 1},
		{"events, sorted by first", vigil.IncidentFilter{EventRange: vigil.TimeRange{End: at(time.Hour)}, Sort: vigil.IncidentSortFirstEvent}, ids(z, y, x), 3},
	} {
		list, total := mustListIncidents(t, s, org, tc.f)
		if total != tc.total || !slices.Equal(incidentIDs(list), tc.want) {
			t.Errorf("%s: %v (total %d), want %v (total %d)", tc.name, incidentIDs(list), total, tc.want, tc.total)
		}
	}
}

// EventTimesBackfill records in s incidents whose event times correlation
// keeps as it goes (observations joining, a burst growing, an observation
// naming no artifact, one changed, one deleted, a merge), and returns a
// check that another store (s reopened after its migration computed the
// event times again from what the incidents hold) has the same.
func EventTimesBackfill(t *testing.T, s Store) (check func(t *testing.T, s vigil.Store)) {
	t.Helper()
	org := vigil.NewID()
	h := time.Hour
	a := artifactsAt(t, s, org, 0, time.Second, 2*time.Second, 3*time.Second)
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), ipNode("198.51.100.9"), ipNode("192.0.2.9"))
	mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h), n[:1], n[:1], ids(a[2])), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(h+time.Minute), n[:1], n[:1], nil), policy)
	mustRecord(t, s, org, obs(vigil.SeverityLow, at(h+2*time.Minute), n[:1], n[:1], nil), policy)
	if err := deleteObservation(t.Context(), s, org, o2.ID); err != nil {
		t.Fatal(err)
	}
	o4 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h+3*time.Minute), n[1:2], n[1:2], ids(a[3])), policy)
	if _, err := updateObservation(t.Context(), s, org, o4.ID, vigil.ObservationUpdate{ArtifactIDs: &[]string{a[0], a[3]}}, at(h+4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h+5*time.Minute), n[:2], n[:2], ids(a[1])), policy)
	mustRecord(t, s, org, obs(vigil.SeverityMedium, at(h+6*time.Minute), n[2:], n[2:], nil), policy)
	d := bruteForce(t, s, org, "192.0.2.50", at(10*time.Minute), 8)
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:5], d.Signals[5:]
	mustDetect(t, s, org, &first)
	mustDetect(t, s, org, &rest)

	kept, total := mustListIncidents(t, s, org, vigil.IncidentFilter{Merged: vigil.MergedInclude, Page: vigil.Page{Limit: vigil.MaxLimit}})
	var none, some int
	for _, i := range kept {
		if i.FirstEventAt == nil {
			none++
		} else {
			some++
		}
	}
	if total != 4 || none != 1 || some != 3 {
		t.Fatalf("setup: %d incidents, %d with event times and %d without; want 4, 3, 1", total, some, none)
	}
	return func(t *testing.T, s vigil.Store) {
		t.Helper()
		for _, want := range kept {
			got := mustIncident(t, s, org, want.ID)
			if !sameTime(got.FirstEventAt, want.FirstEventAt) || !sameTime(got.LastEventAt, want.LastEventAt) {
				t.Errorf("incident %s: event times %v..%v computed by the migration, %v..%v kept by correlation",
					want.Title, got.FirstEventAt, got.LastEventAt, want.FirstEventAt, want.LastEventAt)
			}
		}
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
