package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func detectTests() []test {
	return []test{
		{"BelowThresholdRecordsNothing", testDetectBelowThreshold},
		{"FiresOnceThenGrows", testDetectFiresOnceThenGrows},
		{"RedeliveryCountsOnce", testDetectRedelivery},
		{"RepeatWithinBatchCountsOnce", testDetectRepeatInBatch},
		{"DistinctMembers", testDetectDistinct},
		{"ClosedIncidentStartsNewBurst", testDetectClosedIncident},
		{"Requires", testDetectRequires},
		{"OrgsIndependent", testDetectOrgs},
		{"PruneSignals", testPruneSignals},
		{"PruneSignalsKeepsLongWindows", testPruneKeepsLongWindows},
		{"LateSignalsJoinTheBurst", testDetectLate},
		{"ClosedBurstSignalsNeverCountAgain", testDetectClosedNoRecount},
		{"RequiresBurstStartedBefore", testDetectRequiresOrder},
		{"WeightsCountAttempts", testDetectWeights},
		{"UnitCountsOnce", testDetectUnits},
		{"OrDistinct", testDetectOrDistinct},
		{"Ordered", testDetectOrdered},
	}
}

// bruteForce returns a detection of n failed logins from src, one minute
// apart from start, each with its own stored artifact.
func bruteForce(t *testing.T, s Store, org, src string, start time.Time, n int) *vigil.Detection {
	t.Helper()
	d := &vigil.Detection{Detector: "bf", Key: src, Span: 5 * time.Minute, MinCount: 5,
		Describe: func(key string, w vigil.WindowState) vigil.Finding {
			return vigil.Finding{Type: "auth", Severity: vigil.SeverityMedium, Title: "brute force from " + key,
				Description: fmt.Sprintf("%d failures from %s, grown=%v", w.Count, key, w.Grown)}
		}}
	for i := 0; i < n; i++ {
		ts := start.Add(time.Duration(i) * time.Minute)
		a := newArtifact("auth", fmt.Sprintf("Failed password for u%d from %s", i, src), ts)
		mustInsertArtifacts(t, s, org, a)
		d.Signals = append(d.Signals, vigil.Signal{ArtifactID: a.ID, At: ts, Member: fmt.Sprintf("u%d", i%2),
			Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: src, Key: true}, {Type: vigil.NodeHost, Value: "web-01"}}})
	}
	return d
}

func mustDetect(t *testing.T, s Store, org string, ds ...*vigil.Detection) []string {
	t.Helper()
	found, err := detect(t.Context(), s, org, ds, policy)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	var ids []string
	for _, d := range found {
		o, err := s.GetObservation(t.Context(), org, d.ObservationID)
		if err != nil {
			t.Fatalf("GetObservation of a detection: %v", err)
		}
		if o.IncidentID != d.IncidentID {
			t.Fatalf("Detect says observation %s is in incident %s, the store says %s", d.ObservationID, d.IncidentID, o.IncidentID)
		}
		ids = append(ids, d.ObservationID)
	}
	return ids
}

func testDetectBelowThreshold(t *testing.T, s Store) {
	if ids := mustDetect(t, s, "org-a", bruteForce(t, s, "org-a", "203.0.113.7", base, 4)); len(ids) != 0 {
		t.Fatalf("4 signals fired %v, want nothing below MinCount 5", ids)
	}
	if _, n := mustListIncidents(t, s, "org-a", vigil.IncidentFilter{}); n != 0 {
		t.Fatalf("incidents = %d, want 0", n)
	}
}

