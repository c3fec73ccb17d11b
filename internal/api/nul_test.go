package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestNULRefused: a NUL character (U+0000) in any text a caller sends and
// Vigil stores is a 400 naming the field, on SQLite and on PostgreSQL
// alike (PostgreSQL's text and jsonb cannot hold it; SQLite could, and
// answered 201 where PostgreSQL answered 400 or 500). The API suite runs
// on both stores (VIGIL_TEST_API_STORE).
func TestNULRefused(t *testing.T) {
	e := newEnv(t)
	admin := e.subToken("org-a", "boss", "admin")
	inc := newIncident(t, e, admin, "high")
	obs := createObs(t, e, admin, map[string]any{"type": "network", "description": "flow"})["id"].(string)
	comment := must(t, call(t, e, "POST", "/v1/incidents/"+inc+"/comments", admin, map[string]any{"body": "looks real"}), http.StatusCreated).data()["id"].(string)
	rule := must(t, call(t, e, "POST", "/v1/classification-rules", admin, map[string]any{
		"name": "r", "priority": 1, "severity": "low", "conditions": map[string]any{}}), http.StatusCreated).data()["id"].(string)
	sup := createSuppression(t, e, admin, map[string]any{"name": "s", "reason": "why",
		"conditions": map[string]any{"all": []any{leaf("signal.detector", "eq", "ssh_bruteforce")}}})["id"].(string)
	role := must(t, call(t, e, "POST", "/v1/roles", admin, map[string]any{"name": "triage", "permissions": []string{"incidents:read"}}), http.StatusCreated).data()["id"].(string)

	const nul = "a\x00b"
	cond := func(op string, v any) map[string]any {
		return map[string]any{"field": "observation.description", "op": op, "value": v}
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"comment", "POST", "/v1/incidents/" + inc + "/comments", map[string]any{"body": nul}, "body"},
		{"comment edited", "PUT", "/v1/incidents/" + inc + "/comments/" + comment, map[string]any{"body": nul}, "body"},
		{"assignee", "PUT", "/v1/incidents/" + inc, map[string]any{"assignee": nul}, "assignee"},
		{"tag", "PUT", "/v1/incidents/" + inc, map[string]any{"tags": []string{"ok", nul}}, "tags[1]"},
		{"observation description", "POST", "/v1/observations", map[string]any{"type": "network", "description": nul}, "description"},
		{"observation node value", "POST", "/v1/observations", map[string]any{"type": "network", "description": "d",
			"nodes": []any{map[string]any{"type": "Host", "value": nul}}}, "nodes[0].value"},
		{"observation description updated", "PUT", "/v1/observations/" + obs, map[string]any{"description": nul}, "description"},
		{"rule name", "POST", "/v1/classification-rules", map[string]any{"name": nul, "priority": 1, "severity": "low"}, "name"},
		{"rule value", "POST", "/v1/classification-rules", map[string]any{"name": "n", "priority": 1, "severity": "low",
			"conditions": map[string]any{"all": []any{cond("eq", nul)}}}, "conditions.all[0].value"},
		{"rule value in a list", "PUT", "/v1/classification-rules/" + rule, map[string]any{"conditions": cond("in", []string{"x", nul})}, "conditions.value[1]"},
		{"rule name updated", "PUT", "/v1/classification-rules/" + rule, map[string]any{"name": nul}, "name"},
		{"rule preview value", "POST", "/v1/classification-rules/preview", map[string]any{"conditions": cond("eq", nul)}, "conditions.value"},
		{"suppression name", "POST", "/v1/suppressions", map[string]any{"name": nul, "conditions": map[string]any{}}, "name"},
		{"suppression reason", "PUT", "/v1/suppressions/" + sup, map[string]any{"reason": nul}, "reason"},
		{"suppression value", "PUT", "/v1/suppressions/" + sup, map[string]any{"conditions": leaf("signal.detector", "eq", nul)}, "conditions.value"},
		{"role name", "POST", "/v1/roles", map[string]any{"name": nul, "permissions": []string{}}, "name"},
		{"role name updated", "PUT", "/v1/roles/" + role, map[string]any{"name": nul}, "name"},
		{"API key name", "POST", "/v1/api-keys", map[string]any{"name": nul}, "name"},
		{"webhook url", "POST", "/v1/webhooks", map[string]any{"url": "https://203.0.113.10/" + nul, "event_types": []string{"incident.created"}}, "url"},
		{"a member name", "POST", "/v1/classification-rules", map[string]any{"name": "n", "priority": 1, "severity": "low",
			"conditions": map[string]any{"field": "event.x", "op": "eq", "value": map[string]any{nul: 1}}}, "conditions.value"},
		{"detection rule title (JSON)", "POST", "/v1/detection-rules", map[string]any{"title": nul, "logsource": map[string]any{"product": "linux"},
			"detection": map[string]any{"sel": map[string]any{"event.action": "x"}, "condition": "sel"}}, "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, e, tc.method, tc.path, admin, tc.body)
			wantError(t, r, http.StatusBadRequest, "")
			if f := r.field(); f != tc.field && !strings.HasPrefix(f, tc.field+".") {
				t.Errorf("field %q, want %q; %s", f, tc.field, r.Raw)
			}
			if !strings.Contains(string(r.Raw), "NUL") {
				t.Errorf("the reply does not say NUL is the problem: %s", r.Raw)
			}
		})
	}

	// A Sigma rule in YAML writes NUL as an escape; its title would be
	// stored and become its observations' title.
	yamlRule := func(title, value string) string {
		return "title: " + title + "\nlogsource:\n    product: linux\ndetection:\n    sel:\n        event.action: " + value + "\n    condition: sel\n"
	}
	for name, c := range map[string]struct{ text, field string }{
		"YAML title \\0":            {yamlRule(`"a\0b"`, "x"), "title"},
		"YAML title \\x00":          {yamlRule(`"a\x00b"`, "x"), "title"},
		"YAML detection value":      {yamlRule("t", `"a\u0000b"`), "detection.sel.event.action"},
		"a rule's text holding NUL": {yamlRule("t", "a\x00b"), "body"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rawCall(t, e, "POST", "/v1/detection-rules", map[string]string{"Authorization": "Bearer " + admin, "Content-Type": "application/yaml"}, []byte(c.text))
			wantError(t, r, http.StatusBadRequest, c.field)
			want := "rule." + c.field
			if c.field == "body" {
				want = "rule"
			}
			r = call(t, e, "POST", "/v1/detection-rules/test", admin, map[string]any{"rule": c.text, "lines": []any{}})
			wantError(t, r, http.StatusBadRequest, want)
		})
	}

	// Artifacts are evidence: their raw line and metadata keep NUL, on
	// both stores, and a rule can be tried on such a line.
	sign := e.token("org-a", "signals:write", "signals:read")
	ids := strs(postArtifacts(t, e, sign, map[string]any{"source": "auth", "raw": "sshd: user " + nul, "metadata": map[string]any{"k": nul, nul: "v"}})["ids"])
	got := must(t, call(t, e, "GET", "/v1/artifacts/"+ids[0], sign, nil), http.StatusOK).data()
	if m, _ := got["metadata"].(map[string]any); got["raw"] != "sshd: user "+nul || m["k"] != nul || m[nul] != "v" {
		t.Errorf("artifact stored as %v, want raw and metadata as sent", got)
	}
	must(t, call(t, e, "POST", "/v1/detection-rules/test", admin, map[string]any{"rule": yamlRule("t", "x"),
		"lines": []any{map[string]any{"source": "auth", "raw": "sshd: user " + nul}}}), http.StatusOK)
}
