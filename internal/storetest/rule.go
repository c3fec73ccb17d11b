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
		{"AtMostMaxRules", testRuleCap},
		{"ReclassifyMarks", testReclassifyMarks},
		{"ReclassifyWritesChangingNothing", testReclassifyNoop},
		{"ReclassifyClaims", testReclassifyClaims},
	}
}

// testRuleCap: an org has at most vigil.MaxRules rules; others are not
// counted against it.
func testRuleCap(t *testing.T, s Store) {
	org := vigil.NewID()
	var last *vigil.Rule
	for i := range vigil.MaxRules {
		last = mustCreateRule(t, s, org, newRule("r", i, at(time.Duration(i))))
	}
	err := s.CreateRule(t.Context(), org, newRule("one too many", 0, at(time.Hour)))
	wantCode(t, err, vigil.ECONFLICT, "CreateRule beyond MaxRules")
	mustCreateRule(t, s, vigil.NewID(), newRule("another org's", 0, at(time.Hour)))
	if err := s.DeleteRule(t.Context(), org, last.ID); err != nil {
		t.Fatalf("DeleteRule: %v", err)
	}
	mustCreateRule(t, s, org, newRule("room again", 0, at(time.Hour)))
	if _, total := mustListRules(t, s, org, vigil.Page{Limit: 1}); total != vigil.MaxRules {
		t.Fatalf("%d rules, want %d", total, vigil.MaxRules)
	}
}

func mustPending(t *testing.T, s Store, org string) bool {
	t.Helper()
	p, err := s.ReclassifyPending(t.Context(), org)
	if err != nil {
		t.Fatalf("ReclassifyPending: %v", err)
	}
	return p
}

func mustClaim(t *testing.T, s Store, now, until time.Time) *vigil.Reclassification {
	t.Helper()
	c, err := s.ClaimReclassify(t.Context(), now, until)
	if err != nil {
		t.Fatalf("ClaimReclassify: %v", err)
	}
	return c
}

func mustRelease(t *testing.T, s Store, c *vigil.Reclassification, cursor string, done bool, now time.Time) {
	t.Helper()
	if err := s.ReleaseReclassify(t.Context(), *c, cursor, done, now); err != nil {
		t.Fatalf("ReleaseReclassify: %v", err)
	}
}

// testReclassifyMarks: the writes of enabled rules mark their org in their
// own transaction, several writes one mark; a pass released done removes
// it, unless a write came during the pass, which restarts it.
func testReclassifyMarks(t *testing.T, s Store) {
	org, other := vigil.NewID(), vigil.NewID()
	if mustPending(t, s, org) || mustClaim(t, s, at(0), at(time.Minute)) != nil {
		t.Fatal("a mark before any write")
	}
	r := mustCreateRule(t, s, org, newRule("r", 1, at(0)))
	prio := 2
	if _, err := s.UpdateRule(t.Context(), org, r.ID, vigil.RuleUpdate{Priority: &prio}, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	mustCreateRule(t, s, org, newRule("r2", 1, at(2*time.Second)))
	if !mustPending(t, s, org) || mustPending(t, s, other) {
		t.Fatal("pending: want org only")
	}
	c := mustClaim(t, s, at(time.Hour), at(time.Hour+time.Minute))
	if c == nil || c.OrgID != org || c.Cursor != "" {
		t.Fatalf("claim %+v, want org %s from the start", c, org)
	}
	if again := mustClaim(t, s, at(time.Hour), at(time.Hour+time.Minute)); again != nil {
		t.Fatalf("claimed twice: %+v", again)
	}
	// Part of the pass, then the rest: the cursor is kept.
	mustRelease(t, s, c, "incident-1", false, at(time.Hour+time.Second))
	c = mustClaim(t, s, at(time.Hour+2*time.Second), at(time.Hour+time.Minute))
	if c == nil || c.Cursor != "incident-1" {
		t.Fatalf("claim %+v, want cursor incident-1", c)
	}
	// A write during the pass: done does not remove the mark, and the
	// next pass starts over.
	if err := s.DeleteRule(t.Context(), org, r.ID); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, s, c, "incident-9", true, at(time.Hour+3*time.Second))
	if !mustPending(t, s, org) {
		t.Fatal("a write during the pass was lost")
	}
	c = mustClaim(t, s, at(time.Hour+4*time.Second), at(time.Hour+time.Minute))
	if c == nil || c.Cursor != "" {
		t.Fatalf("claim %+v, want the pass restarted", c)
	}
	mustRelease(t, s, c, "incident-9", true, at(time.Hour+5*time.Second))
	if mustPending(t, s, org) || mustClaim(t, s, at(2*time.Hour), at(3*time.Hour)) != nil {
		t.Fatal("a mark left after a whole pass")
	}
}

