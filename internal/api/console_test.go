package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
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

// TestRulePreviewClosed: a preview also says which recently closed
// incidents the rule would have matched, apart from the open ones it
// would classify, and what it covered: the incidents closed in the last
// 30 days, not before.
func TestRulePreviewClosed(t *testing.T) {
	var ago atomic.Int64 // how far back the server's clock is
	ago.Store(int64(40 * 24 * time.Hour))
	e := newEnvWith(t, func(c *api.Config) { c.Now = func() time.Time { return time.Now().Add(-time.Duration(ago.Load())) } })
	tok := e.token("org-a", "admin")
	auth := map[string]any{"type": "auth", "description": "Password guessing on web-01", "severity": "medium"}
	long := createObs(t, e, tok, auth)["incident_id"].(string)
	must(t, call(t, e, "PUT", "/v1/incidents/"+long+"/status", tok, map[string]any{"status": 3}), http.StatusOK) // 40 days ago
	ago.Store(0)
	open := createObs(t, e, tok, auth)["incident_id"].(string)
	var recent []string
	for _, st := range []int{3, 4, 5} {
		id := createObs(t, e, tok, auth)["incident_id"].(string)
		must(t, call(t, e, "PUT", "/v1/incidents/"+id+"/status", tok, map[string]any{"status": st}), http.StatusOK)
		recent = append(recent, id)
	}
	net := createObs(t, e, tok, map[string]any{"type": "network", "description": "Port scan", "severity": "low"})["incident_id"].(string)
	must(t, call(t, e, "PUT", "/v1/incidents/"+net+"/status", tok, map[string]any{"status": 4}), http.StatusOK)

	d := must(t, call(t, e, "POST", "/v1/classification-rules/preview", tok, map[string]any{"severity": "high",
		"conditions": map[string]any{"field": "observation.type", "op": "eq", "value": "auth"}}), http.StatusOK).data()
	if ids := idsOf(items(t, must(t, call(t, e, "GET", "/v1/incidents?status=1", tok, nil), http.StatusOK), "incidents")); len(ids) != 1 || ids[0] != open {
		t.Fatalf("setup: open incidents %v", ids)
	}
	if ms := d["matches"].([]any); len(ms) != 1 || ms[0].(map[string]any)["id"] != open || d["open_incidents"] != float64(1) {
		t.Errorf("open matches = %v (of %v open), want the one open incident", ms, d["open_incidents"])
	}
	c, _ := d["closed"].(map[string]any)
	if c == nil {
		t.Fatalf("the preview says nothing of closed incidents: %s", d)
	}
	got := []string{}
	for _, m := range c["matches"].([]any) {
		mm := m.(map[string]any)
		got = append(got, mm["id"].(string))
		if mm["decides"] != true || mm["status"] == float64(1) {
			t.Errorf("closed match %v", mm)
		}
	}
	slices.Sort(got)
	slices.Sort(recent)
	if !slices.Equal(got, recent) || c["matched"] != float64(3) || c["scanned"] != float64(4) || c["closed_incidents"] != float64(4) {
		t.Errorf("closed = %v; want the 3 auth incidents closed lately (%v) of the 4 closed within 30 days, not the one closed 40 days ago (%s)", c, recent, long)
	}
	since := timeOf(t, c["since"], "closed.since")
	if d := time.Since(since) - 30*24*time.Hour; d < -time.Minute || d > time.Minute {
		t.Errorf("closed.since = %v, want 30 days ago", since)
	}
}
