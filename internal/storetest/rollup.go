package storetest

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// Roll-ups and entity risk: one detection firing for many sources of a
// low or medium severity makes one incident, its sources context nodes
// listed heaviest first; a source that does something worse leaves it for
// an incident of its own.

func rollupTests() []test {
	return []test{
		{"FormsAndListsSources", testRollupForms},
		{"IsNoHub", testRollupNoHub},
		{"TakesInWhatRollsUp", testRollupTakesIn},
		{"GrowthCountsTheSource", testRollupGrowth},
		{"RiskySourceLeaves", testRollupRiskyLeaves},
		{"EditRecountsSources", testRollupEdit},
		{"OrgsApart", testRollupOrgs},
		{"BoundedResponse", testRollupBounded},
		{"OneBatchAsOneByOne", testRollupOneBatch},
	}
}

// rollupPolicy rolls up 3 sources within an hour, low and medium.
var rollupPolicy = vigil.RollupPolicy{Threshold: 3, Window: time.Hour, Severities: []string{vigil.SeverityLow, vigil.SeverityMedium},
	RiskThreshold: 100, RiskDetections: 3}

// rollupEngine is the engine over s with rollupPolicy.
func rollupEngine(s Store) *correlate.Engine {
	return correlate.NewEngine(s, nil, policy).WithPolicies(correlate.PolicyFunc(func(context.Context, string) (vigil.RollupPolicy, error) {
		return rollupPolicy, nil
	}))
}

// alerts returns a detection of n alerts of signature sig (typ, sev) from
// src, a second apart from start, each with its stored artifact: what
// detect.SuricataAlert makes of an EVE alert.
func alerts(t *testing.T, s Store, org, sig, typ, sev, src string, start time.Time, n int) *vigil.Detection {
	t.Helper()
	d := &vigil.Detection{Detector: "suricata_alert", Key: sig + "|" + src, Span: time.Hour, MinCount: 1,
		Describe: func(key string, w vigil.WindowState) vigil.Finding {
			return vigil.Finding{Type: typ, Severity: sev, Title: "Suricata: " + sig + " from " + src,
				Description: fmt.Sprintf("%d alerts from %s", w.Count, src), Specificity: vigil.SpecificitySignature, Rollup: "Suricata: " + sig}
		}}
	for i := range n {
		ts := start.Add(time.Duration(i) * time.Second)
		a := newArtifact("suricata", fmt.Sprintf(`{"src_ip":%q,"signature":%q,"n":%d}`, src, sig, i), ts)
		mustInsertArtifacts(t, s, org, a)
		d.Signals = append(d.Signals, vigil.Signal{ArtifactID: a.ID, At: ts,
			Nodes: []vigil.NodeRef{ipNode(src), {Type: vigil.NodeIP, Value: "198.51.100.10"}}})
	}
	return d
}

// mustRollupRecord runs ds through rollupEngine and returns what it recorded.
func mustRollupRecord(t *testing.T, s Store, org string, ds ...*vigil.Detection) []correlate.Recorded {
	t.Helper()
	found, err := rollupEngine(s).Detect(t.Context(), org, ds)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	return found
}

// mustRollupDetect runs ds through rollupEngine and returns the incident
// of each observation recorded or grown.
func mustRollupDetect(t *testing.T, s Store, org string, ds ...*vigil.Detection) []string {
	t.Helper()
	var out []string
	for _, f := range mustRollupRecord(t, s, org, ds...) {
		out = append(out, f.IncidentID)
	}
	return out
}

const scanSig = "ET SCAN Potential SSH Scan"

// rolledUp makes org's roll-up of scanSig from three sources (1, 2 and 3
// alerts from 203.0.113.1–3, the first two opening incidents of their own
// below the threshold) and returns it with the two incidents it took in.
func rolledUp(t *testing.T, s Store, org string) (rollup string, early []string) {
	t.Helper()
	for i := 1; i <= 2; i++ {
		got := mustRollupDetect(t, s, org, alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, fmt.Sprint("203.0.113.", i), at(time.Duration(i)*time.Minute), i))
		if len(got) != 1 {
			t.Fatalf("source %d: recorded %v, want one observation", i, got)
		}
		early = append(early, got[0])
	}
	if early[0] == early[1] {
		t.Fatalf("two sources below the threshold share incident %s", early[0])
	}
	got := mustRollupDetect(t, s, org, alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.3", at(3*time.Minute), 3))
	if len(got) != 1 || slices.Contains(early, got[0]) {
		t.Fatalf("third source recorded into %v, want a new incident: the roll-up", got)
	}
	return got[0], early
}

