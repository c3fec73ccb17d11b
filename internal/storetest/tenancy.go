package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// Tenancy: a record of org A is, for org B, exactly a missing record.

func tenancyTests() []test {
	return []test{
		{"Artifacts", testTenancyArtifacts},
		{"Observations", testTenancyObservations},
		{"ObservationRefsOfOtherOrg", testTenancyObservationRefs},
		{"CorrelationStaysInOrg", testTenancyCorrelation},
		{"Incidents", testTenancyIncidents},
		{"Rules", testTenancyRules},
		{"Suppressions", testTenancySuppressions},
		{"Roles", testTenancyRoles},
		{"APIKeys", testTenancyAPIKeys},
		{"EnrichmentSettings", testTenancySettings},
		{"WritesLeaveOtherOrgsAlone", testTenancyWritesScoped},
	}
}

func testTenancyArtifacts(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	a := newArtifact("auth", "Failed password for root from 10.0.0.1", at(time.Minute))
	mustInsertArtifacts(t, s, orgA, a)
	b := newArtifact("auth", "Failed password for bob from 10.0.0.2", at(2*time.Minute))
	mustInsertArtifacts(t, s, orgB, b)

	for _, f := range []vigil.ArtifactFilter{
		{},
		{Query: "root"},
		{Query: "10.0.0.1"},
		{Query: "password"},
		{Query: "-bob"},
		{Source: "auth"},
		{Range: vigil.TimeRange{Start: at(0), End: at(time.Hour)}},
	} {
		got, total := mustSearch(t, s, orgB, f)
		if slices.Contains(ArtifactIDs(got), a.ID) {
			t.Errorf("org B's search %+v returned org A's artifact", f)
		}
		want := 0
		if f.Query != "root" && f.Query != "10.0.0.1" && f.Query != "-bob" {
			want = 1
		}
		if total != want {
			t.Errorf("org B's search %+v: total %d, want %d", f, total, want)
		}
	}

	// Setting the enrichment of another org's artifact is reported as for
	// a missing one and changes nothing.
	errMissing := s.SetArtifactEnrichment(t.Context(), orgB, vigil.NewID(), json.RawMessage(`{"x":1}`))
	errOther := s.SetArtifactEnrichment(t.Context(), orgB, a.ID, json.RawMessage(`{"x":1}`))
	if vigil.ErrorCode(errOther) != vigil.ErrorCode(errMissing) {
		t.Errorf("SetArtifactEnrichment of org A's artifact by org B: %v; for a missing one: %v", errOther, errMissing)
	}
	if c := vigil.ErrorCode(errOther); c != "" && c != vigil.ENOTFOUND {
		t.Errorf("SetArtifactEnrichment by org B: code %q, want none or %q", c, vigil.ENOTFOUND)
	}
	if g := mustArtifact(t, s, orgA, a.ID); !isNull(g.Enrichment) {
		t.Errorf("org B set the enrichment of org A's artifact: %s", g.Enrichment)
	}

	// Org B inserting an artifact under org A's ID does not touch org A's.
	clash := *a
	clash.Raw = "org B text"
	if err := s.InsertArtifacts(t.Context(), orgB, []*vigil.Artifact{&clash}); err != nil && vigil.ErrorCode(err) == vigil.EINTERNAL {
		t.Errorf("InsertArtifacts with another org's ID: %v", err)
	}
	if g := mustArtifact(t, s, orgA, a.ID); g.Raw != a.Raw || g.OrgID != orgA {
		t.Errorf("org A's artifact became org=%s raw=%q", g.OrgID, g.Raw)
	}
}