// testReclassifyNoop: writes that cannot change a classification do not
// mark: a disabled rule created, changed or deleted, an update changing
// nothing. Enabling or disabling a rule does.
func testReclassifyNoop(t *testing.T, s Store) {
	org := vigil.NewID()
	on := mustCreateRule(t, s, org, newRule("on", 1, at(0)))
	c := mustClaim(t, s, at(time.Hour), at(2*time.Hour))
	mustRelease(t, s, c, "", true, at(time.Hour))
	off := newRule("off", 2, at(0))
	off.Enabled = false
	mustCreateRule(t, s, org, off)
	sev := vigil.SeverityLow
	name := on.Name
	for _, step := range []struct {
		id string
		u  vigil.RuleUpdate
	}{{off.ID, vigil.RuleUpdate{Severity: &sev}}, {on.ID, vigil.RuleUpdate{Name: &name}}, {on.ID, vigil.RuleUpdate{}}} {
		if _, err := s.UpdateRule(t.Context(), org, step.id, step.u, at(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRule(t.Context(), org, off.ID); err != nil {
		t.Fatal(err)
	}
	if mustPending(t, s, org) {
		t.Fatal("pending after writes that change no classification")
	}
	disabled := false
	if _, err := s.UpdateRule(t.Context(), org, on.ID, vigil.RuleUpdate{Enabled: &disabled}, at(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !mustPending(t, s, org) {
		t.Fatal("disabling a rule marks nothing")
	}
}

// testReclassifyClaims: orgs take turns (a released mark goes to the end
// of the line), a claim past its expiry can be taken by another process,
// whose claim the first one's release then leaves alone.
func testReclassifyClaims(t *testing.T, s Store) {
	a, b := vigil.NewID(), vigil.NewID()
	mustCreateRule(t, s, a, newRule("a", 1, at(0)))
	mustCreateRule(t, s, b, newRule("b", 1, at(time.Second)))
	c := mustClaim(t, s, at(time.Hour), at(time.Hour+time.Minute))
	if c == nil || c.OrgID != a {
		t.Fatalf("claim %+v, want the older mark (org a)", c)
	}
	mustRelease(t, s, c, "x", false, at(time.Hour+time.Second))
	c = mustClaim(t, s, at(time.Hour+2*time.Second), at(time.Hour+time.Minute))
	if c == nil || c.OrgID != b {
		t.Fatalf("claim %+v, want org b, a having had its turn", c)
	}
	// b's claim expires (its process died); another process takes it.
	stale := c
	taken := mustClaim(t, s, at(time.Hour+2*time.Minute), at(time.Hour+4*time.Minute))
	if taken == nil || taken.OrgID != b {
		t.Fatalf("claim %+v, want b again (its claim expired)", taken)
	}
	mustRelease(t, s, stale, "stale", true, at(time.Hour+2*time.Minute+time.Second))
	if !mustPending(t, s, b) {
		t.Fatal("an expired claim's release removed the mark another process holds")
	}
	mustRelease(t, s, taken, "", true, at(time.Hour+3*time.Minute))
	if c := mustClaim(t, s, at(time.Hour+3*time.Minute), at(time.Hour+4*time.Minute)); c == nil || c.OrgID != a || c.Cursor != "x" {
		t.Fatalf("claim %+v, want a where it was", c)
	}
	if mustPending(t, s, b) {
		t.Fatal("b pending after its pass")
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
		// Updates that change nothing write nothing: updated_at stays.
		{vigil.RuleUpdate{}, nil},
		{vigil.RuleUpdate{Name: &name, Severity: &sev, Conditions: &cond}, nil},
	} {
		now := at(time.Duration(i+1) * time.Hour)
		if step.apply != nil {
			step.apply(&want)
			want.UpdatedAt = now
		}
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
