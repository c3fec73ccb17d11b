package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestMergedIncidentsLeaveTheQueue: an incident merged into another (an
// observation bridged their key nodes) is no longer listed or counted by
// status unless `merged` asks for it, still answers by id naming where it
// went, and takes no status: 409 naming the incident that took it.
func TestMergedIncidentsLeaveTheQueue(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	ip := func(v string) map[string]any { return map[string]any{"type": "IP", "value": v} }
	first := createObs(t, e, tok, map[string]any{"type": "network", "description": "scan", "nodes": []any{ip("203.0.113.9")}})
	second := createObs(t, e, tok, map[string]any{"type": "auth", "description": "guessing", "nodes": []any{ip("198.51.100.23")}})
	kept, gone := first["incident_id"].(string), second["incident_id"].(string)
	total := func(query string) int {
		t.Helper()
		return int(must(t, call(t, e, "GET", "/v1/incidents"+query, tok, nil), http.StatusOK).data()["total"].(float64))
	}
	if n := total("?status=1"); n != 2 {
		t.Fatalf("setup: %d New incidents, want 2", n)
	}
	bridge := createObs(t, e, tok, map[string]any{"type": "network", "description": "both", "nodes": []any{ip("203.0.113.9"), ip("198.51.100.23")}})
	if bridge["incident_id"] != kept {
		t.Fatalf("bridging observation joined %v, want the older incident %s", bridge["incident_id"], kept)
	}

	for query, want := range map[string][]string{
		"":                         {kept},
		"?status=1":                {kept},
		"?merged=exclude":          {kept},
		"?merged=include":          {gone, kept},
		"?merged=include&status=1": {gone, kept},
		"?merged=only":             {gone},
	} {
		r := must(t, call(t, e, "GET", "/v1/incidents"+query, tok, nil), http.StatusOK)
		var got []string
		for _, inc := range items(t, r, "incidents") {
			got = append(got, inc["id"].(string))
		}
		if !eqStrings(got, want) || r.data()["total"] != float64(len(want)) {
			t.Errorf("GET /v1/incidents%s = %v (total %v), want %v", query, got, r.data()["total"], want)
		}
	}

	inc := incidentOf(t, e, tok, gone)
	if inc["merged_into"] != kept || inc["status"] != float64(1) || inc["artifact_count"] != float64(0) || inc["node_count"] != float64(0) {
		t.Errorf("merged incident = %v, want merged_into %s", inc, kept)
	}
	for _, st := range []int{1, 3, 4} {
		r := call(t, e, "PUT", "/v1/incidents/"+gone+"/status", tok, map[string]any{"status": st})
		wantError(t, r, http.StatusConflict, "id")
		if msg, _ := r.Body["message"].(string); !strings.Contains(msg, kept) {
			t.Errorf("status %d of a merged incident: message %q does not name %s", st, msg, kept)
		}
	}
	if h := incidentOf(t, e, tok, gone)["history"].([]any); len(h) != 0 {
		t.Errorf("merged incident's status history = %v, want none", h)
	}
	wantError(t, call(t, e, "GET", "/v1/incidents?merged=yes", tok, nil), http.StatusBadRequest, "merged")
	// Another org sees none of it.
	if n := int(must(t, call(t, e, "GET", "/v1/incidents?merged=include", e.token("org-b", "admin"), nil), http.StatusOK).data()["total"].(float64)); n != 0 {
		t.Errorf("org-b lists %d incidents", n)
	}
}
