package api_test

import (
	"net/http"
	"testing"
)

// TestRulesClassifyIncidents checks classification end to end: the first
// matching enabled rule by priority sets an open incident's severity and
// is recorded; changing or deleting rules re-evaluates open incidents.
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
	// A rule created afterwards applies to open incidents at once.
	r1 := must(t, e.do("POST", "/v1/classification-rules", tok, map[string]any{
		"name": "auth is critical", "priority": 10, "severity": "critical",
		"conditions": map[string]any{"field": "observation.type", "op": "eq", "value": "auth"},
	}), http.StatusCreated).data()["id"].(string)
	got := incident()
	if got["severity"] != "critical" {
		t.Fatalf("severity = %v, want critical from the rule", got["severity"])
	}
	if by, _ := got["classified_by"].(map[string]any); by["id"] != r1 || by["name"] != "auth is critical" {
		t.Fatalf("classified_by = %v, want rule %s", got["classified_by"], r1)
	}
	// A rule with a lower priority number runs first.
	r2 := must(t, e.do("POST", "/v1/classification-rules", tok, map[string]any{
		"name": "everything medium", "priority": 1, "severity": "medium", "conditions": map[string]any{},
	}), http.StatusCreated).data()["id"].(string)
	if got := incident()["severity"]; got != "medium" {
		t.Fatalf("severity = %v, want medium from the priority-1 rule", got)
	}
	// Disabling it hands the decision back to the next rule.
	must(t, e.do("PUT", "/v1/classification-rules/"+r2, tok, map[string]any{"enabled": false}), http.StatusOK)
	if got := incident()["severity"]; got != "critical" {
		t.Fatalf("severity = %v after disabling the first rule, want critical", got)
	}
	// Without rules the computed severity comes back.
	must(t, e.do("DELETE", "/v1/classification-rules/"+r1, tok, nil), http.StatusOK)
	got = incident()
	if got["severity"] != "low" || got["classified_by"] != nil {
		t.Fatalf("after deleting the rules: severity %v classified_by %v, want low and null", got["severity"], got["classified_by"])
	}
}
