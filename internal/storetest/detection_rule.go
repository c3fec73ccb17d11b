package storetest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func detectionRuleTests() []test {
	return []test{
		{"CreateGetList", testDetectionRuleCreateGetList},
		{"UpdateEnableReplace", testDetectionRuleUpdate},
		{"UniqueSigmaIDAndName", testDetectionRuleUnique},
		{"Delete", testDetectionRuleDelete},
		{"Limit", testDetectionRuleLimit},
		{"OrgIsolation", testDetectionRuleTenancy},
		{"StarterRuleStates", testStarterRuleStates},
	}
}

func newDetectionRule(title, sigmaID, name string, created time.Time) *vigil.DetectionRule {
	return &vigil.DetectionRule{ID: vigil.NewID(), Title: title, SigmaID: sigmaID, Name: name, Kind: "detection",
		Level: "medium", Enabled: true, Rule: "title: " + title + "\n", CreatedBy: "analyst@example",
		CreatedAt: created, UpdatedAt: created}
}

func mustCreateDetectionRule(t *testing.T, s vigil.Store, org string, r *vigil.DetectionRule) {
	t.Helper()
	if err := s.CreateDetectionRule(t.Context(), org, r); err != nil {
		t.Fatalf("CreateDetectionRule(%s): %v", r.Title, err)
	}
}

func detectionRuleIDs(l []*vigil.DetectionRule) []string {
	out := []string{}
	for _, r := range l {
		out = append(out, r.ID)
	}
	return out
}

