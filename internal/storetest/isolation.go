package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// Every write is scoped by org: two orgs built alike — the same lines, the
// same nodes by value, the same detections of the same keys, observations
// and incidents alike — and every kind of write done to one of them
// leaves the other's records byte-identical. A statement that names its
// rows by what orgs share (a node value, a detector's key, a status, an
// incident's id taken from the wrong org's join) would touch the twin.

// twin is what one org of the isolation test was built with.
type twin struct {
	org       string
	arts      []string // artifact ids, one per line
	keyNode   string   // the attacker's address, a key node
	hostNode  string
	fired     string // the observation a detection fired
	recorded  string // an analyst's observation in the same incident
	apart     string // an observation in an incident of its own
	incidents []string
	sup       string // a suppression that swallowed a signal
}

// buildTwin gives org the state the isolation test starts from.
func buildTwin(t *testing.T, s Store, org string) *twin {
	t.Helper()
	tw := &twin{org: org}
	var arts []*vigil.Artifact
	for i := range 8 {
		a := newArtifact("auth", fmt.Sprintf("Failed password for u%d from 203.0.113.7", i), at(time.Duration(i)*time.Minute))
		arts = append(arts, a)
		tw.arts = append(tw.arts, a.ID)
	}
	mustInsertArtifacts(t, s, org, arts...)
	ns := mustNodes(t, s, org, ipNode("203.0.113.7"), hostNode("web-01"), ipNode("198.51.100.9"))
	tw.keyNode, tw.hostNode = ns[0], ns[1]
	d := twinDetection(arts[:5])
	found, err := detect(t.Context(), s, org, []*vigil.Detection{d}, policy)
	if err != nil || len(found) != 1 {
		t.Fatalf("%s: detection fired %v, %v; want one observation", org, found, err)
	}
	tw.fired = found[0].ObservationID
	o := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(6*time.Minute), ids(ns[0], ns[1]), ids(ns[0]), tw.arts[5:6]), policy)
	tw.recorded = o.ID
	apart := mustRecord(t, s, org, obs(vigil.SeverityLow, at(7*time.Minute), ids(ns[2]), ids(ns[2]), tw.arts[6:7]), policy)
	tw.apart = apart.ID
	tw.incidents = ids(o.IncidentID, apart.IncidentID)
	mustCreateRule(t, s, org, newRule("twin rule", 1, base))
	mustCreateRole(t, s, org, "twin role", "incidents:read")
	sp := mustCreateSuppression(t, s, org, newSuppression("twin suppression", base))
	tw.sup = sp.ID
	if _, err := s.CountSuppressed(t.Context(), org, []vigil.SuppressedSignal{{SuppressionID: sp.ID, Detector: "bf", Key: "203.0.113.7", ArtifactID: tw.arts[7]}}, base); err != nil {
		t.Fatalf("CountSuppressed: %v", err)
	}
	return tw
}

// twinDetection is a detection of failed logins from 203.0.113.7, one
// signal per artifact.
func twinDetection(arts []*vigil.Artifact) *vigil.Detection {
	d := &vigil.Detection{Detector: "bf", Key: "203.0.113.7", Span: 10 * time.Minute, MinCount: 5,
		Describe: func(key string, w vigil.WindowState) vigil.Finding {
			return vigil.Finding{Type: "auth", Severity: vigil.SeverityMedium, Title: "brute force from " + key,
				Description: fmt.Sprintf("%d failures from %s, grown=%v", w.Count, key, w.Grown)}
		}}
	for i, a := range arts {
		d.Signals = append(d.Signals, vigil.Signal{ArtifactID: a.ID, At: a.Timestamp, Member: fmt.Sprintf("u%d", i),
			Nodes: []vigil.NodeRef{ipNode("203.0.113.7"), hostNode("web-01")}})
	}
	return d
}