func testDetectFiresOnceThenGrows(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 8)
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:5], d.Signals[5:]
	ids := mustDetect(t, s, "org-a", &first)
	if len(ids) != 1 {
		t.Fatalf("fired %v, want one observation", ids)
	}
	o := mustObservation(t, s, "org-a", ids[0])
	if len(o.ArtifactIDs) != 5 || len(o.NodeIDs) != 2 || len(o.KeyNodeIDs) != 1 {
		t.Fatalf("observation artifacts %d nodes %d keys %d, want 5, 2, 1", len(o.ArtifactIDs), len(o.NodeIDs), len(o.KeyNodeIDs))
	}
	grown := mustDetect(t, s, "org-a", &rest)
	if len(grown) != 1 || grown[0] != ids[0] {
		t.Fatalf("second batch recorded %v, want the same observation %s grown", grown, ids[0])
	}
	o = mustObservation(t, s, "org-a", ids[0])
	if len(o.ArtifactIDs) != 8 || o.Description != "8 failures from 203.0.113.7, grown=true" {
		t.Fatalf("grown observation: %d artifacts, %q", len(o.ArtifactIDs), o.Description)
	}
	incs, n := mustListIncidents(t, s, "org-a", vigil.IncidentFilter{})
	if n != 1 || incs[0].ArtifactCount != 8 || incs[0].NodeCount != 2 || incs[0].Title != "brute force from 203.0.113.7" {
		t.Fatalf("incidents %d, first %+v; want one with 8 artifacts and 2 nodes", n, incs[0])
	}
}

func testDetectRedelivery(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 6)
	mustDetect(t, s, "org-a", d)
	if ids := mustDetect(t, s, "org-a", d); len(ids) != 0 {
		t.Fatalf("redelivered detection recorded %v, want nothing", ids)
	}
	incs, n := mustListIncidents(t, s, "org-a", vigil.IncidentFilter{})
	if n != 1 || incs[0].ArtifactCount != 6 {
		t.Fatalf("incidents %d (first has %d artifacts), want 1 with 6", n, incs[0].ArtifactCount)
	}
}

// testDetectRepeatInBatch: a signal repeated within one detection (one
// artifact twice) counts once.
func testDetectRepeatInBatch(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 5)
	fifth := d.Signals[4]
	d.Signals[4] = d.Signals[0]
	if ids := mustDetect(t, s, "org-a", d); len(ids) != 0 {
		t.Fatalf("4 artifacts, one of them twice, fired %v; want nothing below MinCount 5", ids)
	}
	d.Signals = []vigil.Signal{fifth, fifth}
	ids := mustDetect(t, s, "org-a", d)
	if len(ids) != 1 {
		t.Fatalf("the fifth artifact fired %v, want one observation", ids)
	}
	if o := mustObservation(t, s, "org-a", ids[0]); len(o.ArtifactIDs) != 5 || o.Description != "5 failures from 203.0.113.7, grown=false" {
		t.Fatalf("observation of %d artifacts, %q; want 5", len(o.ArtifactIDs), o.Description)
	}
}

func testDetectDistinct(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 5)
	d.MinDistinct = 3 // the signals name only u0 and u1
	if ids := mustDetect(t, s, "org-a", d); len(ids) != 0 {
		t.Fatalf("2 distinct members fired %v with MinDistinct 3", ids)
	}
}

func testDetectClosedIncident(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 10)
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:5], d.Signals[5:]
	ids := mustDetect(t, s, "org-a", &first)
	o := mustObservation(t, s, "org-a", ids[0])
	mustSetStatus(t, s, "org-a", o.IncidentID, vigil.StatusClosed, "analyst", at(time.Hour))
	again := mustDetect(t, s, "org-a", &rest)
	if len(again) != 1 || again[0] == ids[0] {
		t.Fatalf("after closing, recorded %v; want a new observation, not %s", again, ids[0])
	}
	o2 := mustObservation(t, s, "org-a", again[0])
	if o2.IncidentID == o.IncidentID {
		t.Fatalf("closed incident %s grew", o.IncidentID)
	}
	if got := mustIncident(t, s, "org-a", o.IncidentID).ArtifactCount; got != 5 {
		t.Fatalf("closed incident artifact_count = %d, want 5", got)
	}
}

