package correlate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// policy is a roll-up policy for the engine's tests: 3 sources within an
// hour roll up, low and medium.
func policy() vigil.RollupPolicy {
	return vigil.RollupPolicy{Threshold: 3, Window: time.Hour, Severities: []string{vigil.SeverityLow, vigil.SeverityMedium},
		RiskThreshold: 100, RiskDetections: 3}
}

// engineWith returns an engine over tx with roll-up policy p, whose clock
// starts at t0 and ticks a second at every reading.
func engineWith(tx *fakeTx, p vigil.RollupPolicy) *Engine {
	e := NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy()).
		WithPolicies(PolicyFunc(func(context.Context, string) (vigil.RollupPolicy, error) { return p, nil }))
	clock := t0
	e.now = func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}
	return e
}

// scan returns a detection of one scan signature (recon, medium) fired
// by src at at: one signal, MinCount 1, as Suricata alerts are.
func scan(sig, typ, sev, src string, at time.Time) *vigil.Detection {
	return &vigil.Detection{Detector: "suricata_alert", Key: sig + "|" + src, Span: time.Hour, MinCount: 1,
		Signals: []vigil.Signal{{ArtifactID: fmt.Sprint("a-", sig, src, at.UnixNano()), At: at,
			Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: src, Key: true}, {Type: vigil.NodeIP, Value: "198.51.100.1"}}}},
		Describe: func(key string, w vigil.WindowState) vigil.Finding {
			return vigil.Finding{Type: typ, Severity: sev, Title: "Suricata: " + sig + " from " + src, Description: "d",
				Specificity: vigil.SpecificitySignature, Rollup: "Suricata: " + sig}
		}}
}

func detect(t *testing.T, e *Engine, ds ...*vigil.Detection) {
	t.Helper()
	if _, err := e.Detect(t.Context(), "org", ds); err != nil {
		t.Fatal(err)
	}
}

