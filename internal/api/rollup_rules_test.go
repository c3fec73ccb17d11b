package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// Suppressions and classification rules apply to roll-ups as to any
// incident (issue 34): a rule's conditions see a roll-up's detection,
// sources and nodes, and are looked at again when a source leaves it; a
// suppression keeps a source's (or a signature's) alerts out of the
// roll-up and out of the count that forms it.

// rollupOf returns the one open incident of the org that is a roll-up,
// failing the test when there is not exactly one.
func rollupOf(t testing.TB, e *env, tok string) map[string]any {
	t.Helper()
	var found []map[string]any
	for id := range openIncidents(t, e, tok) {
		inc := must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
		if inc["rollup"] != nil {
			found = append(found, inc)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d roll-ups open, want 1: %v", len(found), found)
	}
	return found[0]
}

// classifiedBy returns the name of the rule that classified inc, "" when none.
func classifiedBy(inc map[string]any) string {
	by, _ := inc["classified_by"].(map[string]any)
	name, _ := by["name"].(string)
	return name
}

// sourcesOf returns the addresses of roll-up id's sources, heaviest first.
func sourcesOf(t testing.TB, e *env, tok, id string) []string {
	t.Helper()
	page := must(t, call(t, e, "GET", "/v1/incidents/"+id+"/sources?limit=100", tok, nil), http.StatusOK)
	var out []string
	for _, s := range items(t, page, "sources") {
		out = append(out, s["node"].(map[string]any)["value"].(string))
	}
	return out
}

func TestRollupClassifiedByRules(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "artifacts:write", "incidents:read")
	must(t, call(t, e, "PUT", "/v1/enrichment-settings", tok, map[string]any{"rollup_threshold": 3}), http.StatusOK)
	scanner := func(i int) string { return fmt.Sprint("198.51.100.", i) }
	// A roll-up of five sources or more of the SSH scan signature is
	// worth a look; any incident that names the watched scanner is
	// critical; a roll-up of a detector other than Suricata's is low.
	createRule(t, e, tok, map[string]any{"name": "wide ssh scan", "priority": 1, "severity": "high",
		"conditions": map[string]any{"all": []any{
			leaf("incident.rollup.name", "eq", "Suricata: "+sshScanSig),
			leaf("incident.rollup.detector", "eq", "suricata_alert"),
			leaf("incident.rollup.sources", "gte", 5),
		}}})
	createRule(t, e, tok, map[string]any{"name": "watched scanner", "priority": 2, "severity": "critical",
		"conditions": leaf("node.value", "eq", scanner(2))})
	createRule(t, e, tok, map[string]any{"name": "other roll-ups", "priority": 3, "severity": "low",
		"conditions": map[string]any{"all": []any{
			leaf("incident.rollup.detector", "exists", true),
			leaf("incident.rollup.detector", "ne", "suricata_alert"),
		}}})
	wantError(t, call(t, e, "POST", "/v1/classification-rules", tok, map[string]any{"name": "bad", "priority": 4, "severity": "low",
		"conditions": leaf("incident.rollup.sources", "contains", "5")}), http.StatusBadRequest, "conditions.op")

	now := time.Now().UTC().Truncate(time.Second)
	alert := func(i, at int) {
		postArtifacts(t, e, tok, eveAlert(now.Add(time.Duration(at)*time.Second), scanner(i), sshScanSID, sshScanSig, reconCat, 2))
	}
	for i := 1; i <= 4; i++ {
		alert(i, i)
	}
	r := rollupOf(t, e, tok)
	id := r["id"].(string)
	if r["severity"] != "critical" || classifiedBy(r) != "watched scanner" {
		t.Errorf("roll-up of 4 sources holding %s: %v by %q, want critical by the rule naming it", scanner(2), r["severity"], classifiedBy(r))
	}

	// The watched scanner brute-forces SSH: it leaves the roll-up for an
	// incident of its own, which the rule now classifies, and the
	// roll-up, no longer naming it, goes back to its computed severity.
	postArtifacts(t, e, tok, sshFailures(now.Add(100*time.Second), scanner(2), "bookworm-lab", 6)...)
	r = must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
	if rs := r["rollup"].(map[string]any); rs["sources"] != 3.0 {
		t.Fatalf("roll-up %v: want 3 sources once %s left", rs, scanner(2))
	}
	if r["severity"] != "medium" || classifiedBy(r) != "" {
		t.Errorf("roll-up without %s: %v by %q, want medium, its computed severity, by no rule", scanner(2), r["severity"], classifiedBy(r))
	}
	var own map[string]any
	for k := range openIncidents(t, e, tok) {
		if inc := must(t, call(t, e, "GET", "/v1/incidents/"+k, tok, nil), http.StatusOK).data(); inc["raised_by"] != nil {
			own = inc
		}
	}
	if own == nil || own["severity"] != "critical" || classifiedBy(own) != "watched scanner" {
		t.Errorf("the watched scanner's own incident %v: want critical by the rule naming it", own)
	}

	// Two more scanners: five sources, the wide-scan rule decides.
	alert(5, 200)
	alert(6, 201)
	r = must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
	if r["severity"] != "high" || classifiedBy(r) != "wide ssh scan" || r["rollup"].(map[string]any)["sources"] != 5.0 {
		t.Errorf("roll-up of %v sources: %v by %q, want high by the wide-scan rule", r["rollup"], r["severity"], classifiedBy(r))
	}
	// An analyst's observation on a watched scanner sets it apart too
	// (an analyst's medium observation weighs 100): the roll-up, down to
	// four sources, leaves the wide-scan rule.
	createRule(t, e, tok, map[string]any{"name": "watched scanner 4", "priority": 0, "severity": "critical",
		"conditions": leaf("node.value", "eq", scanner(4))})
	eventually(t, "the roll-up classified by the new rule", func() bool {
		return classifiedBy(must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()) == "watched scanner 4"
	})
	obs := createObs(t, e, e.token("org-a", "observations:write"), map[string]any{"type": "recon", "severity": "medium",
		"description": "known scanner probing the VPN", "nodes": []any{map[string]any{"type": "IP", "value": scanner(4)}}})
	if obs["incident_id"] == id {
		t.Fatalf("the analyst's observation joined the roll-up")
	}
	r = must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
	if r["rollup"].(map[string]any)["sources"] != 4.0 || r["severity"] != "medium" || classifiedBy(r) != "" {
		t.Errorf("roll-up of %v after %s left for the analyst's incident: %v by %q, want 4 sources, medium by no rule",
			r["rollup"], scanner(4), r["severity"], classifiedBy(r))
	}
	hist := must(t, call(t, e, "GET", "/v1/incidents/"+id+"/history?limit=200", tok, nil), http.StatusOK)
	var rulesSeen []string
	for _, ev := range items(t, hist, "events") {
		if ev["type"] == "incident.classified" {
			rule := ""
			if d, _ := ev["detail"].(map[string]any); d != nil {
				if r, _ := d["rule"].(map[string]any); r != nil {
					rule, _ = r["name"].(string)
				}
			}
			rulesSeen = append(rulesSeen, rule)
		}
	}
	if !slices.Contains(rulesSeen, "watched scanner") || !slices.Contains(rulesSeen, "") || !slices.Contains(rulesSeen, "wide ssh scan") {
		t.Errorf("roll-up's classifications %q: want the watched-scanner rule, back to none, the wide-scan rule", rulesSeen)
	}
}

