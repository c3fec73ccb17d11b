package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/rules"
)

// TestRulesClassifyIncidents checks classification end to end: the first
// matching enabled rule by priority sets an open incident's severity and
// is recorded; changing or deleting rules re-evaluates open incidents, in
// the background (each step polls for its effect).
func TestRulesClassifyIncidents(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	obs := must(t, e.do("POST", "/v1/observations", tok, map[string]any{"type": "auth", "description": "ssh guessing", "severity": "low"}), http.StatusCreated)
	inc := obs.data()["incident_id"].(string)
	incident := func() map[string]any {
		return must(t, e.do("GET", "/v1/incidents/"+inc, tok, nil), http.StatusOK).data()
	}
	if got := incident()["severity"]; got != "low" {
		t.Fatalf("severity before rules = %v, want low (computed)", got)
	}
	severity := func(want string) func() bool { return func() bool { return incident()["severity"] == want } }
	// A rule created afterwards applies to open incidents.
	r1 := must(t, e.do("POST", "/v1/classification-rules", tok, map[string]any{
		"name": "auth is critical", "priority": 10, "severity": "critical",
		"conditions": map[string]any{"field": "observation.type", "op": "eq", "value": "auth"},
	}), http.StatusCreated).data()["id"].(string)
	eventually(t, "severity critical from the rule", severity("critical"))
	got := incident()
	if by, _ := got["classified_by"].(map[string]any); by["id"] != r1 || by["name"] != "auth is critical" {
		t.Fatalf("classified_by = %v, want rule %s", got["classified_by"], r1)
	}
	// A rule with a lower priority number runs first.
	r2 := must(t, e.do("POST", "/v1/classification-rules", tok, map[string]any{
		"name": "everything medium", "priority": 1, "severity": "medium", "conditions": map[string]any{},
	}), http.StatusCreated).data()["id"].(string)
	eventually(t, "severity medium from the priority-1 rule", severity("medium"))
	// Disabling it hands the decision back to the next rule.
	must(t, e.do("PUT", "/v1/classification-rules/"+r2, tok, map[string]any{"enabled": false}), http.StatusOK)
	eventually(t, "severity critical after disabling the first rule", severity("critical"))
	// Without rules the computed severity comes back.
	must(t, e.do("DELETE", "/v1/classification-rules/"+r1, tok, nil), http.StatusOK)
	eventually(t, "computed severity back", severity("low"))
	got = incident()
	if got["severity"] != "low" || got["classified_by"] != nil {
		t.Fatalf("after deleting the rules: severity %v classified_by %v, want low and null", got["severity"], got["classified_by"])
	}
}

// TestRuleWriteLeavesReclassificationToTheBackground: a rule write used
// to classify every open incident again inside the request (2.8 s for a
// 111-byte write, 53 s for four at once with large incidents). It now
// returns at once, saying that re-classification is pending, with the
// incidents untouched; the mark is in the database, so that a process
// started afterwards (here: a Reclassifier over the same store, none
// having run) does the pass; several writes make one pass.
func TestRuleWriteLeavesReclassificationToTheBackground(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) { c.Reclassify = nil })
	tok := e.token("org-a", "admin")
	var incs []string
	for _, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
		o := must(t, e.do("POST", "/v1/observations", tok, map[string]any{"type": "auth", "description": "ssh guessing", "severity": "low",
			"nodes": []any{map[string]any{"type": "IP", "value": ip}}}), http.StatusCreated)
		incs = append(incs, o.data()["incident_id"].(string))
	}
	severity := func(id string) any {
		return must(t, e.do("GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()["severity"]
	}

	var ids []string
	for i, sev := range []string{"high", "medium", "critical"} {
		r := must(t, e.do("POST", "/v1/classification-rules", tok, map[string]any{
			"name": "rule " + sev, "priority": 10 - i, "severity": sev}), http.StatusCreated)
		if r.data()["reclassification_pending"] != true {
			t.Fatalf("create: reclassification_pending %v, want true", r.data()["reclassification_pending"])
		}
		ids = append(ids, r.data()["id"].(string))
	}
	must(t, e.do("PUT", "/v1/classification-rules/"+ids[0], tok, map[string]any{"priority": 0}), http.StatusOK)
	for _, id := range incs {
		if got := severity(id); got != "low" {
			t.Fatalf("incident severity %v right after the writes, want low (re-classification is not the request's)", got)
		}
	}

	rc := rules.NewReclassifier(e.store, nil)
	if worked, err := rc.Step(context.Background()); err != nil || !worked {
		t.Fatalf("Step: worked %v, %v; want one pass", worked, err)
	}
	if worked, err := rc.Step(context.Background()); err != nil || worked {
		t.Fatalf("second Step: worked %v, %v; want nothing left (the writes made one pass)", worked, err)
	}
	for _, id := range incs {
		if got := severity(id); got != "high" {
			t.Fatalf("incident severity %v after the pass, want high (the priority-0 rule)", got)
		}
	}
	if r := must(t, e.do("GET", "/v1/classification-rules/"+ids[0], tok, nil), http.StatusOK); r.data()["reclassification_pending"] != nil {
		t.Fatalf("a read shows reclassification_pending")
	}
}

// TestRuleWriteChangingNothing: a write that cannot change any
// classification does no work: an update to the same values writes
// nothing (updated_at stays) and marks nothing, nor does a disabled rule
// created, updated or deleted.
func TestRuleWriteChangingNothing(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) { c.Reclassify = nil })
	tok := e.token("org-a", "admin")
	pending := func() bool {
		p, err := e.store.ReclassifyPending(context.Background(), "org-a")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	off := must(t, e.do("POST", "/v1/classification-rules", tok, map[string]any{
		"name": "off", "priority": 1, "severity": "high", "enabled": false}), http.StatusCreated).data()
	if off["reclassification_pending"] != false || pending() {
		t.Fatalf("a disabled rule created: pending %v / %v, want false", off["reclassification_pending"], pending())
	}
	id := off["id"].(string)
	up := must(t, e.do("PUT", "/v1/classification-rules/"+id, tok, map[string]any{"severity": "low", "name": "still off"}), http.StatusOK).data()
	if up["reclassification_pending"] != false || pending() {
		t.Fatalf("a disabled rule changed: pending, want not")
	}
	same := must(t, e.do("PUT", "/v1/classification-rules/"+id, tok, map[string]any{"severity": "low", "enabled": false, "priority": 1}), http.StatusOK).data()
	if same["updated_at"] != up["updated_at"] {
		t.Fatalf("an update changing nothing moved updated_at from %v to %v", up["updated_at"], same["updated_at"])
	}
	must(t, e.do("DELETE", "/v1/classification-rules/"+id, tok, nil), http.StatusOK)
	if pending() {
		t.Fatalf("a disabled rule deleted: pending, want not")
	}
	on := must(t, e.do("POST", "/v1/classification-rules", tok, map[string]any{"name": "on", "priority": 1, "severity": "high"}), http.StatusCreated).data()
	if on["reclassification_pending"] != true || !pending() {
		t.Fatalf("an enabled rule created: not pending")
	}
}