func testDetectRequires(t *testing.T, s Store) {
	success := func(src string, ts time.Time) *vigil.Detection {
		a := newArtifact("auth", "Accepted password for root from "+src, ts)
		mustInsertArtifacts(t, s, "org-a", a)
		return &vigil.Detection{Detector: "success", Key: src, Span: time.Hour, MinCount: 1, Requires: "bf",
			Signals: []vigil.Signal{{ArtifactID: a.ID, At: ts, Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: src, Key: true}}}},
			Describe: func(key string, w vigil.WindowState) vigil.Finding {
				return vigil.Finding{Type: "auth", Severity: vigil.SeverityHigh, Title: "success after brute force", Description: "login from " + key}
			}}
	}
	if ids := mustDetect(t, s, "org-a", success("198.51.100.1", base)); len(ids) != 0 {
		t.Fatalf("success without a brute force fired %v", ids)
	}
	bf := mustDetect(t, s, "org-a", bruteForce(t, s, "org-a", "203.0.113.7", base, 5))
	ids := mustDetect(t, s, "org-a", success("203.0.113.7", at(10*time.Minute)))
	if len(ids) != 1 {
		t.Fatalf("success after brute force fired %v, want one observation", ids)
	}
	o, b := mustObservation(t, s, "org-a", ids[0]), mustObservation(t, s, "org-a", bf[0])
	if o.IncidentID != b.IncidentID {
		t.Fatalf("success in incident %s, brute force in %s; want one incident (shared key IP)", o.IncidentID, b.IncidentID)
	}
	if inc := mustIncident(t, s, "org-a", o.IncidentID); inc.Severity != vigil.SeverityHigh {
		t.Fatalf("incident severity %s, want high", inc.Severity)
	}
}

func testDetectOrgs(t *testing.T, s Store) {
	a := bruteForce(t, s, "org-a", "203.0.113.7", base, 3)
	b := bruteForce(t, s, "org-b", "203.0.113.7", at(time.Minute), 3)
	mustDetect(t, s, "org-a", a)
	if ids := mustDetect(t, s, "org-b", b); len(ids) != 0 {
		t.Fatalf("org-b fired %v with 3 signals of its own (org-a's must not count)", ids)
	}
}

func testPruneSignals(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 4)
	mustDetect(t, s, "org-a", d)
	n, err := s.PruneSignals(t.Context(), vigil.SignalRetention{Before: at(2 * time.Minute)})
	if err != nil || n != 2 {
		t.Fatalf("PruneSignals = %d, %v; want 2 signals before base+2m", n, err)
	}
	// The two pruned signals no longer count: 2 left + 2 new < 5.
	more := bruteForce(t, s, "org-a", "203.0.113.7", at(4*time.Minute), 2)
	if ids := mustDetect(t, s, "org-a", more); len(ids) != 0 {
		t.Fatalf("fired %v after pruning, want nothing (4 signals in window)", ids)
	}
}

// testPruneKeepsLongWindows: the signals of a detector the retention
// keeps longer (a Sigma correlation of days) outlive the others'; past
// their own bound they go too. Both keys fire first, so that their
// signals are in the store whatever a store holds in memory.
func testPruneKeepsLongWindows(t *testing.T, s Store) {
	long := bruteForce(t, s, "org-a", "203.0.113.8", base, 5)
	long.Detector, long.Span = "sigma:corr", 48*time.Hour
	short := bruteForce(t, s, "org-a", "203.0.113.9", base, 5)
	if ids := mustDetect(t, s, "org-a", long, short); len(ids) != 2 {
		t.Fatalf("fired %v, want both keys", ids)
	}
	keep := vigil.SignalRetention{Before: at(24 * time.Hour), Longer: map[string]time.Time{"sigma:": at(-time.Hour)}}
	n, err := s.PruneSignals(t.Context(), keep)
	if err != nil || n != 5 {
		t.Fatalf("PruneSignals = %d, %v; want the short detector's 5 signals only", n, err)
	}
	keep.Before, keep.Longer["sigma:"] = at(48*time.Hour), at(40*time.Hour)
	if n, err := s.PruneSignals(t.Context(), keep); err != nil || n != 5 {
		t.Fatalf("PruneSignals past the long bound = %d, %v; want its 5 signals", n, err)
	}
}