func testRollupForms(t *testing.T, s Store) {
	org := vigil.NewID()
	id, early := rolledUp(t, s, org)
	inc := mustIncident(t, s, org, id)
	if inc.Title != "Suricata: "+scanSig+" from 3 sources" || inc.Severity != vigil.SeverityMedium || inc.ArtifactCount != 6 {
		t.Errorf("roll-up %q %s, %d artifacts: want titled by its 3 sources, medium, every alert kept (6)", inc.Title, inc.Severity, inc.ArtifactCount)
	}
	if r := inc.Rollup; r == nil || r.Sources != 3 || r.Count != 6 || r.Detector != "suricata_alert" || r.Name != "Suricata: "+scanSig ||
		r.WindowEnd.Sub(r.WindowStart) != time.Hour || r.WindowStart.After(inc.CreatedAt) {
		t.Errorf("rollup %+v: want 3 sources, count 6, its window from the first finding", inc.Rollup)
	}
	if len(inc.Observations) != 3 || inc.NodeCount != 4 {
		t.Errorf("observations %d, node count %d: want every source's observation kept, 3 sources and the attacked address", len(inc.Observations), inc.NodeCount)
	}
	// Its nodes: the sources heaviest first, each with its count, none a
	// key; then the attacked address.
	var got []string
	for _, n := range inc.Nodes {
		if n.Key == nil || *n.Key {
			t.Errorf("node %s is a key of the roll-up: its sources must join nothing", n.Value)
		}
		got = append(got, fmt.Sprintf("%s:%d", n.Value, n.Count))
	}
	if want := []string{"203.0.113.3:3", "203.0.113.2:2", "203.0.113.1:1", "198.51.100.10:0"}; !slices.Equal(got, want) {
		t.Errorf("nodes %v, want %v", got, want)
	}
	for _, e := range early {
		if i := mustIncident(t, s, org, e); i.MergedInto == nil || *i.MergedInto != id || i.ArtifactCount != 0 {
			t.Errorf("early incident %s: merged into %v with %d artifacts, want taken into the roll-up", e, i.MergedInto, i.ArtifactCount)
		}
		wantEventTimes(t, s, org, e, "an early incident taken in", 0, 0, true)
	}
	// Its event times span the alerts it took in and its own.
	wantEventTimes(t, s, org, id, "the roll-up", time.Minute, 3*time.Minute+2*time.Second, false)
	page, total, err := s.RollupSources(t.Context(), org, id, vigil.Page{Limit: 2, Offset: 1})
	if err != nil || total != 3 || len(page) != 2 || page[0].Node.Value != "203.0.113.2" || page[0].Count != 2 ||
		page[1].Node.Value != "203.0.113.1" || page[1].Count != 1 || page[1].FirstSeen.IsZero() {
		t.Errorf("sources page (limit 2, offset 1) %+v total %d err %v: want .2 (2), .1 (1) of 3", page, total, err)
	}
	// A fourth source joins: no new incident.
	got4 := mustRollupDetect(t, s, org, alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.4", at(4*time.Minute), 1))
	if len(got4) != 1 || got4[0] != id {
		t.Fatalf("fourth source in %v, want the roll-up %s", got4, id)
	}
	if inc := mustIncident(t, s, org, id); inc.Title != "Suricata: "+scanSig+" from 4 sources" || inc.Rollup.Sources != 4 || inc.NodeCount != 5 {
		t.Errorf("roll-up %q, %+v, %d nodes after a fourth source", inc.Title, inc.Rollup, inc.NodeCount)
	}
	wantEventTimes(t, s, org, id, "the roll-up after a fourth source", time.Minute, 4*time.Minute, false)
	if _, _, err := s.RollupSources(t.Context(), org, early[0], vigil.Page{Limit: 10}); vigil.ErrorCode(err) != vigil.ENOTFOUND {
		t.Errorf("sources of an incident that is no roll-up: %v, want ENOTFOUND", err)
	}
}

// testRollupNoHub: a roll-up's sources never pull another observation in:
// another detection of one of them opens an incident of its own.
func testRollupNoHub(t *testing.T, s Store) {
	org := vigil.NewID()
	id, _ := rolledUp(t, s, org)
	got := mustRollupDetect(t, s, org, alerts(t, s, org, "ET SCAN Potential VNC Scan 5900-5920", "recon", vigil.SeverityMedium, "203.0.113.2", at(5*time.Minute), 1))
	if len(got) != 1 || got[0] == id {
		t.Fatalf("another signature of a rolled-up source went to %v, want an incident of its own", got)
	}
}

func testRollupGrowth(t *testing.T, s Store) {
	org := vigil.NewID()
	id, _ := rolledUp(t, s, org)
	// 203.0.113.1's burst (taken in with its incident) grows by two.
	got := mustRollupDetect(t, s, org, alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.1", at(6*time.Minute), 2))
	if len(got) != 1 || got[0] != id {
		t.Fatalf("grown into %v, want the roll-up", got)
	}
	inc := mustIncident(t, s, org, id)
	if inc.ArtifactCount != 8 || inc.Rollup.Count != 8 || inc.Rollup.Sources != 3 || inc.NodeCount != 4 {
		t.Errorf("roll-up after growth: %d artifacts, %+v, %d nodes; want 8 artifacts, count 8, 3 sources, 4 nodes", inc.ArtifactCount, inc.Rollup, inc.NodeCount)
	}
	if n := inc.Nodes[0]; n.Value != "203.0.113.1" || n.Count != 3 || *n.Key {
		t.Errorf("heaviest source %+v, want 203.0.113.1 with 3, context", n)
	}
	wantEventTimes(t, s, org, id, "the roll-up after growth", time.Minute, 6*time.Minute+time.Second, false)
}

func testRollupRiskyLeaves(t *testing.T, s Store) {
	org := vigil.NewID()
	id, _ := rolledUp(t, s, org)
	// 203.0.113.3 brute-forces SSH: a medium auth finding, risk 100.
	bf := bruteForce(t, s, org, "203.0.113.3", at(10*time.Minute), 5)
	found, err := rollupEngine(s).Detect(t.Context(), org, []*vigil.Detection{bf})
	if err != nil || len(found) != 1 {
		t.Fatalf("Detect = %v, %v", found, err)
	}
	own := found[0].IncidentID
	if own == id {
		t.Fatalf("the brute force joined the roll-up")
	}
	inc := mustIncident(t, s, org, own)
	if len(inc.Observations) != 2 || inc.ArtifactCount != 8 || inc.Rollup != nil {
		t.Errorf("own incident: %d observations, %d artifacts; want the brute force and the scan it left the roll-up with (5 + 3)", len(inc.Observations), inc.ArtifactCount)
	}
	why := inc.RaisedBy
	if why == nil || why.Reason != vigil.RaisedRisk || why.Risk != 125 || why.RiskThreshold != 100 || why.Entity.Value != "203.0.113.3" ||
		why.Entity.Type != vigil.NodeIP || !slices.Equal(why.Rollups, []string{id}) ||
		!slices.Equal(why.Detections, []string{"bf: bf", "suricata_alert: Suricata: " + scanSig}) {
		t.Errorf("raised_by %+v: want risk 125 of 203.0.113.3 by both detections, leaving the roll-up", why)
	}
	var key bool
	for _, n := range inc.Nodes {
		if n.Value == "203.0.113.3" {
			key = *n.Key
		}
	}
	if !key {
		t.Errorf("nodes %+v: want the source a key of its own incident", inc.Nodes)
	}
	r := mustIncident(t, s, org, id)
	if r.Title != "Suricata: "+scanSig+" from 2 sources" || r.Rollup.Sources != 2 || r.Rollup.Count != 3 || r.ArtifactCount != 3 ||
		r.NodeCount != 3 || len(r.Observations) != 2 {
		t.Errorf("roll-up after: %q %+v, %d artifacts, %d nodes, %d observations; want 2 sources, 3 artifacts, 3 nodes",
			r.Title, r.Rollup, r.ArtifactCount, r.NodeCount, len(r.Observations))
	}
	hist, _ := mustHistory(t, s, org, id, vigil.Page{Limit: 50})
	if !slices.ContainsFunc(hist, func(l string) bool {
		return strings.HasPrefix(l, "observation_moved by system/bf count=3 obs=") && strings.HasSuffix(l, "moved_to="+own)
	}) {
		t.Errorf("roll-up history %q: want the move out", hist)
	}
	// Its next scan goes to its own incident, not the roll-up.
	got := mustRollupDetect(t, s, org, alerts(t, s, org, "ET SCAN Potential VNC Scan 5900-5920", "recon", vigil.SeverityMedium, "203.0.113.3", at(11*time.Minute), 1))
	if len(got) != 1 || got[0] != own {
		t.Errorf("its next scan went to %v, want its own incident %s", got, own)
	}
}

// testRollupEdit: an analyst's edit of a roll-up's observation rebuilds
// it with its nodes still context and its sources counted again.
func testRollupEdit(t *testing.T, s Store) {
	org := vigil.NewID()
	id, _ := rolledUp(t, s, org)
	inc := mustIncident(t, s, org, id)
	if err := rollupEngine(s).Delete(t.Context(), org, inc.Observations[0].ID); err != nil {
		t.Fatal(err)
	}
	r := mustIncident(t, s, org, id)
	if r.Title != "Suricata: "+scanSig+" from 2 sources" || r.Rollup.Sources != 2 || r.Rollup.Count != 5 || r.NodeCount != 3 {
		t.Errorf("after a delete: %q %+v, %d nodes; want 2 sources of 5, 3 nodes", r.Title, r.Rollup, r.NodeCount)
	}
	for _, n := range r.Nodes {
		if *n.Key {
			t.Errorf("node %s became a key of the roll-up", n.Value)
		}
	}
}

func testRollupOrgs(t *testing.T, s Store) {
	org, other := vigil.NewID(), vigil.NewID()
	id, _ := rolledUp(t, s, org)
	if _, _, err := s.RollupSources(t.Context(), other, id, vigil.Page{Limit: 10}); vigil.ErrorCode(err) != vigil.ENOTFOUND {
		t.Errorf("another org's roll-up sources: %v, want ENOTFOUND", err)
	}
	// The other org's findings of the same signature count for it alone.
	got := mustRollupDetect(t, s, other, alerts(t, s, other, scanSig, "recon", vigil.SeverityMedium, "203.0.113.9", at(5*time.Minute), 1))
	if len(got) != 1 || got[0] == id {
		t.Errorf("the other org's first finding went to %v, want an incident of its own", got)
	}
}

// testRollupTakesIn: a source that tripped two signatures below their
// thresholds has one incident; each roll-up, as it forms, takes in its
// signature's finding, and the incident, left empty, points to the last.
func testRollupTakesIn(t *testing.T, s Store) {
	org := vigil.NewID()
	const other = "ET SCAN Potential VNC Scan 5900-5920"
	src := "203.0.113.50"
	first := mustRollupDetect(t, s, org, alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, src, at(0), 1))
	second := mustRollupDetect(t, s, org, alerts(t, s, org, other, "recon", vigil.SeverityMedium, src, at(time.Second), 2))
	if len(first) != 1 || len(second) != 1 || first[0] != second[0] {
		t.Fatalf("one source's two signatures went to %v and %v, want one incident", first, second)
	}
	mine := first[0]
	// Two more sources of scanSig: it rolls up, taking src's scan.
	var id string
	for i := 1; i <= 2; i++ {
		id = mustRollupDetect(t, s, org, alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, fmt.Sprint("203.0.113.", i), at(time.Duration(i)*time.Minute), 1))[0]
	}
	r := mustIncident(t, s, org, id)
	inc := mustIncident(t, s, org, mine)
	if r.Rollup == nil || r.Rollup.Sources != 3 || r.Rollup.Count != 3 || inc.MergedInto != nil || len(inc.Observations) != 1 || inc.ArtifactCount != 2 {
		t.Fatalf("after the first roll-up: %+v; the source's incident merged %v with %d observations, %d artifacts; "+
			"want 3 sources (its scan taken), its incident left with the other signature's 2 alerts", r.Rollup, inc.MergedInto, len(inc.Observations), inc.ArtifactCount)
	}
	hist, _ := mustHistory(t, s, org, mine, vigil.Page{Limit: 50})
	if !slices.ContainsFunc(hist, func(l string) bool { return strings.HasSuffix(l, "moved_to="+id) }) {
		t.Errorf("history %q: want the scan's move", hist)
	}
	// The other signature rolls up: it takes the rest.
	var vnc string
	for i := 1; i <= 2; i++ {
		got := mustRollupDetect(t, s, org, alerts(t, s, org, other, "recon", vigil.SeverityMedium, fmt.Sprint("203.0.113.", 60+i), at(time.Duration(10+i)*time.Minute), 1))
		vnc = got[0]
	}
	inc = mustIncident(t, s, org, mine)
	if inc.MergedInto == nil || *inc.MergedInto != vnc || inc.ArtifactCount != 0 {
		t.Errorf("the source's incident: merged into %v (%d artifacts), want the second roll-up %s", inc.MergedInto, inc.ArtifactCount, vnc)
	}
	if v := mustIncident(t, s, org, vnc); v.Rollup == nil || v.Rollup.Sources != 3 || v.Rollup.Count != 4 || v.ArtifactCount != 4 {
		t.Errorf("second roll-up %+v (%d artifacts), want 3 sources counting 4 (the taken source's 2)", v.Rollup, v.ArtifactCount)
	}
}