// TestRollupRuleAfterTheFact: a rule written when the roll-up is already
// open classifies it on the background pass, as it does any open
// incident; its preview names it.
func TestRollupRuleAfterTheFact(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "artifacts:write", "incidents:read")
	must(t, call(t, e, "PUT", "/v1/enrichment-settings", tok, map[string]any{"rollup_threshold": 3}), http.StatusOK)
	now := time.Now().UTC().Truncate(time.Second)
	for i := 1; i <= 4; i++ {
		postArtifacts(t, e, tok, eveAlert(now.Add(time.Duration(i)*time.Second), fmt.Sprint("198.51.100.", i), sshScanSID, sshScanSig, reconCat, 2))
	}
	id := rollupOf(t, e, tok)["id"].(string)
	cond := map[string]any{"all": []any{leaf("incident.rollup.sources", "gte", 4), leaf("incident.title", "prefix", "Suricata: ET SCAN")}}
	prev := must(t, call(t, e, "POST", "/v1/classification-rules/preview", tok, map[string]any{"name": "scan noise", "priority": 1,
		"severity": "low", "conditions": cond}), http.StatusOK)
	if got := idsOf(items(t, prev, "matches")); !eqStrings(got, []string{id}) {
		t.Errorf("preview matches %v (%s), want the roll-up %s alone", got, prev.Raw, id)
	}
	createRule(t, e, tok, map[string]any{"name": "scan noise", "priority": 1, "severity": "low", "conditions": cond})
	eventually(t, "the roll-up classified low", func() bool {
		r := must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
		return r["severity"] == "low" && classifiedBy(r) == "scan noise"
	})
}

