package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// Headline: an incident is named and rated after its observation of the
// highest vigil.TitleRank (severity, then specificity), the newest on
// ties, whatever changes its observations (join, growth, merge, update,
// delete).

func headlineTests() []test {
	return []test{
		{"FollowsMostSevereThenMostSpecific", testHeadlineJoin},
		{"FollowsUpdateAndDelete", testHeadlineRebuild},
		{"FollowsMerge", testHeadlineMerge},
		{"FollowsGrowingBurst", testHeadlineGrowth},
		{"UntitledKeepsTitle", testHeadlineUntitled},
	}
}

// ranked returns an observation of severity sev and specificity spec
// keyed by key, created at created; mustRecord titles its incident
// "incident of <id>".
func ranked(sev string, spec int, created time.Time, key string) *vigil.Observation {
	o := obs(sev, created, ids(key), ids(key), nil)
	o.Specificity = spec
	return o
}

// wantHeadline checks the title and severity of incident id: those of o.
func wantHeadline(t *testing.T, s Store, org, id string, o *vigil.Observation, sev, what string) {
	t.Helper()
	inc := mustIncident(t, s, org, id)
	if want := "incident of " + o.ID; inc.Title != want || inc.Severity != sev {
		t.Errorf("%s: incident %q %s, want %q %s", what, inc.Title, inc.Severity, want, sev)
	}
}

func testHeadlineJoin(t *testing.T, s Store) {
	org := vigil.NewID()
	key := mustNodes(t, s, org, ipNode("203.0.113.7"))[0]
	o1 := mustRecord(t, s, org, ranked(vigil.SeverityLow, vigil.SpecificitySignature, at(0), key), policy)
	inc := o1.IncidentID
	wantHeadline(t, s, org, inc, o1, vigil.SeverityLow, "first observation")

	steps := []struct {
		sev  string
		spec int
		head int // index in recorded of the headline after this step; -1: this one
		sevW string
		what string
	}{
		{vigil.SeverityMedium, vigil.SpecificityEngineEvent, -1, vigil.SeverityMedium, "a more severe engine event"},
		{vigil.SeverityMedium, vigil.SpecificitySignature, -1, vigil.SeverityMedium, "as severe and more specific"},
		{vigil.SeverityMedium, vigil.SpecificityBehavior, 2, vigil.SeverityMedium, "as severe, less specific, newer"},
		{vigil.SeverityMedium, vigil.SpecificitySignature, -1, vigil.SeverityMedium, "same rank, newer"},
		{vigil.SeverityLow, vigil.SpecificityAnalyst, 4, vigil.SeverityMedium, "less severe, most specific"},
	}
	recorded := []*vigil.Observation{o1}
	for i, st := range steps {
		o := mustRecord(t, s, org, ranked(st.sev, st.spec, at(time.Duration(i+1)*time.Minute), key), policy)
		if o.IncidentID != inc {
			t.Fatalf("%s: opened %s, want it to join %s", st.what, o.IncidentID, inc)
		}
		recorded = append(recorded, o)
		head := o
		if st.head >= 0 {
			head = recorded[st.head]
		}
		wantHeadline(t, s, org, inc, head, st.sevW, st.what)
	}
}

func testHeadlineRebuild(t *testing.T, s Store) {
	org := vigil.NewID()
	key := mustNodes(t, s, org, ipNode("203.0.113.7"))[0]
	o1 := mustRecord(t, s, org, ranked(vigil.SeverityHigh, vigil.SpecificityBehavior, at(0), key), policy)
	o2 := mustRecord(t, s, org, ranked(vigil.SeverityLow, vigil.SpecificitySignature, at(time.Minute), key), policy)
	inc := o1.IncidentID
	wantHeadline(t, s, org, inc, o1, vigil.SeverityHigh, "before the update")

	crit := vigil.SeverityCritical
	if _, err := updateObservation(t.Context(), s, org, o2.ID, vigil.ObservationUpdate{Severity: &crit}, at(2*time.Minute)); err != nil {
		t.Fatalf("UpdateObservation: %v", err)
	}
	wantHeadline(t, s, org, inc, o2, vigil.SeverityCritical, "raised to critical")
	if g := mustObservation(t, s, org, o2.ID); g.Title != "incident of "+o2.ID || g.Specificity != vigil.SpecificitySignature {
		t.Errorf("observation title %q specificity %d, want its own and %d", g.Title, g.Specificity, vigil.SpecificitySignature)
	}

	if err := deleteObservation(t.Context(), s, org, o2.ID); err != nil {
		t.Fatalf("DeleteObservation: %v", err)
	}
	wantHeadline(t, s, org, inc, o1, vigil.SeverityHigh, "headline deleted")

	low := vigil.SeverityLow
	o3 := mustRecord(t, s, org, ranked(vigil.SeverityMedium, vigil.SpecificityBehavior, at(3*time.Minute), key), policy)
	if _, err := updateObservation(t.Context(), s, org, o1.ID, vigil.ObservationUpdate{Severity: &low}, at(4*time.Minute)); err != nil {
		t.Fatalf("UpdateObservation: %v", err)
	}
	wantHeadline(t, s, org, inc, o3, vigil.SeverityMedium, "headline lowered")
}