// testRollupBounded: a roll-up of more sources than the single-incident
// response lists keeps that response bounded, its counts exact and every
// source reachable by pages.
func testRollupBounded(t *testing.T, s Store) {
	org := vigil.NewID()
	n := vigil.MaxIncidentRefs + 5
	ds := make([]*vigil.Detection, n)
	arts := make([]*vigil.Artifact, n)
	for i := range n {
		src := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		arts[i] = newArtifact("suricata", `{"src_ip":"`+src+`"}`, at(time.Duration(i)*time.Millisecond))
		ds[i] = &vigil.Detection{Detector: "suricata_alert", Key: scanSig + "|" + src, Span: time.Hour, MinCount: 1,
			Signals: []vigil.Signal{{ArtifactID: arts[i].ID, At: arts[i].Timestamp, Nodes: []vigil.NodeRef{ipNode(src)}}},
			Describe: func(string, vigil.WindowState) vigil.Finding {
				return vigil.Finding{Type: "recon", Severity: vigil.SeverityLow, Title: "scan from " + src, Description: "scan",
					Rollup: "Suricata: " + scanSig}
			}}
	}
	mustInsertArtifacts(t, s, org, arts...)
	got := mustRollupDetect(t, s, org, ds...)
	id := got[len(got)-1]
	inc := mustIncident(t, s, org, id)
	if inc.Rollup == nil || inc.Rollup.Sources != n || inc.NodeCount != n || inc.ArtifactCount != n {
		t.Fatalf("roll-up %+v, %d nodes, %d artifacts: want all %d sources counted", inc.Rollup, inc.NodeCount, inc.ArtifactCount, n)
	}
	if len(inc.Nodes) != vigil.MaxIncidentRefs || len(inc.Observations) != vigil.MaxIncidentRefs {
		t.Errorf("response lists %d nodes and %d observations, want %d of each", len(inc.Nodes), len(inc.Observations), vigil.MaxIncidentRefs)
	}
	seen := map[string]bool{}
	for off := 0; off < n; off += vigil.MaxLimit {
		page, total, err := s.RollupSources(t.Context(), org, id, vigil.Page{Limit: vigil.MaxLimit, Offset: off})
		if err != nil || total != n {
			t.Fatalf("sources at %d: total %d, %v", off, total, err)
		}
		for _, src := range page {
			seen[src.Node.ID] = true
		}
	}
	if len(seen) != n {
		t.Errorf("pages listed %d distinct sources, want %d", len(seen), n)
	}
}