// TestRollupForms: below the threshold each source opens its incident,
// as before; the finding of the threshold's source opens the roll-up of
// its detection, which takes in the incidents that hold nothing but the
// detection's findings, and joins it with every node as context.
func TestRollupForms(t *testing.T) {
	tx := newFake()
	e := engineWith(tx, policy())
	detect(t, e, scan("ET SCAN Potential SSH Scan", "recon", vigil.SeverityMedium, "203.0.113.1", t0))
	detect(t, e, scan("ET SCAN Potential SSH Scan", "recon", vigil.SeverityMedium, "203.0.113.2", t0.Add(time.Second)))
	if len(tx.created) != 2 || len(tx.rollups) != 0 {
		t.Fatalf("created %+v, roll-ups %v: want one incident per source below the threshold", tx.created, tx.rollups)
	}
	// What the store holds below the threshold: the two incidents, one
	// of a source that tripped another signature too (no roll-up yet),
	// and one an analyst's observation joined.
	const ssh, other = "suricata_alert: Suricata: ET SCAN Potential SSH Scan", "suricata_alert: Suricata: ET SCAN Other"
	tx.candidacies = []Candidacy{
		{"inc-1", "o1", vigil.SeverityMedium, ssh, "node:203.0.113.1"},
		{"inc-2", "o2", vigil.SeverityMedium, ssh, "node:203.0.113.2"},
		{"inc-x", "ox1", vigil.SeverityMedium, ssh, "node:203.0.113.8"},
		{"inc-x", "ox2", vigil.SeverityLow, other, "node:203.0.113.8"},
		{"inc-y", "oy1", vigil.SeverityMedium, ssh, "node:203.0.113.9"},
		{"inc-y", "oy2", vigil.SeverityMedium, analystDetection, "node:203.0.113.9"},
	}
	tx.left = map[string]int{"inc-1": 1, "inc-2": 1, "inc-x": 2, "inc-y": 2}
	detect(t, e, scan("ET SCAN Potential SSH Scan", "recon", vigil.SeverityMedium, "203.0.113.3", t0.Add(2*time.Second)))
	if len(tx.rollups) != 1 || len(tx.created) != 3 {
		t.Fatalf("roll-ups %v, created %+v: want the third source to open one roll-up", tx.rollups, tx.created)
	}
	var r *Rollup
	for _, x := range tx.rollups {
		r = x
	}
	if r.Detection != ssh || r.Sources != 4 || r.Count != 4 ||
		r.Title != "Suricata: ET SCAN Potential SSH Scan from 4 sources" || !r.WindowStart.Equal(t0.Add(time.Second)) {
		t.Errorf("roll-up %+v: want the detection's, 4 sources (3 taken in, 1 joined), titled by them, from the oldest finding", r)
	}
	if tx.joined != r.IncidentID || tx.joinKeys != nil {
		t.Errorf("joined %s with keys %v, want the roll-up with no key: its sources never join anything", tx.joined, tx.joinKeys)
	}
	for _, want := range []string{"TakeIntoRollup [o1] inc-1 " + r.IncidentID, "TakeIntoRollup [o2] inc-2 " + r.IncidentID,
		"TakeIntoRollup [ox1] inc-x " + r.IncidentID, "OpenRollup " + other,
		"RecordEvent incident.merged inc-1 by system/suricata_alert " + r.IncidentID,
		"RecordEvent incident.observation_moved inc-x by system/suricata_alert ox1 moved >" + r.IncidentID} {
		if !slices.Contains(tx.log, want) {
			t.Errorf("log %v: want %q", tx.log, want)
		}
	}
	if slices.ContainsFunc(tx.log, func(l string) bool { return strings.Contains(l, "inc-y") }) {
		t.Errorf("log %v: an incident an analyst's observation joined was taken in", tx.log)
	}
	// A fifth source joins it: no new incident.
	detect(t, e, scan("ET SCAN Potential SSH Scan", "recon", vigil.SeverityMedium, "203.0.113.4", t0.Add(3*time.Second)))
	if len(tx.created) != 3 || r.Sources != 5 || r.Title != "Suricata: ET SCAN Potential SSH Scan from 5 sources" {
		t.Errorf("created %d, roll-up %+v: want the fifth source in the roll-up", len(tx.created), r)
	}
	// Another signature is another detection: its own incidents.
	detect(t, e, scan("ET SCAN Potential VNC Scan 5900-5920", "recon", vigil.SeverityMedium, "203.0.113.5", t0.Add(4*time.Second)))
	if len(tx.created) != 4 || len(tx.rollups) != 1 {
		t.Errorf("created %d, roll-ups %d: want another signature below its threshold to open its own incident", len(tx.created), len(tx.rollups))
	}
}

// TestRollupNotWhen: no roll-up for a severity the org does not roll up,
// an observation matching an open incident, roll-ups turned off, or an
// observation recorded through the API.
func TestRollupNotWhen(t *testing.T) {
	for _, c := range []struct {
		name string
		sev  string
		pol  func(*vigil.RollupPolicy)
		cand bool
	}{
		{"high", vigil.SeverityHigh, nil, false},
		{"off", vigil.SeverityMedium, func(p *vigil.RollupPolicy) { p.Threshold = 0 }, false},
		{"low only", vigil.SeverityMedium, func(p *vigil.RollupPolicy) { p.Severities = []string{vigil.SeverityLow} }, false},
		{"candidate", vigil.SeverityMedium, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx := newFake()
			p := policy()
			if c.pol != nil {
				c.pol(&p)
			}
			e := engineWith(tx, p)
			if c.cand {
				tx.candidates = []Candidate{{ID: "mine", CreatedAt: t0}}
			}
			for i := range 5 {
				detect(t, e, scan("ET SCAN X", "recon", c.sev, fmt.Sprint("203.0.113.", i), t0.Add(time.Duration(i)*time.Second)))
			}
			if len(tx.rollups) != 0 || slices.Contains(calls(tx.log), "OpenRollup") && c.name != "high" {
				t.Errorf("roll-ups %v, log %v: want none", tx.rollups, tx.log)
			}
		})
	}
	tx := newFake()
	e := engineWith(tx, policy())
	for i := range 5 {
		o := &vigil.Observation{ID: fmt.Sprint("o", i), Type: "recon", Severity: vigil.SeverityLow, NodeIDs: []string{fmt.Sprint("n", i)},
			KeyNodeIDs: []string{fmt.Sprint("n", i)}, CreatedAt: t0, UpdatedAt: t0}
		if err := e.Record(t.Context(), "org", o, "analyst's"); err != nil {
			t.Fatal(err)
		}
	}
	if len(tx.rollups) != 0 || len(tx.created) != 5 {
		t.Errorf("roll-ups %v, created %d: an analyst's observations never roll up", tx.rollups, len(tx.created))
	}
}

