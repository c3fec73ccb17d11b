package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func ruleTests() []test {
	return []test{
		{"CreateGet", testRuleCreateGet},
		{"ListOrder", testRuleListOrder},
		{"UpdatePartial", testRuleUpdatePartial},
		{"Delete", testRuleDelete},
	}
}

// newRule returns an enabled rule created at created.
func newRule(name string, priority int, created time.Time) *vigil.Rule {
	return &vigil.Rule{
		ID: vigil.NewID(), Name: name, Priority: priority, Enabled: true, Severity: vigil.SeverityHigh,
		Conditions: json.RawMessage(`{}`), CreatedAt: created, UpdatedAt: created,
	}
}

// ruleDiff returns how got differs from want, or "".
func ruleDiff(got, want *vigil.Rule) string {
	switch {
	case got.ID != want.ID:
		return "id " + got.ID + ", want " + want.ID
	case got.OrgID != want.OrgID:
		return "org " + got.OrgID + ", want " + want.OrgID
	case got.Name != want.Name:
		return "name " + got.Name + ", want " + want.Name
	case got.Priority != want.Priority:
		return "priority differs"
	case got.Enabled != want.Enabled:
		return "enabled differs"
	case got.Severity != want.Severity:
		return "severity " + got.Severity + ", want " + want.Severity
	case got.TargetInfrastructure != want.TargetInfrastructure:
		return "target_infrastructure differs"
	case !jsonEqual(got.Conditions, want.Conditions):
		return "conditions " + string(got.Conditions) + ", want " + string(want.Conditions)
	case !got.CreatedAt.Equal(want.CreatedAt):
		return "created_at " + got.CreatedAt.String() + ", want " + want.CreatedAt.String()
	case !got.UpdatedAt.Equal(want.UpdatedAt):
		return "updated_at " + got.UpdatedAt.String() + ", want " + want.UpdatedAt.String()
	}
	return ""
}

func testRuleCreateGet(t *testing.T, s Store) {
	org := vigil.NewID()
	r := &vigil.Rule{
		ID: vigil.NewID(), Name: "Escalate SSH success after brute force", Priority: 10, Enabled: true,
		Severity: vigil.SeverityCritical, TargetInfrastructure: true,
		Conditions: json.RawMessage(`{"all":[{"field":"observation.type","op":"eq","value":"ssh.success_after_failures"},` +
			`{"not":{"field":"node.value","op":"cidr","value":"10.0.0.0/8"}},{"field":"incident.node_count","op":"gte","value":3}]}`),
		CreatedAt: at(time.Minute), UpdatedAt: at(2 * time.Minute),
	}
	mustCreateRule(t, s, org, r)
	want := *r
	want.OrgID = org
	if d := ruleDiff(mustGetRule(t, s, org, r.ID), &want); d != "" {
		t.Errorf("GetRule: %s", d)
	}
	list, total := mustListRules(t, s, org, vigil.Page{})
	if total != 1 || len(list) != 1 {
		t.Fatalf("ListRules: %d rules, total %d; want 1", len(list), total)
	}
	if d := ruleDiff(list[0], &want); d != "" {
		t.Errorf("ListRules: %s", d)
	}
	disabled := newRule("disabled", 0, at(time.Hour))
	disabled.Enabled = false
	mustCreateRule(t, s, org, disabled)
	if g := mustGetRule(t, s, org, disabled.ID); g.Enabled || g.TargetInfrastructure {
		t.Errorf("disabled rule read back enabled=%v target_infrastructure=%v", g.Enabled, g.TargetInfrastructure)
	}
	_, err := s.GetRule(t.Context(), org, vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "GetRule of a missing rule")
}

