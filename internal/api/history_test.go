package api_test

import (
	"net/http"
	"testing"
)

// TestIncidentHistory: what analysts do to an incident is in its history,
// in order, each change by the sub of the token that made it.
func TestIncidentHistory(t *testing.T) {
	e := newEnv(t)
	ana := e.token("org-a", "admin")
	o1 := createObs(t, e, ana, map[string]any{"type": "auth", "description": "first", "severity": "medium",
		"nodes": []any{map[string]any{"type": "IP", "value": "203.0.113.50"}}})
	inc := o1["incident_id"].(string)
	o2 := createObs(t, e, ana, map[string]any{"type": "auth", "description": "second", "severity": "high",
		"nodes": []any{map[string]any{"type": "IP", "value": "203.0.113.50"}}})
	if o2["incident_id"] != inc {
		t.Fatalf("second observation in %v, want %s", o2["incident_id"], inc)
	}
	must(t, call(t, e, "PUT", "/v1/incidents/"+inc+"/status", e.token("org-a", "incidents:write"), map[string]any{"status": 2}), http.StatusOK)

	r := must(t, call(t, e, "GET", "/v1/incidents/"+inc+"/history", e.token("org-a", "incidents:read"), nil), http.StatusOK)
	evs := items(t, r, "events")
	want := []struct{ typ, actor, obs string }{
		{"incident.created", "analyst@org-a", o1["id"].(string)},
		{"incident.grew", "analyst@org-a", o2["id"].(string)},
		{"incident.status_changed", "analyst@org-a", ""},
	}
	if len(evs) != len(want) || total(t, r) != len(want) {
		t.Fatalf("history %s, want %d events", r.Raw, len(want))
	}
	for i, w := range want {
		ev := evs[i]
		d, _ := ev["detail"].(map[string]any)
		if ev["type"] != w.typ || ev["actor"] != w.actor || ev["incident_id"] != inc || (w.obs != "" && d["observation_id"] != w.obs) {
			t.Errorf("event %d = %v, want %s by %s (observation %q)", i, ev, w.typ, w.actor, w.obs)
		}
	}
	if d := evs[2]["detail"].(map[string]any); d["from_status"] != float64(1) || d["to_status"] != float64(2) {
		t.Errorf("status change detail %v, want 1 → 2", d)
	}

	page := must(t, call(t, e, "GET", "/v1/incidents/"+inc+"/history?limit=1&offset=2", ana, nil), http.StatusOK)
	if got := items(t, page, "events"); len(got) != 1 || got[0]["type"] != "incident.status_changed" || total(t, page) != 3 {
		t.Errorf("page = %s", page.Raw)
	}
	for _, bad := range []struct{ query, field string }{{"limit=0", "limit"}, {"offset=-1", "offset"}, {"limit=x", "limit"}} {
		wantError(t, call(t, e, "GET", "/v1/incidents/"+inc+"/history?"+bad.query, ana, nil), http.StatusBadRequest, bad.field)
	}
	wantError(t, call(t, e, "GET", "/v1/incidents/nope/history", ana, nil), http.StatusBadRequest, "id")
	wantError(t, call(t, e, "GET", "/v1/incidents/"+inc+"/history", e.token("org-b", "admin"), nil), http.StatusNotFound, "")
	wantError(t, call(t, e, "GET", "/v1/incidents/"+inc+"/history", e.token("org-a", "signals:read"), nil), http.StatusForbidden, "")
}