// testDetectLate: later signals recorded first (another worker, a late
// batch) below the threshold; an earlier one then completes the window.
// The burst fires with all of them, and a further one grows it.
func testDetectLate(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 7)
	late, early, after := *d, *d, *d
	late.Signals, early.Signals, after.Signals = d.Signals[1:5], d.Signals[:1], d.Signals[5:]
	if ids := mustDetect(t, s, "org-a", &late); len(ids) != 0 {
		t.Fatalf("4 signals fired %v", ids)
	}
	ids := mustDetect(t, s, "org-a", &early)
	if len(ids) != 1 {
		t.Fatalf("the fifth (earliest) signal fired %v, want one observation", ids)
	}
	if o := mustObservation(t, s, "org-a", ids[0]); len(o.ArtifactIDs) != 5 {
		t.Fatalf("observation has %d artifacts, want all 5 signals", len(o.ArtifactIDs))
	}
	mustDetect(t, s, "org-a", &after)
	o := mustObservation(t, s, "org-a", ids[0])
	if len(o.ArtifactIDs) != 7 {
		t.Fatalf("after growth %d artifacts, want 7", len(o.ArtifactIDs))
	}
	if inc := mustIncident(t, s, "org-a", o.IncidentID); inc.ArtifactCount != 7 {
		t.Fatalf("incident artifact_count %d, want 7", inc.ArtifactCount)
	}
}

// testDetectClosedNoRecount: once a burst's incident is closed, one more
// signal does not fire a new burst out of the closed burst's signals.
func testDetectClosedNoRecount(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 6)
	first, one := *d, *d
	first.Signals, one.Signals = d.Signals[:5], d.Signals[5:]
	ids := mustDetect(t, s, "org-a", &first)
	o := mustObservation(t, s, "org-a", ids[0])
	mustSetStatus(t, s, "org-a", o.IncidentID, vigil.StatusResolved, "analyst", at(time.Hour))
	if again := mustDetect(t, s, "org-a", &one); len(again) != 0 {
		t.Fatalf("one signal after the closed burst fired %v", again)
	}
}

// testDetectRequiresOrder: a success logged before the brute force began
// is not a success after it.
func testDetectRequiresOrder(t *testing.T, s Store) {
	a := newArtifact("auth", "Accepted password for root from 203.0.113.7", base)
	mustInsertArtifacts(t, s, "org-a", a)
	mustDetect(t, s, "org-a", bruteForce(t, s, "org-a", "203.0.113.7", at(10*time.Minute), 5))
	ids := mustDetect(t, s, "org-a", &vigil.Detection{Detector: "success", Key: "203.0.113.7", Span: time.Hour, MinCount: 1, Requires: "bf",
		Signals: []vigil.Signal{{ArtifactID: a.ID, At: base, Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: "203.0.113.7", Key: true}}}},
		Describe: func(key string, w vigil.WindowState) vigil.Finding {
			return vigil.Finding{Type: "auth", Severity: vigil.SeverityHigh, Title: "success", Description: "success"}
		}})
	if len(ids) != 0 {
		t.Fatalf("a success 10 minutes before the brute force fired %v", ids)
	}
}

// testDetectWeights: a signal counts its weight, evidence counts nothing
// but is linked, in the window that fires, as it grows, and after the
// signals are read back from the store.
func testDetectWeights(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "203.0.113.7", base, 8)
	// 0: 3 attempts; 1, 2: evidence; 3: 1 — 4 in all, below 5.
	d.Signals[0].Count = 3
	d.Signals[1].Evidence, d.Signals[2].Evidence = true, true
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:4], d.Signals[4:]
	if ids := mustDetect(t, s, "org-a", &first); len(ids) != 0 {
		t.Fatalf("a count of 4 fired %v, want nothing below 5", ids)
	}
	// 4 (evidence) then 5: the count reaches 5 at 5.
	rest.Signals[0].Evidence = true
	ids := mustDetect(t, s, "org-a", &rest)
	if len(ids) != 1 {
		t.Fatalf("fired %v, want one observation", ids)
	}
	o := mustObservation(t, s, "org-a", ids[0])
	// Fired at 5 with every signal of the burst: 3+1+1+1+1, every
	// artifact linked.
	if len(o.ArtifactIDs) != 8 || o.Description != "7 failures from 203.0.113.7, grown=false" {
		t.Fatalf("observation: %d artifacts, %q; want 8 and a count of 7", len(o.ArtifactIDs), o.Description)
	}
	// Evidence grows the observation without counting.
	ev := bruteForce(t, s, "org-a", "203.0.113.7", base.Add(8*time.Minute), 1)
	ev.Signals[0].Evidence = true
	if grown := mustDetect(t, s, "org-a", ev); len(grown) != 1 || grown[0] != ids[0] {
		t.Fatalf("evidence recorded %v, want %s grown", grown, ids[0])
	}
	o = mustObservation(t, s, "org-a", ids[0])
	if len(o.ArtifactIDs) != 9 || o.Description != "7 failures from 203.0.113.7, grown=true" {
		t.Fatalf("after evidence: %d artifacts, %q; want 9 and still 7", len(o.ArtifactIDs), o.Description)
	}
}