func TestRollupSuppressions(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "artifacts:write", "incidents:read", "artifacts:read")
	must(t, call(t, e, "PUT", "/v1/enrichment-settings", tok, map[string]any{"rollup_threshold": 3}), http.StatusOK)
	scanner := func(i int) string { return fmt.Sprint("198.51.100.", i) }
	now := time.Now().UTC().Truncate(time.Second)
	alert := func(i, at int) {
		postArtifacts(t, e, tok, eveAlert(now.Add(time.Duration(at)*time.Second), scanner(i), sshScanSID, sshScanSig, reconCat, 2))
	}
	// The org's own vulnerability scanner is no scanner to count.
	ours := createSuppression(t, e, tok, map[string]any{"name": "our scanner", "reason": "the weekly vulnerability scan",
		"conditions": map[string]any{"all": []any{leaf("signal.detector", "eq", "suricata_alert"), leaf("signal.source_ip", "eq", scanner(1))}}})
	for i := 1; i <= 3; i++ {
		alert(i, i)
	}
	if live := openIncidents(t, e, tok); len(live) != 2 {
		t.Fatalf("incidents %v: want one each for %s and %s, no roll-up (the suppressed scanner does not count towards 3)", live, scanner(2), scanner(3))
	}
	alert(4, 4)
	alert(1, 5)
	r := rollupOf(t, e, tok)
	id := r["id"].(string)
	if got := sourcesOf(t, e, tok, id); len(got) != 3 || slices.Contains(got, scanner(1)) {
		t.Errorf("roll-up's sources %v: want %s, %s, %s, never the suppressed one", got, scanner(2), scanner(3), scanner(4))
	}
	if rs := r["rollup"].(map[string]any); rs["sources"] != 3.0 || rs["count"] != 3.0 || r["artifact_count"] != 3.0 {
		t.Errorf("roll-up %v, %v artifacts: want 3 sources, 3 alerts", rs, r["artifact_count"])
	}
	if s := must(t, call(t, e, "GET", "/v1/suppressions/"+ours["id"].(string), tok, nil), http.StatusOK).data(); s["suppressed_count"] != 2.0 {
		t.Errorf("suppression swallowed %v signals, want 2", s["suppressed_count"])
	}

	// A suppression of the signature, written while the roll-up is open:
	// its next alerts join nothing and open nothing.
	createSuppression(t, e, tok, map[string]any{"name": "ssh scans", "reason": "noise at the edge",
		"conditions": leaf("signal.signature", "eq", sshScanSig)})
	alert(5, 10)
	alert(2, 11)
	r = must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
	if rs := r["rollup"].(map[string]any); rs["sources"] != 3.0 || rs["count"] != 3.0 || r["title"] != "Suricata: "+sshScanSig+" from 3 sources" {
		t.Errorf("roll-up %v titled %q after the signature's suppression: want 3 sources, 3 alerts, as before", rs, r["title"])
	}
	if live := openIncidents(t, e, tok); len(live) != 1 {
		t.Errorf("incidents %v: want the roll-up alone", live)
	}
}
