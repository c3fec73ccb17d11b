package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// History: every change of an incident is an event, written in the
// transaction that made it, read back per incident (IncidentHistory) and
// per org in commit order (IncidentEventsAfter).

func historyTests() []test {
	return []test{
		{"IncidentLife", testHistoryLife},
		{"StreamResumesInOrder", testHistoryStream},
		{"StreamWhileWritersCommit", testHistoryStreamConcurrent},
		{"ObservationEdits", testHistoryObservationEdits},
	}
}

// life is an org whose incidents went through a scripted life: created
// by two analysts' observations, merged by a third's, classified by a
// rule, moved to Investigating, and a burst fired and grew on its own.
type life struct {
	org        string
	a, b, c    string // incidents: a took b; c was opened by detection
	o1, o2, o3 string // the observations posted
	burst      string // the detection's observation
}

func liveLife(t *testing.T, s Store) life {
	t.Helper()
	ctx := t.Context()
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), ipNode("198.51.100.9"))
	arts := mustArtifactIDs(t, s, org, 3)
	o1 := obs(vigil.SeverityMedium, at(0), ids(n[0]), ids(n[0]), ids(arts[0]))
	if err := recordObservation(vigil.WithActor(ctx, "ana"), s, org, o1, "first", policy); err != nil {
		t.Fatal(err)
	}
	o2 := obs(vigil.SeverityMedium, at(time.Minute), ids(n[1]), ids(n[1]), ids(arts[1]))
	if err := recordObservation(vigil.WithActor(ctx, "ana"), s, org, o2, "second", policy); err != nil {
		t.Fatal(err)
	}
	o3 := obs(vigil.SeverityMedium, at(2*time.Minute), n, n, ids(arts[2]))
	if err := recordObservation(vigil.WithActor(ctx, "bob"), s, org, o3, "bridge", policy); err != nil {
		t.Fatal(err)
	}
	if o1.IncidentID == o2.IncidentID || o3.IncidentID != o1.IncidentID {
		t.Fatalf("incidents %s %s %s: want the third observation to merge the second's incident into the first's",
			o1.IncidentID, o2.IncidentID, o3.IncidentID)
	}
	rule := &vigil.Rule{ID: vigil.NewID(), Name: "escalate", Severity: vigil.SeverityCritical}
	for range 2 { // the second changes nothing and records nothing
		if err := s.ClassifyIncident(ctx, org, o1.IncidentID, rule, at(3*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := s.SetIncidentStatus(ctx, org, o1.IncidentID, vigil.StatusInvestigating, "carol", at(4*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	// A burst far from the analysts' incidents (another key) fires and grows.
	d := bruteForce(t, s, org, "192.0.2.1", at(5*time.Minute), 7)
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:5], d.Signals[5:]
	fired := mustDetect(t, s, org, &first)
	if len(fired) != 1 || len(mustDetect(t, s, org, &rest)) != 1 {
		t.Fatalf("burst fired %v, want one observation that then grows", fired)
	}
	c := mustObservation(t, s, org, fired[0]).IncidentID
	return life{org: org, a: o1.IncidentID, b: o2.IncidentID, c: c, o1: o1.ID, o2: o2.ID, o3: o3.ID, burst: fired[0]}
}

// eventLine renders the parts of an event a test compares.
func eventLine(ev *vigil.IncidentEvent) string {
	d := ev.Detail
	s := fmt.Sprintf("%s by %s", strings.TrimPrefix(ev.Type, "incident."), ev.Actor)
	if ev.Via != "" {
		s += "/" + ev.Via
	}
	s += fmt.Sprintf(" count=%d", ev.ArtifactCount)
	for _, kv := range [][2]string{{"obs", d.ObservationID}, {"from", d.MergedFrom}, {"into", d.MergedInto},
		{"moved_from", d.MovedFrom}, {"moved_to", d.MovedTo}, {"sev", d.SeverityFrom + ">" + d.SeverityTo}} {
		if kv[1] != "" && kv[1] != ">" {
			s += " " + kv[0] + "=" + kv[1]
		}
	}
	if d.Rule != nil {
		s += " rule=" + d.Rule.Name
	}
	if d.ToStatus != 0 {
		s += fmt.Sprintf(" status=%d>%d", d.FromStatus, d.ToStatus)
		if d.Classification != nil {
			s += " " + *d.Classification
		}
	}
	return s
}

func mustHistory(t *testing.T, s Store, org, id string, p vigil.Page) ([]string, int) {
	t.Helper()
	evs, total, err := s.IncidentHistory(t.Context(), org, id, p)
	if err != nil {
		t.Fatalf("IncidentHistory: %v", err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		if ev.IncidentID != id || ev.At.IsZero() {
			t.Errorf("event %d of %s: incident %s at %v", ev.ID, id, ev.IncidentID, ev.At)
		}
		out[i] = eventLine(ev)
	}
	return out, total
}

func testHistoryLife(t *testing.T, s Store) {
	l := liveLife(t, s)
	want := []string{
		"created by ana count=1 obs=" + l.o1,
		"merged by bob count=2 from=" + l.b,
		"grew by bob count=3 obs=" + l.o3,
		"classified by system/escalate count=3 sev=medium>critical rule=escalate",
		"status_changed by carol count=3 status=1>2",
	}
	got, total := mustHistory(t, s, l.org, l.a, vigil.Page{Limit: 50})
	if !slices.Equal(got, want) || total != len(want) {
		t.Errorf("history of the surviving incident (total %d):\n%s\nwant:\n%s", total, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	page, total := mustHistory(t, s, l.org, l.a, vigil.Page{Limit: 2, Offset: 1})
	if !slices.Equal(page, want[1:3]) || total != len(want) {
		t.Errorf("page limit 2 offset 1: %q total %d, want %q total %d", page, total, want[1:3], len(want))
	}
	wantB := []string{"created by ana count=1 obs=" + l.o2, "merged by bob count=0 into=" + l.a}
	if got, _ := mustHistory(t, s, l.org, l.b, vigil.Page{Limit: 50}); !slices.Equal(got, wantB) {
		t.Errorf("history of the merged incident:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantB, "\n"))
	}
	wantC := []string{"created by system/bf count=5 obs=" + l.burst, "grew by system/bf count=7 obs=" + l.burst}
	if got, _ := mustHistory(t, s, l.org, l.c, vigil.Page{Limit: 50}); !slices.Equal(got, wantC) {
		t.Errorf("history of the detected incident:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantC, "\n"))
	}
	// The single-incident response keeps its status history.
	inc := mustIncident(t, s, l.org, l.a)
	if len(inc.History) != 1 || inc.History[0].Actor != "carol" || inc.History[0].From != 1 || inc.History[0].To != 2 ||
		!inc.History[0].At.Equal(at(4*time.Minute)) {
		t.Errorf("incident history %+v, want carol's 1 → 2 at %v", inc.History, at(4*time.Minute))
	}
	// Another org sees no such incident.
	_, _, err := s.IncidentHistory(t.Context(), vigil.NewID(), l.a, vigil.Page{Limit: 50})
	wantCode(t, err, vigil.ENOTFOUND, "IncidentHistory of another org's incident")
}

// testHistoryObservationEdits: an analyst's edit and delete of an
// incident's observation are events of the incident, by the analyst,
// with the artifact count the change left.
func testHistoryObservationEdits(t *testing.T, s Store) {
	ctx := t.Context()
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"))
	arts := mustArtifactIDs(t, s, org, 2)
	o1 := obs(vigil.SeverityMedium, at(0), ids(n[0]), ids(n[0]), ids(arts[0]))
	o2 := obs(vigil.SeverityMedium, at(time.Minute), ids(n[0]), ids(n[0]), ids(arts[1]))
	for _, o := range []*vigil.Observation{o1, o2} {
		if err := recordObservation(vigil.WithActor(ctx, "ana"), s, org, o, "x", policy); err != nil {
			t.Fatal(err)
		}
	}
	dan := vigil.WithActor(ctx, "dan")
	if _, err := updateObservation(dan, s, org, o1.ID, vigil.ObservationUpdate{Description: ptr("checked")}, at(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := deleteObservation(dan, s, org, o2.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"created by ana count=1 obs=" + o1.ID,
		"grew by ana count=2 obs=" + o2.ID,
		"observation_updated by dan count=2 obs=" + o1.ID,
		"observation_deleted by dan count=1 obs=" + o2.ID,
	}
	if got, _ := mustHistory(t, s, org, o1.IncidentID, vigil.Page{Limit: 50}); !slices.Equal(got, want) {
		t.Errorf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func testHistoryStream(t *testing.T, s Store) {
	l := liveLife(t, s)
	other := liveLife(t, s)
	evs, err := s.IncidentEventsAfter(t.Context(), l.org, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, ev := range evs {
		if i > 0 && ev.Seq <= evs[i-1].Seq {
			t.Errorf("event %d at position %d after %d", i, ev.Seq, evs[i-1].Seq)
		}
		got = append(got, strings.TrimPrefix(ev.Type, "incident.")+" "+map[string]string{l.a: "a", l.b: "b", l.c: "c"}[ev.IncidentID])
	}
	want := []string{"created a", "created b", "merged b", "merged a", "grew a", "classified a", "status_changed a", "created c", "grew c"}
	if !slices.Equal(got, want) {
		t.Fatalf("stream %q, want %q (commit order, this org only)", got, want)
	}
	rest, err := s.IncidentEventsAfter(t.Context(), l.org, evs[3].Seq, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != len(evs)-4 || rest[0].ID != evs[4].ID {
		t.Errorf("resuming after the 4th event: %d events, want the %d after it", len(rest), len(evs)-4)
	}
	two, err := s.IncidentEventsAfter(t.Context(), l.org, 0, 2)
	if err != nil || len(two) != 2 || two[1].ID != evs[1].ID {
		t.Errorf("limit 2: %d events (err %v), want the first 2", len(two), err)
	}
	// The other org's stream is its own.
	theirs, err := s.IncidentEventsAfter(t.Context(), other.org, 0, 100)
	if err != nil || len(theirs) != len(want) {
		t.Fatalf("other org's stream: %d events (err %v), want %d", len(theirs), err, len(want))
	}
	for _, ev := range theirs {
		if ev.IncidentID == l.a || ev.IncidentID == l.b || ev.IncidentID == l.c {
			t.Errorf("other org's stream carries incident %s", ev.IncidentID)
		}
	}
}

// testHistoryStreamConcurrent: a reader that follows the stream while
// writers commit at once misses nothing and sees nothing twice: an event
// committed after the reader passed never takes a position before it.
func testHistoryStreamConcurrent(t *testing.T, s Store) {
	ctx := t.Context()
	org := vigil.NewID()
	const writers, each = 4, 15
	incs := make([]string, writers)
	for i := range incs {
		incs[i] = mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), nil, nil, nil), policy).IncidentID
	}
	head, err := s.IncidentEventsHead(ctx, org)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				c := &vigil.Comment{ID: vigil.NewID(), IncidentID: incs[w], Author: "ana", Body: fmt.Sprint(i), CreatedAt: at(0), UpdatedAt: at(0)}
				if err := s.CreateComment(ctx, org, c); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	seen := map[int64]bool{}
	after, done := head, 0
	for done < writers || len(seen) < writers*each {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
			done++
		default:
		}
		evs, err := s.IncidentEventsAfter(ctx, org, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if seen[ev.ID] {
				t.Fatalf("event %d read twice", ev.ID)
			}
			seen[ev.ID] = true
			after = ev.Seq
		}
		if done == writers && len(evs) == 0 && len(seen) < writers*each {
			t.Fatalf("stream read %d of the %d events written, and nothing more comes", len(seen), writers*each)
		}
	}
	all, err := s.IncidentEventsAfter(ctx, org, head, 1000)
	if err != nil || len(all) != writers*each {
		t.Fatalf("reading again: %d events (err %v), want %d", len(all), err, writers*each)
	}
	// Each incident's events in the stream keep its history's order.
	last := map[string]int64{}
	for _, ev := range all {
		if ev.ID <= last[ev.IncidentID] {
			t.Errorf("incident %s: event %d after %d in the stream", ev.IncidentID, ev.ID, last[ev.IncidentID])
		}
		last[ev.IncidentID] = ev.ID
	}
}