// snapshot returns every record of org the store shows, as JSON.
func snapshot(t *testing.T, s Store, org string) []byte {
	t.Helper()
	ctx := t.Context()
	all := vigil.Page{Limit: vigil.MaxLimit}
	var snap struct {
		Artifacts    []*vigil.Artifact
		Nodes        []*vigil.Node
		Observations []*vigil.Observation
		Incidents    []*vigil.Incident
		Facts        []*vigil.IncidentFacts
		Open         []string
		Rules        []*vigil.Rule
		Roles        []*vigil.Role
		Settings     *vigil.EnrichmentSettings
		Suppressions []*vigil.Suppression
	}
	snap.Artifacts, _ = mustSearch(t, s, org, vigil.ArtifactFilter{Page: all})
	snap.Nodes, _ = mustListNodes(t, s, org, vigil.NodeFilter{Page: all})
	list, _ := mustListObservations(t, s, org, vigil.ObservationFilter{Page: all})
	for _, o := range list {
		snap.Observations = append(snap.Observations, mustObservation(t, s, org, o.ID))
	}
	incs, _ := mustListIncidents(t, s, org, vigil.IncidentFilter{Merged: vigil.MergedInclude, Page: all})
	for _, i := range incs {
		snap.Incidents = append(snap.Incidents, mustIncident(t, s, org, i.ID))
		f, err := s.IncidentFacts(ctx, org, i.ID)
		if err != nil {
			t.Fatalf("IncidentFacts: %v", err)
		}
		snap.Facts = append(snap.Facts, f)
	}
	var err error
	if snap.Open, err = s.OpenIncidentIDs(ctx, org); err != nil {
		t.Fatalf("OpenIncidentIDs: %v", err)
	}
	snap.Rules, _ = mustListRules(t, s, org, all)
	snap.Roles, _ = mustListRoles(t, s, org, all)
	snap.Settings = mustSettings(t, s, org)
	if snap.Suppressions, _, err = s.ListSuppressions(ctx, org, all); err != nil {
		t.Fatalf("ListSuppressions: %v", err)
	}
	b, err := json.MarshalIndent(snap, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testTenancyWritesScoped(t *testing.T, s Store) {
	ctx := t.Context()
	a := buildTwin(t, s, "org-a")
	b := buildTwin(t, s, "org-b")
	c := buildTwin(t, s, "org-c") // b's twin, to compare the detection state
	before := snapshot(t, s, b.org)

	// Every kind of write, to org A only.
	more := make([]*vigil.Artifact, 3)
	for i := range more {
		more[i] = newArtifact("auth", fmt.Sprintf("Failed password for v%d from 203.0.113.7", i), at(time.Duration(8+i)*time.Minute))
	}
	mustInsertArtifacts(t, s, a.org, more...)
	if _, err := detect(ctx, s, a.org, []*vigil.Detection{twinDetection(more)}, policy); err != nil {
		t.Fatalf("growing org A's burst: %v", err)
	}
	// A bridge merges org A's two incidents.
	bridge := mustRecord(t, s, a.org, obs(vigil.SeverityCritical, at(12*time.Minute), nil, nil, nil), policy)
	bridgeNodes, err := s.UpsertNodes(ctx, a.org, []vigil.NodeRef{ipNode("203.0.113.7"), ipNode("198.51.100.9")})
	if err != nil {
		t.Fatal(err)
	}
	merge := obs(vigil.SeverityMedium, at(13*time.Minute), ids(bridgeNodes[0].ID, bridgeNodes[1].ID), ids(bridgeNodes[0].ID, bridgeNodes[1].ID), nil)
	mustRecord(t, s, a.org, merge, policy)
	desc, sev := "rewritten", vigil.SeverityLow
	newNodes, newArts := ids(a.keyNode), ids(a.arts[7])
	if _, err := updateObservation(ctx, s, a.org, a.recorded, vigil.ObservationUpdate{Description: &desc, Severity: &sev,
		NodeIDs: &newNodes, ArtifactIDs: &newArts, Nodes: []vigil.NodeRef{hostNode("web-02")}}, at(14*time.Minute)); err != nil {
		t.Fatalf("UpdateObservation: %v", err)
	}
	if err := deleteObservation(ctx, s, a.org, a.apart); err != nil {
		t.Fatalf("DeleteObservation: %v", err)
	}
	if err := deleteObservation(ctx, s, a.org, bridge.ID); err != nil {
		t.Fatalf("DeleteObservation: %v", err)
	}
	rule := newRule("twin rule", 1, base)
	mustCreateRule(t, s, a.org, rule)
	for _, id := range a.incidents {
		if err := s.ClassifyIncident(ctx, a.org, id, rule, at(15*time.Minute)); err != nil {
			t.Fatalf("ClassifyIncident: %v", err)
		}
	}
	name := "renamed"
	if _, err := s.UpdateRule(ctx, a.org, rule.ID, vigil.RuleUpdate{Name: &name}, at(16*time.Minute)); err != nil {
		t.Fatalf("UpdateRule: %v", err)
	}
	if err := s.DeleteRule(ctx, a.org, rule.ID); err != nil {
		t.Fatalf("DeleteRule: %v", err)
	}
	role := mustCreateRole(t, s, a.org, "second role", "incidents:read")
	if _, err := s.UpdateRole(ctx, a.org, role.ID, vigil.RoleUpdate{Name: &name}, at(16*time.Minute)); err != nil {
		t.Fatalf("UpdateRole: %v", err)
	}
	if err := s.DeleteRole(ctx, a.org, role.ID); err != nil {
		t.Fatalf("DeleteRole: %v", err)
	}
	set := mustSettings(t, s, a.org)
	set.InternalNetworks = []string{"10.0.0.0/8"}
	mustPutSettings(t, s, a.org, set)
	if err := s.SetArtifactEnrichment(ctx, a.org, a.arts[0], json.RawMessage(`{"203.0.113.7":{"intel":[]}}`)); err != nil {
		t.Fatalf("SetArtifactEnrichment: %v", err)
	}
	// Suppressions: counted (naming B's suppression too, which A has
	// not), updated, created and deleted.
	if _, err := s.CountSuppressed(ctx, a.org, []vigil.SuppressedSignal{
		{SuppressionID: a.sup, Detector: "bf", Key: "203.0.113.7", ArtifactID: a.arts[6]},
		{SuppressionID: b.sup, Detector: "bf", Key: "203.0.113.7", ArtifactID: a.arts[5]},
	}, at(17*time.Minute)); err != nil {
		t.Fatalf("CountSuppressed: %v", err)
	}
	off := false
	if _, err := s.UpdateSuppression(ctx, a.org, a.sup, vigil.SuppressionUpdate{Enabled: &off, Name: &name, SetExpiresAt: true}, at(17*time.Minute)); err != nil {
		t.Fatalf("UpdateSuppression: %v", err)
	}
	extra := mustCreateSuppression(t, s, a.org, newSuppression("second", at(17*time.Minute)))
	for _, id := range ids(extra.ID, a.sup) {
		if err := s.DeleteSuppression(ctx, a.org, id); err != nil {
			t.Fatalf("DeleteSuppression: %v", err)
		}
	}
	for _, id := range a.incidents {
		if mustIncident(t, s, a.org, id).MergedInto != nil {
			continue // the bridge merged it: it takes no status
		}
		if _, err := s.SetIncidentStatus(ctx, a.org, id, vigil.StatusResolved, "analyst", at(17*time.Minute)); err != nil {
			t.Fatalf("SetIncidentStatus: %v", err)
		}
	}

	if after := snapshot(t, s, b.org); !bytes.Equal(before, after) {
		t.Fatalf("writes to org A changed org B's records:\nbefore %s\nafter  %s", before, after)
	}
	// The detection state of B is its twin C's: the same signals grow
	// both bursts alike.
	for _, tw := range []*twin{b, c} {
		arts := make([]*vigil.Artifact, 2)
		for i := range arts {
			arts[i] = newArtifact("auth", fmt.Sprintf("Failed password for w%d from 203.0.113.7", i), at(time.Duration(9+i)*time.Minute))
		}
		mustInsertArtifacts(t, s, tw.org, arts...)
		found, err := detect(ctx, s, tw.org, []*vigil.Detection{twinDetection(arts)}, policy)
		if err != nil || len(found) != 1 || found[0].ObservationID != tw.fired {
			t.Fatalf("%s: growth recorded %v, %v; want its burst's observation %s grown", tw.org, found, err, tw.fired)
		}
	}
	ob, oc := mustObservation(t, s, b.org, b.fired), mustObservation(t, s, c.org, c.fired)
	if ob.Description != oc.Description || len(ob.ArtifactIDs) != len(oc.ArtifactIDs) || ob.Description != "7 failures from 203.0.113.7, grown=true" {
		t.Errorf("org B's burst grew to %q (%d artifacts), its twin's to %q (%d); want 7 failures each",
			ob.Description, len(ob.ArtifactIDs), oc.Description, len(oc.ArtifactIDs))
	}
}