// rolledUp returns a fake holding an open roll-up of "ET SCAN X" with
// source node:203.0.113.7 (count 2) and 9 others.
func rolledUp() (*fakeTx, *Rollup) {
	tx := newFake()
	r := &Rollup{IncidentID: "rollup", Detection: "suricata_alert: Suricata: ET SCAN X", Detector: "suricata_alert", Name: "Suricata: ET SCAN X",
		WindowStart: t0.Add(-time.Minute), WindowEnd: t0.Add(time.Hour), Sources: 10, Count: 11, Title: "Suricata: ET SCAN X from 10 sources"}
	tx.rollups["rollup"] = r
	tx.sources["rollup"] = map[string]int{"node:203.0.113.7": 2}
	tx.risk = append(tx.risk, RiskEntry{ObservationID: "old", NodeID: "node:203.0.113.7", Detection: r.Detection, Points: 25, At: t0.Add(-time.Minute)})
	return tx, r
}

// TestRiskySourceLeavesTheRollup: a source of a roll-up that does
// something worse — here a severity-1 alert — gets an incident of its own
// at once, its observations taken out of the roll-up, and the incident
// says why.
func TestRiskySourceLeavesTheRollup(t *testing.T) {
	tx, r := rolledUp()
	e := engineWith(tx, policy())
	detect(t, e, scan("ET EXPLOIT Y", "network", vigil.SeverityHigh, "203.0.113.7", t0))
	if len(tx.created) != 1 {
		t.Fatalf("created %+v: want the source's own incident", tx.created)
	}
	own := tx.created[0].ID
	if !slices.Contains(tx.log, "LeaveRollup node:203.0.113.7 "+own) || r.Sources != 9 || r.Count != 9 ||
		r.Title != "Suricata: ET SCAN X from 9 sources" {
		t.Errorf("log %v, roll-up %+v: want the source out of the roll-up, its count with it", tx.log, r)
	}
	for _, want := range []string{"RecordEvent incident.observation_moved rollup by system/suricata_alert obs-of-node:203.0.113.7 moved >" + own,
		"RecordEvent incident.observation_moved " + own + " by system/suricata_alert obs-of-node:203.0.113.7 moved rollup>"} {
		if !slices.Contains(tx.log, want) {
			t.Errorf("log %v: want %q", tx.log, want)
		}
	}
	why := tx.raised[own]
	if why.Reason != vigil.RaisedRisk || why.Risk != 125 || why.RiskThreshold != 100 || why.Entity.Value != "203.0.113.7" ||
		!slices.Equal(why.Rollups, []string{"rollup"}) || len(why.Detections) != 2 {
		t.Errorf("raised by %+v: want risk 125 (25 + 100) of 203.0.113.7, leaving the roll-up", why)
	}
}

// TestThreeDetectionsStandApart: a source seen by three distinct
// detections stands apart whatever its risk.
func TestThreeDetectionsStandApart(t *testing.T) {
	tx, _ := rolledUp()
	tx.risk = append(tx.risk, RiskEntry{ObservationID: "older", NodeID: "node:203.0.113.7", Detection: "port_scan: Port scan", Points: 10, At: t0})
	e := engineWith(tx, policy())
	detect(t, e, scan("ET SCAN Z", "recon", vigil.SeverityLow, "203.0.113.7", t0))
	if len(tx.created) != 1 {
		t.Fatalf("created %+v: want the source's own incident", tx.created)
	}
	why := tx.raised[tx.created[0].ID]
	if why.Reason != vigil.RaisedDetections || why.Risk != 45 || len(why.Detections) != 3 || why.DetectionsThreshold != 3 {
		t.Errorf("raised by %+v: want 3 detections (risk 45 only)", why)
	}
}