func testDetectionRuleCreateGetList(t *testing.T, s Store) {
	org := vigil.NewID()
	a := newDetectionRule("first", "5638f7c0-ac70-491d-8465-2a65075e0d86", "first_rule", at(0))
	b := newDetectionRule("second", "", "", at(time.Minute))
	b.Enabled, b.Kind, b.Rule = false, "correlation", "title: second\ncorrelation: {}\n"
	mustCreateDetectionRule(t, s, org, b)
	mustCreateDetectionRule(t, s, org, a)
	got, err := s.GetDetectionRule(t.Context(), org, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *a {
		t.Errorf("got %+v\nwant %+v", got, a)
	}
	list, total, err := s.ListDetectionRules(t.Context(), org, vigil.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || !slices.Equal(detectionRuleIDs(list), []string{a.ID, b.ID}) {
		t.Errorf("list %v (total %d), want oldest first %v", detectionRuleIDs(list), total, []string{a.ID, b.ID})
	}
	if list[1].Enabled || list[1].Kind != "correlation" || list[1].Rule != b.Rule {
		t.Errorf("second rule read back as %+v", list[1])
	}
	page, total, _ := s.ListDetectionRules(t.Context(), org, vigil.Page{Limit: 1, Offset: 1})
	if total != 2 || !slices.Equal(detectionRuleIDs(page), []string{b.ID}) {
		t.Errorf("page 2 = %v (total %d)", detectionRuleIDs(page), total)
	}
	_, err = s.GetDetectionRule(t.Context(), org, vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "GetDetectionRule of a missing id")
}

func testDetectionRuleUpdate(t *testing.T, s Store) {
	org := vigil.NewID()
	r := newDetectionRule("rule", "", "", at(0))
	mustCreateDetectionRule(t, s, org, r)
	off := false
	got, err := s.UpdateDetectionRule(t.Context(), org, r.ID, vigil.DetectionRuleUpdate{Enabled: &off}, at(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got.Enabled || got.Title != "rule" || !got.UpdatedAt.Equal(at(time.Hour)) || !got.CreatedAt.Equal(at(0)) {
		t.Errorf("after disable: %+v", got)
	}
	repl := &vigil.DetectionRule{Title: "renamed", SigmaID: "0e95725d-7320-415d-80f7-004da920fc11", Name: "renamed",
		Kind: "filter", Level: "high", Rule: "title: renamed\n"}
	if _, err = s.UpdateDetectionRule(t.Context(), org, r.ID, vigil.DetectionRuleUpdate{Rule: repl}, at(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetDetectionRule(t.Context(), org, r.ID)
	if got.Title != "renamed" || got.SigmaID != repl.SigmaID || got.Name != "renamed" || got.Kind != "filter" ||
		got.Level != "high" || got.Rule != repl.Rule || got.Enabled {
		t.Errorf("after replace: %+v", got)
	}
	_, err = s.UpdateDetectionRule(t.Context(), org, vigil.NewID(), vigil.DetectionRuleUpdate{Enabled: &off}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateDetectionRule of a missing id")
}

func testDetectionRuleUnique(t *testing.T, s Store) {
	org := vigil.NewID()
	sid := "545a5da6-f103-4919-a519-e9aec1026ee4"
	mustCreateDetectionRule(t, s, org, newDetectionRule("a", sid, "a_rule", at(0)))
	err := s.CreateDetectionRule(t.Context(), org, newDetectionRule("b", sid, "", at(time.Second)))
	wantCode(t, err, vigil.ECONFLICT, "a second rule of the same Sigma id")
	err = s.CreateDetectionRule(t.Context(), org, newDetectionRule("c", "", "a_rule", at(time.Second)))
	wantCode(t, err, vigil.ECONFLICT, "a second rule of the same name")
	// Rules without an id or a name are many; another org may reuse both.
	mustCreateDetectionRule(t, s, org, newDetectionRule("d", "", "", at(2*time.Second)))
	mustCreateDetectionRule(t, s, org, newDetectionRule("e", "", "", at(3*time.Second)))
	mustCreateDetectionRule(t, s, vigil.NewID(), newDetectionRule("a", sid, "a_rule", at(0)))
	// An update onto another rule's id conflicts too.
	e := newDetectionRule("f", "", "", at(4*time.Second))
	mustCreateDetectionRule(t, s, org, e)
	_, err = s.UpdateDetectionRule(t.Context(), org, e.ID, vigil.DetectionRuleUpdate{Rule: newDetectionRule("f", sid, "", at(0))}, at(time.Hour))
	wantCode(t, err, vigil.ECONFLICT, "an update to another rule's Sigma id")
}

func testDetectionRuleDelete(t *testing.T, s Store) {
	org := vigil.NewID()
	r := newDetectionRule("rule", "", "", at(0))
	mustCreateDetectionRule(t, s, org, r)
	if err := s.DeleteDetectionRule(t.Context(), org, r.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetDetectionRule(t.Context(), org, r.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetDetectionRule after delete")
	wantCode(t, s.DeleteDetectionRule(t.Context(), org, r.ID), vigil.ENOTFOUND, "a second delete")
}

func testDetectionRuleLimit(t *testing.T, s Store) {
	org := vigil.NewID()
	for i := range vigil.MaxDetectionRules {
		mustCreateDetectionRule(t, s, org, newDetectionRule("r", "", "", at(time.Duration(i)*time.Millisecond)))
	}
	err := s.CreateDetectionRule(t.Context(), org, newDetectionRule("one more", "", "", at(time.Hour)))
	wantCode(t, err, vigil.ECONFLICT, "a rule past MaxDetectionRules")
	mustCreateDetectionRule(t, s, vigil.NewID(), newDetectionRule("other org", "", "", at(0)))
}

func testDetectionRuleTenancy(t *testing.T, s Store) {
	a, b := vigil.NewID(), vigil.NewID()
	r := newDetectionRule("a's rule", "", "", at(0))
	mustCreateDetectionRule(t, s, a, r)
	_, err := s.GetDetectionRule(t.Context(), b, r.ID)
	wantCode(t, err, vigil.ENOTFOUND, "another org's GetDetectionRule")
	off := false
	_, err = s.UpdateDetectionRule(t.Context(), b, r.ID, vigil.DetectionRuleUpdate{Enabled: &off}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "another org's UpdateDetectionRule")
	wantCode(t, s.DeleteDetectionRule(t.Context(), b, r.ID), vigil.ENOTFOUND, "another org's DeleteDetectionRule")
	if list, total, _ := s.ListDetectionRules(t.Context(), b, vigil.Page{Limit: 10}); total != 0 || len(list) != 0 {
		t.Errorf("org b lists %d rules", total)
	}
	if got, err := s.GetDetectionRule(t.Context(), a, r.ID); err != nil || !got.Enabled {
		t.Errorf("a's rule after b's attempts: %+v %v", got, err)
	}
}

// testStarterRuleStates: an org's choices about the starter rules are
// kept per rule, the last one wins, and another org sees none of them.
func testStarterRuleStates(t *testing.T, s Store) {
	a, b := vigil.NewID(), vigil.NewID()
	ctx := t.Context()
	if got, err := s.StarterRuleStates(ctx, a); err != nil || len(got) != 0 {
		t.Fatalf("a new org's states = %v, %v; want none", got, err)
	}
	for _, st := range []struct {
		id string
		on bool
	}{{"rule-1", false}, {"rule-2", true}, {"rule-1", true}, {"rule-3", false}} {
		if err := s.SetStarterRuleState(ctx, a, st.id, st.on, at(time.Minute)); err != nil {
			t.Fatalf("SetStarterRuleState(%s, %v): %v", st.id, st.on, err)
		}
	}
	got, err := s.StarterRuleStates(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"rule-1": true, "rule-2": true, "rule-3": false}; !maps.Equal(got, want) {
		t.Errorf("a's states = %v, want %v", got, want)
	}
	if got, err := s.StarterRuleStates(ctx, b); err != nil || len(got) != 0 {
		t.Errorf("org b's states = %v, %v; want none of a's", got, err)
	}
}