func testHeadlineMerge(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), ipNode("198.51.100.23"))
	oa := mustRecord(t, s, org, ranked(vigil.SeverityLow, vigil.SpecificitySignature, at(0), n[0]), policy)
	ob := mustRecord(t, s, org, ranked(vigil.SeverityHigh, vigil.SpecificityBehavior, at(time.Minute), n[1]), policy)
	if oa.IncidentID == ob.IncidentID {
		t.Fatal("two unrelated observations share an incident")
	}
	bridge := obs(vigil.SeverityLow, at(2*time.Minute), ids(n[0], n[1]), ids(n[0], n[1]), nil)
	mustRecord(t, s, org, bridge, policy)
	if bridge.IncidentID != oa.IncidentID {
		t.Fatalf("bridge joined %s, want the older incident %s", bridge.IncidentID, oa.IncidentID)
	}
	// The older incident keeps its id, and takes the newer one's title
	// and severity with its high observation.
	wantHeadline(t, s, org, oa.IncidentID, ob, vigil.SeverityHigh, "after the merge")
}

func testHeadlineGrowth(t *testing.T, s Store) {
	org := "org-a"
	src := "203.0.113.7"
	key := mustNodes(t, s, org, ipNode(src))[0]
	// An alert of the same attacker, medium, opens the incident, now: a
	// detection correlates at the time it runs.
	alert := mustRecord(t, s, org, ranked(vigil.SeverityMedium, vigil.SpecificitySignature, vigil.Now().Truncate(time.Microsecond), key), policy)
	// A brute force fires low (below the alert) and turns high as it grows.
	d := bruteForce(t, s, org, src, at(time.Minute), 8)
	d.Describe = func(key string, w vigil.WindowState) vigil.Finding {
		sev := vigil.SeverityLow
		if w.Count >= 7 {
			sev = vigil.SeverityHigh
		}
		return vigil.Finding{Type: "auth", Severity: sev, Title: "brute force from " + key,
			Description: fmt.Sprintf("%d failures", w.Count)}
	}
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:5], d.Signals[5:]
	mustDetect(t, s, org, &first)
	inc := mustIncident(t, s, org, alert.IncidentID)
	if inc.Title != "incident of "+alert.ID || inc.Severity != vigil.SeverityMedium || len(inc.Observations) != 2 {
		t.Fatalf("low burst joined: incident %q %s with %d observations, want the alert's title, medium, 2", inc.Title, inc.Severity, len(inc.Observations))
	}
	mustDetect(t, s, org, &rest)
	inc = mustIncident(t, s, org, alert.IncidentID)
	if inc.Title != "brute force from "+src || inc.Severity != vigil.SeverityHigh {
		t.Errorf("burst grew high: incident %q %s, want %q high", inc.Title, inc.Severity, "brute force from "+src)
	}
}

func testHeadlineUntitled(t *testing.T, s Store) {
	org := vigil.NewID()
	key := mustNodes(t, s, org, ipNode("203.0.113.7"))[0]
	o1 := ranked(vigil.SeverityLow, 0, at(0), key)
	if err := recordObservation(t.Context(), s, org, o1, "first", policy); err != nil {
		t.Fatal(err)
	}
	// An observation without a title (as those recorded before titles
	// were kept) heads the incident but leaves its title.
	o2 := ranked(vigil.SeverityHigh, 0, at(time.Minute), key)
	if err := recordObservation(t.Context(), s, org, o2, "", policy); err != nil {
		t.Fatal(err)
	}
	if inc := mustIncident(t, s, org, o1.IncidentID); inc.Title != "first" || inc.Severity != vigil.SeverityHigh {
		t.Errorf("incident %q %s, want \"first\" high", inc.Title, inc.Severity)
	}
}
