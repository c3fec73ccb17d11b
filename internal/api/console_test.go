package api_test

import (
	"net/http"
	"net/url"
	"testing"
)

// The additions the console reads through: /v1/me, incident search and
// order, and the rule preview.

func TestMe(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	createRole(t, e, admin, "triage", "incidents:write", "signals:read")
	// A token with a role and no permission of its own: /v1/me needs none.
	r := must(t, call(t, e, "GET", "/v1/me", e.roleToken("org-a", "triage", "missing"), nil), http.StatusOK).data()
	if r["org_id"] != "org-a" || r["subject"] != "analyst@org-a" {
		t.Errorf("me = %v", r)
	}
	if got := strs(r["permissions"]); !eqStrings(got, []string{"incidents:write", "signals:read"}) {
		t.Errorf("permissions = %v, want the role's", got)
	}
	if got := strs(r["roles"]); !eqStrings(got, []string{"triage", "missing"}) {
		t.Errorf("roles = %v", got)
	}
	if r["expires_at"] == nil {
		t.Errorf("no expires_at: %v", r)
	}
	// The same role name in another org grants nothing there.
	if got := strs(must(t, call(t, e, "GET", "/v1/me", e.roleToken("org-b", "triage"), nil), http.StatusOK).data()["permissions"]); len(got) != 0 {
		t.Errorf("org-b permissions = %v, want none", got)
	}
	wantError(t, call(t, e, "GET", "/v1/me", "not-a-jwt", nil), http.StatusUnauthorized, "")
}

func TestIncidentListTextAndSort(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	low := createObs(t, e, tok, map[string]any{"type": "auth", "description": "Password guessing on web-01", "severity": "low"})["incident_id"].(string)
	crit := createObs(t, e, tok, map[string]any{"type": "malware", "description": "Beacon to evil.example", "severity": "critical"})["incident_id"].(string)
	med := createObs(t, e, tok, map[string]any{"type": "network", "description": "100% of ports scanned", "severity": "medium"})["incident_id"].(string)
	newIncident(t, e, e.token("org-b", "admin"), "critical") // another org's: never listed
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{med, crit, low}},
		{"sort=created", []string{med, crit, low}},
		{"sort=severity", []string{crit, med, low}},
		{"sort=last_activity", []string{med, crit, low}},
		{"q=PASSWORD", []string{low}},
		{"q=" + url.QueryEscape("100%"), []string{med}},
		{"q=" + url.QueryEscape("s_s"), []string{}},
		{"q=web&severity=high", []string{}},
	} {
		r := must(t, call(t, e, "GET", "/v1/incidents?"+tc.query, tok, nil), http.StatusOK)
		if got := idsOf(items(t, r, "incidents")); !eqStrings(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	wantError(t, call(t, e, "GET", "/v1/incidents?sort=oldest", tok, nil), http.StatusBadRequest, "sort")
	wantError(t, call(t, e, "GET", "/v1/incidents?q=a%00b", tok, nil), http.StatusBadRequest, "q")
}

func TestRulePreview(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	auth := createObs(t, e, tok, map[string]any{"type": "auth", "description": "Password guessing on web-01", "severity": "medium"})["incident_id"].(string)
	net := createObs(t, e, tok, map[string]any{"type": "network", "description": "Port scan", "severity": "low"})["incident_id"].(string)
	closed := createObs(t, e, tok, map[string]any{"type": "auth", "description": "Old guessing", "severity": "medium"})["incident_id"].(string)
	must(t, call(t, e, "PUT", "/v1/incidents/"+closed+"/status", tok, map[string]any{"status": 4}), http.StatusOK)
	newIncident(t, e, e.token("org-b", "admin"), "critical")

	preview := func(tok string, body map[string]any) map[string]any {
		t.Helper()
		return must(t, call(t, e, "POST", "/v1/classification-rules/preview", tok, body), http.StatusOK).data()
	}
	isAuth := map[string]any{"field": "observation.type", "op": "eq", "value": "auth"}
	d := preview(tok, map[string]any{"severity": "critical", "conditions": isAuth})
	ms := d["matches"].([]any)
	if len(ms) != 1 || d["matched"] != float64(1) || d["scanned"] != float64(2) || d["open_incidents"] != float64(2) {
		t.Fatalf("preview = %v, want the one open auth incident of 2 open", d)
	}
	if m := ms[0].(map[string]any); m["id"] != auth || m["decides"] != true || m["shadowed_by"] != nil {
		t.Errorf("match = %v", m)
	}
	// An earlier rule that matches everything decides instead; the preview
	// names it. Editing that rule itself (id) replaces it.
	all := createRule(t, e, tok, map[string]any{"name": "everything", "priority": 1, "severity": "low"})
	m := preview(tok, map[string]any{"priority": 5, "conditions": isAuth})["matches"].([]any)[0].(map[string]any)
	if m["decides"] != false || m["shadowed_by"].(map[string]any)["name"] != "everything" {
		t.Errorf("shadowed match = %v", m)
	}
	d = preview(tok, map[string]any{"id": all["id"], "priority": 1, "conditions": map[string]any{"field": "observation.type", "op": "eq", "value": "network"}})
	if ms := d["matches"].([]any); len(ms) != 1 || ms[0].(map[string]any)["id"] != net || ms[0].(map[string]any)["decides"] != true {
		t.Errorf("edited rule preview = %v", d)
	}
	// Validation names the field; the permission is incidents:read.
	wantError(t, call(t, e, "POST", "/v1/classification-rules/preview", tok, map[string]any{"conditions": map[string]any{"all": []any{map[string]any{"field": "observation.type", "op": "like", "value": "x"}}}}), http.StatusBadRequest, "conditions.all[0].op")
	wantError(t, call(t, e, "POST", "/v1/classification-rules/preview", e.token("org-a", "signals:manage"), map[string]any{}), http.StatusForbidden, "")
	if d := preview(e.token("org-a", "incidents:read"), map[string]any{}); d["matched"] != float64(2) {
		t.Errorf("empty conditions matched %v, want both open incidents", d["matched"])
	}
}