// testDetectUnits: signals of one unit count once, whether they come in
// one batch or in several, and are all linked.
func testDetectUnits(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "198.51.100.7", base, 10)
	for i := range d.Signals {
		// Two lines per query, 30 s apart.
		d.Signals[i].Unit = fmt.Sprintf("query-%d", i/2)
		d.Signals[i].At = base.Add(time.Duration(i/2) * 30 * time.Second)
	}
	first, rest := *d, *d
	first.Signals, rest.Signals = d.Signals[:5], d.Signals[5:] // query-2 split over both
	if ids := mustDetect(t, s, "org-a", &first); len(ids) != 0 {
		t.Fatalf("3 queries in 5 lines fired %v, want nothing below 5", ids)
	}
	ids := mustDetect(t, s, "org-a", &rest)
	if len(ids) != 1 {
		t.Fatalf("fired %v, want one observation", ids)
	}
	o := mustObservation(t, s, "org-a", ids[0])
	if len(o.ArtifactIDs) != 10 || o.Description != "5 failures from 198.51.100.7, grown=false" {
		t.Fatalf("observation: %d artifacts, %q; want 10 lines and a count of 5", len(o.ArtifactIDs), o.Description)
	}
	// The same unit a minute and more after its last line is asked
	// again: it counts.
	again := bruteForce(t, s, "org-a", "198.51.100.7", base, 2)
	again.Signals[0].Unit, again.Signals[0].At = "query-4", base.Add(3*time.Minute+30*time.Second)
	again.Signals[1].Unit, again.Signals[1].At = "query-4", base.Add(3*time.Minute+31*time.Second)
	if grown := mustDetect(t, s, "org-a", again); len(grown) != 1 || grown[0] != ids[0] {
		t.Fatalf("the unit asked again grew %v, want %s", grown, ids[0])
	}
	if o := mustObservation(t, s, "org-a", ids[0]); len(o.ArtifactIDs) != 12 || o.Description != "6 failures from 198.51.100.7, grown=true" {
		t.Fatalf("observation: %d artifacts, %q; want 12 lines and a count of 6", len(o.ArtifactIDs), o.Description)
	}
}

// testDetectOrDistinct: OrDistinct members fire a window whatever its
// count.
func testDetectOrDistinct(t *testing.T, s Store) {
	d := bruteForce(t, s, "org-a", "192.0.2.9", base, 4)
	for i := range d.Signals {
		d.Signals[i].Evidence = true
		d.Signals[i].Member = fmt.Sprintf("user%d", i)
	}
	d.OrDistinct = 4
	ids := mustDetect(t, s, "org-a", d)
	if len(ids) != 1 {
		t.Fatalf("4 users fired %v, want one observation with OrDistinct 4", ids)
	}
	if o := mustObservation(t, s, "org-a", ids[0]); len(o.ArtifactIDs) != 4 || o.Description != "0 failures from 192.0.2.9, grown=false" {
		t.Fatalf("observation: %d artifacts, %q", len(o.ArtifactIDs), o.Description)
	}
}