// testRollupOneBatch: the findings of one batch make of a roll-up what
// they make of it one batch each — new sources (one of them in two
// signatures), a source's burst growing, and a new source that
// brute-forces after its scan and leaves at once — however the store
// writes a batch's findings.
func testRollupOneBatch(t *testing.T, s Store) {
	const vnc = "ET SCAN Potential VNC Scan 5900-5920"
	batch := func(org string) []*vigil.Detection {
		return []*vigil.Detection{
			alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.11", at(20*time.Minute), 2),
			alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.12", at(21*time.Minute), 1),
			alerts(t, s, org, vnc, "recon", vigil.SeverityMedium, "203.0.113.12", at(21*time.Minute+time.Second), 1),
			alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.3", at(22*time.Minute), 1),
			alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.13", at(23*time.Minute), 3),
			alerts(t, s, org, scanSig, "recon", vigil.SeverityMedium, "203.0.113.14", at(24*time.Minute), 1),
			bruteForce(t, s, org, "203.0.113.14", at(25*time.Minute), 5),
		}
	}
	type outcome struct {
		title                        string
		artifacts, nodes, obs        int
		sources, count               int
		first, last                  time.Time
		heaviest                     []string
		incidents                    []string // of each finding, named by first appearance
		ownArtifacts, ownObs, raised int
	}
	run := func(oneBatch bool) outcome {
		org := vigil.NewID()
		id, _ := rolledUp(t, s, org)
		ds := batch(org)
		var found []correlate.Recorded
		if oneBatch {
			found = mustRollupRecord(t, s, org, ds...)
		} else {
			for _, d := range ds {
				found = append(found, mustRollupRecord(t, s, org, d)...)
			}
		}
		// Where each finding is now (the scan of .14 left the roll-up
		// with its brute force), the incidents other than the roll-up
		// named by first appearance: their ids differ between the orgs.
		names := map[string]string{id: "rollup"}
		var own string
		var where []string
		for _, f := range found {
			ob, err := s.GetObservation(t.Context(), org, f.ObservationID)
			if err != nil {
				t.Fatal(err)
			}
			own = ob.IncidentID
			if _, ok := names[own]; !ok {
				names[own] = fmt.Sprint("incident ", len(names))
			}
			where = append(where, names[own])
		}
		inc := mustIncident(t, s, org, id)
		o := outcome{title: inc.Title, artifacts: inc.ArtifactCount, nodes: inc.NodeCount, obs: len(inc.Observations),
			sources: inc.Rollup.Sources, count: inc.Rollup.Count, first: *inc.FirstEventAt, last: *inc.LastEventAt, incidents: where}
		page, total, err := s.RollupSources(t.Context(), org, id, vigil.Page{Limit: 100})
		if err != nil || total != len(page) {
			t.Fatalf("RollupSources: %d of %d, %v", len(page), total, err)
		}
		// Heaviest first; ties by address.
		slices.SortStableFunc(page, func(a, b vigil.RollupSource) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Node.Value, b.Node.Value))
		})
		for _, src := range page {
			o.heaviest = append(o.heaviest, fmt.Sprintf("%s:%d", src.Node.Value, src.Count))
		}
		if own == id {
			t.Fatalf("the brute force joined the roll-up")
		}
		oi := mustIncident(t, s, org, own)
		o.ownArtifacts, o.ownObs = oi.ArtifactCount, len(oi.Observations)
		if oi.RaisedBy != nil {
			o.raised = len(oi.RaisedBy.Rollups)
		}
		return o
	}
	one, each := run(true), run(false)
	if !reflect.DeepEqual(one, each) {
		t.Errorf("one batch made\n%+v\none batch each made\n%+v", one, each)
	}
	if want := []string{"203.0.113.3:4", "203.0.113.13:3", "203.0.113.11:2", "203.0.113.2:2", "203.0.113.1:1", "203.0.113.12:1"}; !slices.Equal(one.heaviest, want) {
		t.Errorf("sources %v, want %v: the new ones counted, .3 grown, .14 gone with its brute force", one.heaviest, want)
	}
	if one.title != "Suricata: "+scanSig+" from 6 sources" || one.sources != 6 || one.count != 13 || one.artifacts != 13 {
		t.Errorf("roll-up %q, %d sources counting %d, %d artifacts; want 6 sources of 13", one.title, one.sources, one.count, one.artifacts)
	}
}