func testTenancyObservations(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	na := mustNodes(t, s, orgA, ipNode("10.0.0.1"))
	oa := mustRecord(t, s, orgA, obs(vigil.SeverityHigh, at(0), na, na, nil), policy)
	ob := mustRecord(t, s, orgB, obs(vigil.SeverityLow, at(time.Minute), nil, nil, nil), policy)

	_, err := s.GetObservation(t.Context(), orgB, oa.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetObservation of org A's observation by org B")

	desc := "changed by org B"
	sev := vigil.SeverityLow
	_, err = updateObservation(t.Context(), s, orgB, oa.ID, vigil.ObservationUpdate{Description: &desc, Severity: &sev}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateObservation of org A's observation by org B")

	err = deleteObservation(t.Context(), s, orgB, oa.ID)
	wantCode(t, err, vigil.ENOTFOUND, "DeleteObservation of org A's observation by org B")

	g := mustObservation(t, s, orgA, oa.ID)
	if g.Description != oa.Description || g.Severity != oa.Severity || !g.UpdatedAt.Equal(oa.UpdatedAt) {
		t.Errorf("org A's observation changed: %q %s %v", g.Description, g.Severity, g.UpdatedAt)
	}
	wantIncident(t, s, orgA, oa.IncidentID, ids(oa.ID), 1, 0, vigil.SeverityHigh)

	for _, f := range []vigil.ObservationFilter{
		{},
		{Type: "test.finding"},
		{Severity: vigil.SeverityHigh},
		{Range: vigil.TimeRange{Start: at(-time.Hour), End: at(time.Hour)}},
	} {
		list, total := mustListObservations(t, s, orgB, f)
		if slices.Contains(observationIDs(list), oa.ID) {
			t.Errorf("org B's list %+v includes org A's observation", f)
		}
		want := 1
		if f.Severity == vigil.SeverityHigh {
			want = 0
		}
		if total != want {
			t.Errorf("org B's list %+v: total %d, want %d", f, total, want)
		}
	}
	if list, _ := mustListObservations(t, s, orgB, vigil.ObservationFilter{}); !slices.Equal(observationIDs(list), ids(ob.ID)) {
		t.Errorf("org B's observations = %v, want only its own %s", observationIDs(list), ob.ID)
	}
}

func testTenancyObservationRefs(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	nodeA := mustNodes(t, s, orgA, ipNode("10.0.0.1"))
	artA := mustArtifactIDs(t, s, orgA, 1)

	for _, tc := range []struct {
		name string
		o    *vigil.Observation
	}{
		{"node of org A", obs(vigil.SeverityLow, base, nodeA, nodeA, nil)},
		{"artifact of org A", obs(vigil.SeverityLow, base, nil, nil, artA)},
	} {
		err := recordObservation(t.Context(), s, orgB, tc.o, "title", policy)
		wantCode(t, err, vigil.EINVALID, "RecordObservation in org B naming a "+tc.name)
	}
	if _, total := mustListObservations(t, s, orgB, vigil.ObservationFilter{}); total != 0 {
		t.Errorf("org B has %d observations after refused records, want 0", total)
	}

	// The same through an update.
	ob := mustRecord(t, s, orgB, obs(vigil.SeverityLow, base, nil, nil, nil), policy)
	_, err := updateObservation(t.Context(), s, orgB, ob.ID, vigil.ObservationUpdate{NodeIDs: &nodeA}, at(time.Minute))
	wantCode(t, err, vigil.EINVALID, "UpdateObservation in org B naming a node of org A")
	_, err = updateObservation(t.Context(), s, orgB, ob.ID, vigil.ObservationUpdate{ArtifactIDs: &artA}, at(time.Minute))
	wantCode(t, err, vigil.EINVALID, "UpdateObservation in org B naming an artifact of org A")
	if g := mustObservation(t, s, orgB, ob.ID); len(g.NodeIDs) != 0 || len(g.ArtifactIDs) != 0 {
		t.Errorf("refused update left nodes %v artifacts %v", g.NodeIDs, g.ArtifactIDs)
	}
}

func testTenancyCorrelation(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	// The same attacker seen by two orgs makes one incident in each.
	na := mustNodes(t, s, orgA, ipNode("203.0.113.7"))
	nb := mustNodes(t, s, orgB, ipNode("203.0.113.7"))
	oa := mustRecord(t, s, orgA, obs(vigil.SeverityHigh, at(0), na, na, nil), policy)
	ob := mustRecord(t, s, orgB, obs(vigil.SeverityLow, at(time.Minute), nb, nb, nil), policy)
	if oa.IncidentID == ob.IncidentID {
		t.Fatalf("observations of two orgs joined one incident %s", oa.IncidentID)
	}
	wantIncident(t, s, orgA, oa.IncidentID, ids(oa.ID), 1, 0, vigil.SeverityHigh)
	wantIncident(t, s, orgB, ob.IncidentID, ids(ob.ID), 1, 0, vigil.SeverityLow)
}

func testTenancyIncidents(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	oa := mustRecord(t, s, orgA, obs(vigil.SeverityHigh, at(0), nil, nil, nil), policy)
	ob := mustRecord(t, s, orgB, obs(vigil.SeverityHigh, at(time.Minute), nil, nil, nil), policy)

	_, err := s.GetIncident(t.Context(), orgB, oa.IncidentID)
	wantCode(t, err, vigil.ENOTFOUND, "GetIncident of org A's incident by org B")

	_, err = s.SetIncidentStatus(t.Context(), orgB, oa.IncidentID, vigil.StatusClosed, "mallory", at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "SetIncidentStatus of org A's incident by org B")
	inc := mustIncident(t, s, orgA, oa.IncidentID)
	if inc.Status != vigil.StatusNew || len(inc.History) != 0 || inc.ResolvedAt != nil || inc.Classification != nil {
		t.Errorf("org A's incident changed: status %d, history %v, resolved %s, classification %s",
			inc.Status, inc.History, timePtrString(inc.ResolvedAt), strPtrString(inc.Classification))
	}

	for _, f := range []vigil.IncidentFilter{
		{},
		{Status: vigil.StatusNew},
		{Severity: vigil.SeverityHigh},
		{Range: vigil.TimeRange{Start: at(-time.Hour), End: at(time.Hour)}},
	} {
		list, total := mustListIncidents(t, s, orgB, f)
		if !slices.Equal(incidentIDs(list), ids(ob.IncidentID)) || total != 1 {
			t.Errorf("org B's incidents %+v = %v (total %d), want only its own %s", f, incidentIDs(list), total, ob.IncidentID)
		}
	}
}

func testTenancyRules(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	ra := mustCreateRule(t, s, orgA, newRule("org A rule", 1, base))
	rb := mustCreateRule(t, s, orgB, newRule("org B rule", 1, base))

	_, err := s.GetRule(t.Context(), orgB, ra.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetRule of org A's rule by org B")
	name := "renamed by B"
	_, err = s.UpdateRule(t.Context(), orgB, ra.ID, vigil.RuleUpdate{Name: &name}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateRule of org A's rule by org B")
	err = s.DeleteRule(t.Context(), orgB, ra.ID)
	wantCode(t, err, vigil.ENOTFOUND, "DeleteRule of org A's rule by org B")
	if g := mustGetRule(t, s, orgA, ra.ID); g.Name != ra.Name || !g.UpdatedAt.Equal(ra.UpdatedAt) {
		t.Errorf("org A's rule changed: %q, updated %v", g.Name, g.UpdatedAt)
	}
	list, total := mustListRules(t, s, orgB, vigil.Page{})
	if !slices.Equal(ruleIDs(list), ids(rb.ID)) || total != 1 {
		t.Errorf("org B's rules = %v (total %d), want only %s", ruleIDs(list), total, rb.ID)
	}
}

func testTenancySuppressions(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	sa := mustCreateSuppression(t, s, orgA, newSuppression("org A suppression", base))
	sb := mustCreateSuppression(t, s, orgB, newSuppression("org B suppression", base))

	_, err := s.GetSuppression(t.Context(), orgB, sa.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetSuppression of org A's suppression by org B")
	name := "renamed by B"
	_, err = s.UpdateSuppression(t.Context(), orgB, sa.ID, vigil.SuppressionUpdate{Name: &name}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateSuppression of org A's suppression by org B")
	err = s.DeleteSuppression(t.Context(), orgB, sa.ID)
	wantCode(t, err, vigil.ENOTFOUND, "DeleteSuppression of org A's suppression by org B")
	if g := mustGetSuppression(t, s, orgA, sa.ID); g.Name != sa.Name || !g.UpdatedAt.Equal(sa.UpdatedAt) {
		t.Errorf("org A's suppression changed: %q, updated %v", g.Name, g.UpdatedAt)
	}
	list, total, err := s.ListSuppressions(t.Context(), orgB, vigil.Page{})
	if err != nil || !slices.Equal(suppressionIDs(list), ids(sb.ID)) || total != 1 {
		t.Errorf("org B's suppressions = %v (total %d, %v), want only %s", suppressionIDs(list), total, err, sb.ID)
	}
}

func testTenancyRoles(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	ra := mustCreateRole(t, s, orgA, "responder", vigil.PermIncidentsManage, vigil.PermAdmin)
	rb := mustCreateRole(t, s, orgB, "viewer", vigil.PermObserverRead)

	_, err := s.GetRole(t.Context(), orgB, ra.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetRole of org A's role by org B")
	name := "renamed by B"
	_, err = s.UpdateRole(t.Context(), orgB, ra.ID, vigil.RoleUpdate{Name: &name}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateRole of org A's role by org B")
	err = s.DeleteRole(t.Context(), orgB, ra.ID)
	wantCode(t, err, vigil.ENOTFOUND, "DeleteRole of org A's role by org B")
	if g := mustGetRole(t, s, orgA, ra.ID); g.Name != ra.Name || !sameSet(g.Permissions, ra.Permissions) {
		t.Errorf("org A's role changed: %q %v", g.Name, g.Permissions)
	}
	list, total := mustListRoles(t, s, orgB, vigil.Page{})
	if !slices.Equal(roleIDs(list), ids(rb.ID)) || total != 1 {
		t.Errorf("org B's roles = %v (total %d), want only %s", roleIDs(list), total, rb.ID)
	}
	// A token of org B naming org A's role gets nothing from it.
	if perms := mustRolePermissions(t, s, orgB, "responder"); len(perms) != 0 {
		t.Errorf("org B naming org A's role %q got %v, want nothing", "responder", perms)
	}
	if perms := mustRolePermissions(t, s, orgB, "responder", "viewer"); !sameSet(perms, ids(vigil.PermObserverRead)) {
		t.Errorf("org B naming both roles got %v, want only its own %v", perms, []string{vigil.PermObserverRead})
	}
}

func testTenancySettings(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	custom := vigil.DefaultEnrichmentSettings()
	custom.RateLimit, custom.WhoisEnabled = 7, true
	custom.UpdatedAt = at(time.Hour)
	if err := s.PutEnrichmentSettings(t.Context(), orgA, &custom); err != nil {
		t.Fatalf("PutEnrichmentSettings: %v", err)
	}
	got, err := s.EnrichmentSettings(t.Context(), orgB)
	if err != nil {
		t.Fatalf("EnrichmentSettings: %v", err)
	}
	if d := vigil.DefaultEnrichmentSettings(); got.RateLimit != d.RateLimit || got.WhoisEnabled != d.WhoisEnabled {
		t.Errorf("org B sees rate_limit %d whois %v, want the defaults %d %v", got.RateLimit, got.WhoisEnabled, d.RateLimit, d.WhoisEnabled)
	}
}