func testRuleListOrder(t *testing.T, s Store) {
	org := vigil.NewID()
	// Created in this order (so IDs ascend in this order), but with
	// created_at chosen so that "older first" and "smaller id first"
	// disagree for the ties at priority 5.
	p5new := mustCreateRule(t, s, org, newRule("p5 newer", 5, at(3*time.Minute)))
	p1 := mustCreateRule(t, s, org, newRule("p1", 1, at(4*time.Minute)))
	p5old := mustCreateRule(t, s, org, newRule("p5 older", 5, at(1*time.Minute)))
	p0 := mustCreateRule(t, s, org, newRule("p0", 0, at(5*time.Minute)))
	p5mid := mustCreateRule(t, s, org, newRule("p5 middle", 5, at(2*time.Minute)))
	p100 := mustCreateRule(t, s, org, newRule("p100", 100, at(0)))
	want := ids(p0.ID, p1.ID, p5old.ID, p5mid.ID, p5new.ID, p100.ID)

	for _, tc := range []struct {
		p    vigil.Page
		want []string
	}{
		{vigil.Page{}, want},
		{vigil.Page{Limit: 2}, want[:2]},
		{vigil.Page{Limit: 2, Offset: 2}, want[2:4]},
		{vigil.Page{Limit: 4, Offset: 4}, want[4:]},
		{vigil.Page{Limit: 2, Offset: 6}, []string{}},
	} {
		list, total := mustListRules(t, s, org, tc.p)
		if total != 6 || !slices.Equal(ruleIDs(list), tc.want) {
			t.Errorf("ListRules(%+v) = %v (total %d), want by priority then older first %v (total 6)", tc.p, ruleIDs(list), total, tc.want)
		}
	}

	// A priority change moves the rule.
	two := 2
	if _, err := s.UpdateRule(t.Context(), org, p100.ID, vigil.RuleUpdate{Priority: &two}, at(time.Hour)); err != nil {
		t.Fatalf("UpdateRule: %v", err)
	}
	want = ids(p0.ID, p1.ID, p100.ID, p5old.ID, p5mid.ID, p5new.ID)
	if list, _ := mustListRules(t, s, org, vigil.Page{}); !slices.Equal(ruleIDs(list), want) {
		t.Errorf("after priority 100→2: %v, want %v", ruleIDs(list), want)
	}
}

func testRuleUpdatePartial(t *testing.T, s Store) {
	org := vigil.NewID()
	r := mustCreateRule(t, s, org, newRule("original", 10, at(0)))
	want := *r

	name := "renamed"
	prio := 3
	enabled := false
	sev := vigil.SeverityLow
	target := true
	cond := json.RawMessage(`{"any":[{"field":"artifact.source","op":"eq","value":"suricata"}]}`)
	for i, step := range []struct {
		u     vigil.RuleUpdate
		apply func(*vigil.Rule)
	}{
		{vigil.RuleUpdate{Name: &name}, func(r *vigil.Rule) { r.Name = name }},
		{vigil.RuleUpdate{Priority: &prio}, func(r *vigil.Rule) { r.Priority = prio }},
		{vigil.RuleUpdate{Enabled: &enabled}, func(r *vigil.Rule) { r.Enabled = enabled }},
		{vigil.RuleUpdate{Severity: &sev}, func(r *vigil.Rule) { r.Severity = sev }},
		{vigil.RuleUpdate{TargetInfrastructure: &target}, func(r *vigil.Rule) { r.TargetInfrastructure = target }},
		{vigil.RuleUpdate{Conditions: &cond}, func(r *vigil.Rule) { r.Conditions = cond }},
		{vigil.RuleUpdate{}, func(*vigil.Rule) {}},
	} {
		now := at(time.Duration(i+1) * time.Hour)
		step.apply(&want)
		want.UpdatedAt = now
		got, err := s.UpdateRule(t.Context(), org, r.ID, step.u, now)
		if err != nil {
			t.Fatalf("step %d: UpdateRule: %v", i, err)
		}
		if d := ruleDiff(got, &want); d != "" {
			t.Errorf("step %d: returned rule: %s", i, d)
		}
		if d := ruleDiff(mustGetRule(t, s, org, r.ID), &want); d != "" {
			t.Errorf("step %d: stored rule: %s", i, d)
		}
	}
	_, err := s.UpdateRule(t.Context(), org, vigil.NewID(), vigil.RuleUpdate{Name: &name}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateRule of a missing rule")
}

func testRuleDelete(t *testing.T, s Store) {
	org := vigil.NewID()
	keep := mustCreateRule(t, s, org, newRule("keep", 1, at(0)))
	gone := mustCreateRule(t, s, org, newRule("gone", 2, at(time.Minute)))
	if err := s.DeleteRule(t.Context(), org, gone.ID); err != nil {
		t.Fatalf("DeleteRule: %v", err)
	}
	_, err := s.GetRule(t.Context(), org, gone.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetRule after delete")
	err = s.DeleteRule(t.Context(), org, gone.ID)
	wantCode(t, err, vigil.ENOTFOUND, "DeleteRule twice")
	name := "back"
	_, err = s.UpdateRule(t.Context(), org, gone.ID, vigil.RuleUpdate{Name: &name}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateRule after delete")
	list, total := mustListRules(t, s, org, vigil.Page{})
	if total != 1 || !slices.Equal(ruleIDs(list), ids(keep.ID)) {
		t.Errorf("rules after delete = %v (total %d), want [%s]", ruleIDs(list), total, keep.ID)
	}
}