// TestGrowthInARollup: a burst that grows inside a roll-up adds its nodes
// as context and counts its new artifacts on its source.
func TestGrowthInARollup(t *testing.T) {
	tx, r := rolledUp()
	d := scan("ET SCAN X", "recon", vigil.SeverityMedium, "203.0.113.7", t0)
	k := DetectionKey{d.Detector, d.Key}
	tx.bursts[k] = []Burst{{DetectionKey: k, ObservationID: "b", IncidentID: "rollup", Last: nanos(t0.Add(-time.Second)),
		Open: true, Severity: vigil.SeverityMedium, Signals: 2, Rollup: true}}
	e := engineWith(tx, policy())
	detect(t, e, d)
	if len(tx.growth) != 1 || !tx.growth[0].Context {
		t.Fatalf("growth %+v: want the roll-up's nodes grown as context", tx.growth)
	}
	if tx.sources["rollup"]["node:203.0.113.7"] != 3 || r.Count != 12 || r.Sources != 10 {
		t.Errorf("sources %v, roll-up %+v: want the source's count and the roll-up's up by one", tx.sources, r)
	}
	if slices.ContainsFunc(tx.log, func(l string) bool { return strings.HasPrefix(l, "HubNodes") }) {
		t.Errorf("log %v: a roll-up's source is no key of it, no hub to look for", tx.log)
	}
}

// TestFreshSourceSkipsLookups: a finding whose source the transaction
// created (a scanner seen for the first time) looks for no hub, no open
// incident and no earlier risk: none can name it yet.
func TestFreshSourceSkipsLookups(t *testing.T) {
	tx := newFake()
	tx.newNodes = map[string]bool{"203.0.113.77": true}
	e := engineWith(tx, policy())
	detect(t, e, scan("ET SCAN X", "recon", vigil.SeverityMedium, "203.0.113.77", t0))
	got := calls(tx.log)
	for _, skipped := range []string{"HubNodes", "OpenIncidents", "Risk"} {
		if slices.Contains(got, skipped) {
			t.Errorf("calls %v: %s for a fresh source", got, skipped)
		}
	}
	if !slices.Contains(got, "AddRisk") || len(tx.created) != 1 {
		t.Errorf("calls %v: want its risk recorded and an incident opened", got)
	}
	// The same source again is no longer fresh.
	tx.newNodes = nil
	detect(t, e, scan("ET SCAN Y", "recon", vigil.SeverityMedium, "203.0.113.77", t0.Add(time.Second)))
	if got := calls(tx.log); !slices.Contains(got, "OpenIncidents") || !slices.Contains(got, "Risk") {
		t.Errorf("calls %v: want the lookups for a known source", got)
	}
}

// TestNewKeyReadsNothingBack: an alert of a source the Tally has not seen
// (a scanner's one alert) reads none of what its transaction just
// recorded — no bursts, no signals, no window — and its observation
// holds the alert's artifact and nodes as a read would have given them;
// the same source's next alert is no longer new and reads its burst.
func TestNewKeyReadsNothingBack(t *testing.T) {
	tx := newFake()
	tx.newNodes = map[string]bool{"203.0.113.77": true}
	e := engineWith(tx, policy())
	e.tally = NewTally(0, 0)
	d := scan("ET SCAN X", "recon", vigil.SeverityMedium, "203.0.113.77", t0)
	detect(t, e, d)
	got := calls(tx.log)
	for _, read := range []string{"Bursts", "SignalsFrom", "WindowSignals"} {
		if slices.Contains(got, read) {
			t.Errorf("calls %v: %s of a key the store held nothing of", got, read)
		}
	}
	if len(tx.inserted) != 1 {
		t.Fatalf("inserted %d observations, want 1", len(tx.inserted))
	}
	o := tx.inserted[0]
	if !slices.Equal(o.ArtifactIDs, []string{d.Signals[0].ArtifactID}) || len(o.NodeIDs) != 2 {
		t.Errorf("observation artifacts %v, nodes %v: want the alert's artifact and its two nodes", o.ArtifactIDs, o.NodeIDs)
	}
	tx.log = nil
	detect(t, e, scan("ET SCAN X", "recon", vigil.SeverityMedium, "203.0.113.77", t0.Add(time.Second)))
	if got := calls(tx.log); !slices.Contains(got, "Bursts") {
		t.Errorf("calls %v: want the bursts of a key seen before read", got)
	}
}
