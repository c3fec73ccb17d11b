package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
)

// auditCase is a write route's request and the entry it must leave: the
// resource, and one field the write changes with its JSON before and
// after ("" where that side is null: a creation, a deletion; "*" any
// value but null).
type auditCase struct {
	status               int
	typ                  string
	field, before, after string
	// setup returns the path (after /v1), the body, and the resource id
	// ("" when the response's data names it: a creation).
	setup func(t testing.TB, e *env, admin string) (path string, body any, id string)
}

// at returns a setup whose resource was made by mk (its id the path's
// last element but suffix).
func at(mk func(testing.TB, *env, string) (string, any), suffix string) func(testing.TB, *env, string) (string, any, string) {
	return func(t testing.TB, e *env, admin string) (string, any, string) {
		p, body := mk(t, e, admin)
		base := strings.TrimSuffix(p, suffix)
		return p, body, base[strings.LastIndexByte(base, '/')+1:]
	}
}

func create(path string, body any) func(testing.TB, *env, string) (string, any, string) {
	return func(testing.TB, *env, string) (string, any, string) { return path, body, "" }
}

func withSuppression(suffix string, body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		s := createSuppression(t, e, admin, map[string]any{"name": uniq("sup"), "conditions": leaf("signal.source_ip", "eq", "203.0.113.7")})
		return "/suppressions/" + s["id"].(string) + suffix, body
	}
}

const sigmaJSON = `{"title": "Onion look-ups", "logsource": {"category": "dns"}, "detection": {"s": {"query|endswith": ".onion"}, "condition": "s"}}`

func withDetectionRule(suffix string, body any, enabled bool) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		r := postRule(t, e, admin, sigmaJSON)
		id := r["id"].(string)
		if !enabled {
			must(t, call(t, e, "POST", "/v1/detection-rules/"+id+"/disable", admin, nil), http.StatusOK)
		}
		return "/detection-rules/" + id + suffix, body
	}
}

// withStarterRule names a starter rule the org has not switched yet, or
// has switched on (on).
func withStarterRule(suffix string, on bool) func(testing.TB, *env, string) (string, any, string) {
	return func(t testing.TB, e *env, admin string) (string, any, string) {
		for _, r := range items(t, must(t, call(t, e, "GET", "/v1/starter-rules?limit=1000", admin, nil), http.StatusOK), "starter_rules") {
			id := r["id"].(string)
			if len(auditEntries(t, e, admin, "resource_type=starter_rule&resource_id="+url.QueryEscape(id))) > 0 {
				continue
			}
			if on {
				must(t, call(t, e, "POST", "/v1/starter-rules/"+id+"/enable", admin, nil), http.StatusOK)
			}
			return "/starter-rules/" + id + suffix, nil, id
		}
		t.Fatal("no starter rule left to switch")
		return "", nil, ""
	}
}

func withWebhook(body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		return "/webhooks/" + createWebhook(t, e, admin, hookBody)["id"].(string), body
	}
}

func withAPIKey(t testing.TB, e *env, admin string) (string, any) {
	return "/api-keys/" + createKey(t, e, admin, uniq("key"))["id"].(string), nil
}

// auditCases are the write routes that are audited, by "METHOD /v1/path".
var auditCases = map[string]auditCase{
	"POST /v1/observations": {201, "observation", "description", "", `"posted"`,
		create("/observations", map[string]any{"type": "auth", "description": "posted"})},
	"PUT /v1/observations/{id}": {200, "observation", "description", `"fixture"`, `"edited"`,
		at(withObs("", map[string]any{"description": "edited"}), "")},
	"DELETE /v1/observations/{id}": {200, "observation", "description", `"fixture"`, "", at(withObs("", nil), "")},
	"PUT /v1/incidents/{id}/status": {200, "incident", "status", "1", "2",
		at(withIncident("/status", map[string]any{"status": 2}), "/status")},
	"PUT /v1/incidents/{id}": {200, "incident", "assignee", `""`, `"bo"`, at(withIncident("", map[string]any{"assignee": "bo"}), "")},
	"POST /v1/incidents/{id}/comments": {201, "comment", "body", "", `"seen"`, func(t testing.TB, e *env, admin string) (string, any, string) {
		p, b := withIncident("/comments", map[string]any{"body": "seen"})(t, e, admin)
		return p, b, ""
	}},
	"PUT /v1/incidents/{id}/comments/{comment}": {200, "comment", "body", `"fixture"`, `"edited"`,
		at(withComment(map[string]any{"body": "edited"}), "")},
	"DELETE /v1/incidents/{id}/comments/{comment}": {200, "comment", "body", `"fixture"`, "", at(withComment(nil), "")},
	"POST /v1/classification-rules": {201, "classification_rule", "severity", "", `"high"`,
		create("/classification-rules", map[string]any{"name": "audited", "priority": 1, "severity": "high"})},
	"PUT /v1/classification-rules/{id}":    {200, "classification_rule", "priority", "3", "7", at(withRule(map[string]any{"priority": 7}), "")},
	"DELETE /v1/classification-rules/{id}": {200, "classification_rule", "priority", "3", "", at(withRule(nil), "")},
	"POST /v1/suppressions": {201, "suppression", "name", "", `"scanner"`,
		create("/suppressions", map[string]any{"name": "scanner", "conditions": leaf("signal.source_ip", "eq", "203.0.113.9")})},
	"PUT /v1/suppressions/{id}":    {200, "suppression", "enabled", "true", "false", at(withSuppression("", map[string]any{"enabled": false}), "")},
	"DELETE /v1/suppressions/{id}": {200, "suppression", "enabled", "true", "", at(withSuppression("", nil), "")},
	"POST /v1/detection-rules":     {201, "detection_rule", "title", "", `"Onion look-ups"`, create("/detection-rules", json.RawMessage(sigmaJSON))},
	"PUT /v1/detection-rules/{id}": {200, "detection_rule", "title", `"Onion look-ups"`, `"Onion look-ups, edited"`,
		at(withDetectionRule("", json.RawMessage(strings.Replace(sigmaJSON, `look-ups"`, `look-ups, edited"`, 1)), true), "")},
	"DELETE /v1/detection-rules/{id}": {200, "detection_rule", "title", `"Onion look-ups"`, "", at(withDetectionRule("", nil, true), "")},
	"POST /v1/detection-rules/{id}/enable": {200, "detection_rule", "enabled", "false", "true",
		at(withDetectionRule("/enable", nil, false), "/enable")},
	"POST /v1/detection-rules/{id}/disable": {200, "detection_rule", "enabled", "true", "false",
		at(withDetectionRule("/disable", nil, true), "/disable")},
	"POST /v1/starter-rules/{id}/enable":  {200, "starter_rule", "enabled", "null", "true", withStarterRule("/enable", false)},
	"POST /v1/starter-rules/{id}/disable": {200, "starter_rule", "enabled", "true", "false", withStarterRule("/disable", true)},
	// The receiver's URL is recorded without its credentials, and the
	// signing secret never (the test reads the whole log for both).
	"POST /v1/webhooks": {201, "webhook", "url", "", `"https://203.0.113.10/hook?key=****"`,
		create("/webhooks", map[string]any{"url": "https://203.0.113.10/hook?key=query-cred", "event_types": []string{"incident.created"},
			"secret": "whsec-audit-secret-0123456789"})},
	"PUT /v1/webhooks/{id}":    {200, "webhook", "enabled", "true", "false", at(withWebhook(map[string]any{"enabled": false}), "")},
	"DELETE /v1/webhooks/{id}": {200, "webhook", "event_types", `["incident.created"]`, "", at(withWebhook(nil), "")},
	"POST /v1/roles":           {201, "role", "name", "", `"auditors"`, create("/roles", map[string]any{"name": "auditors", "permissions": []string{"admin"}})},
	"PUT /v1/roles/{id}": {200, "role", "permissions", `["incidents:read"]`, `["signals:write"]`,
		at(withRole(map[string]any{"permissions": []string{"signals:write"}}), "")},
	"DELETE /v1/roles/{id}":    {200, "role", "permissions", `["incidents:read"]`, "", at(withRole(nil), "")},
	"POST /v1/api-keys":        {201, "api_key", "name", "", `"shipper"`, create("/api-keys", map[string]any{"name": "shipper"})},
	"DELETE /v1/api-keys/{id}": {200, "api_key", "revoked_at", "null", "*", at(withAPIKey, "")},
	"PUT /v1/enrichment-settings": {200, "enrichment_settings", "rate_limit", "60", "30", func(testing.TB, *env, string) (string, any, string) {
		return "/enrichment-settings", map[string]any{"rate_limit": 30}, "org-a"
	}},
}

// notAudited are the write routes that change no record an analyst made,
// and why; each is called and must leave no entry.
var notAudited = map[string]string{
	"POST /v1/artifacts":                    "ingest: counted by metrics, not audited (docs/security.md)",
	"POST /v1/ingest/elastic/_bulk":         "ingest",
	"PUT /v1/ingest/elastic/_bulk":          "ingest",
	"POST /v1/ingest/elastic/{index}/_bulk": "ingest",
	"PUT /v1/ingest/elastic/{index}/_bulk":  "ingest",
	"POST /v1/classification-rules/preview": "reads: which incidents a rule would match",
	"POST /v1/detection-rules/test":         "reads: what a rule would match",
}

// writeRoutes returns every write route of the router's table and of the
// OpenAPI document the server serves.
func writeRoutes(t *testing.T, e *env) []string {
	t.Helper()
	set := map[string]bool{}
	for _, r := range api.RouteTable(e.router()) {
		if !strings.HasPrefix(r, "GET ") {
			set[r] = true
		}
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(must(t, e.do("GET", "/v1/openapi.json", "", nil), http.StatusOK).Raw, &doc); err != nil {
		t.Fatal(err)
	}
	for p, item := range doc.Paths {
		for m := range item {
			if m == "post" || m == "put" || m == "delete" || m == "patch" {
				set[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	for r := range notAudited {
		set[r] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// auditEntries returns org's entries matching query, newest first.
func auditEntries(t testing.TB, e *env, admin, query string) []map[string]any {
	t.Helper()
	return items(t, must(t, call(t, e, "GET", "/v1/audit?limit=1000&"+query, admin, nil), http.StatusOK), "entries")
}

// TestAuditEveryWriteRoute calls every write route of the router and of
// the OpenAPI document and reads the entry it left: a write route with
// neither a case here nor a reason not to be audited fails.
func TestAuditEveryWriteRoute(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	var secrets []string
	for _, route := range writeRoutes(t, e) {
		t.Run(route, func(t *testing.T) {
			method, pattern, _ := strings.Cut(route, " ")
			if why, ok := notAudited[route]; ok {
				before := len(auditEntries(t, e, admin, ""))
				switch route {
				case "POST /v1/artifacts":
					postArtifacts(t, e, admin, map[string]any{"source": "custom", "raw": "hello"})
				case "POST /v1/classification-rules/preview":
					must(t, call(t, e, method, pattern, admin, map[string]any{"name": "p", "priority": 1, "severity": "low"}), http.StatusOK)
				case "POST /v1/detection-rules/test":
					must(t, call(t, e, method, pattern, admin, map[string]any{"rule": sigmaJSON,
						"lines": []any{map[string]any{"source": "dns", "raw": "query: a.onion"}}}), http.StatusOK)
				default: // the Elasticsearch-compatible bulk endpoint
					p := strings.Replace(pattern, "{index}", "logs", 1)
					must(t, e.as(t).do(method, p, admin, "{\"index\":{}}\n{\"message\":\"hello\"}\n"), http.StatusOK)
				}
				if after := len(auditEntries(t, e, admin, "")); after != before {
					t.Errorf("%s left %d entries; it is not audited (%s)", route, after-before, why)
				}
				return
			}
			c, ok := auditCases[route]
			if !ok {
				t.Fatalf("write route %s has no audit case: record its changes (vigil.Audit in the store's transaction) and add it here", route)
			}
			path, body, id := c.setup(t, e, admin)
			before := len(auditEntries(t, e, admin, ""))
			r := call(t, e, method, "/v1"+path, admin, body)
			if r.Status != c.status {
				t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, c.status, r.Raw)
			}
			if id == "" {
				id, _ = r.data()["id"].(string)
			}
			if k, _ := r.data()["key"].(string); k != "" {
				secrets = append(secrets, k, r.data()["encoded"].(string))
			}
			if k, _ := r.data()["secret"].(string); k != "" {
				secrets = append(secrets, k, "query-cred")
			}
			all := auditEntries(t, e, admin, "")
			if len(all) != before+1 {
				t.Fatalf("%s left %d entries, want 1", route, len(all)-before)
			}
			got := all[0]
			want := map[string]any{"actor": "analyst@org-a", "org_id": "org-a", "method": method, "path": "/v1" + path,
				"resource_type": c.typ, "resource_id": id}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("entry %s = %v, want %v (entry %v)", k, got[k], v, got)
				}
			}
			for side, exp := range map[string]string{"before": c.before, "after": c.after} {
				if exp == "" {
					if got[side] != nil {
						t.Errorf("%s = %v, want null", side, got[side])
					}
					continue
				}
				obj, _ := got[side].(map[string]any)
				b, _ := json.Marshal(obj[c.field])
				if v, present := obj[c.field]; !present || string(b) != exp && (exp != "*" || v == nil) {
					t.Errorf("%s.%s = %s, want %s (entry %v)", side, c.field, b, exp, got)
				}
			}
			if filtered := auditEntries(t, e, admin, "resource_type="+c.typ+"&resource_id="+url.QueryEscape(id)); len(filtered) == 0 ||
				filtered[0]["id"] != got["id"] {
				t.Errorf("filter by resource: %v, want the entry first", filtered)
			}
		})
	}
	// No entry holds a secret: the API keys' keys, the hashes kept of
	// them, or the bearer token.
	raw := string(must(t, call(t, e, "GET", "/v1/audit?limit=1000", admin, nil), http.StatusOK).Raw)
	if len(secrets) < 4 {
		t.Fatalf("secrets %d: no API key or webhook was created", len(secrets))
	}
	for _, s := range append(secrets, admin, "hash") {
		if strings.Contains(raw, s) {
			t.Errorf("the audit log holds a secret (%.12s…)", s)
		}
	}
}

// TestAuditLog: GET /v1/audit filters, pages newest first, refuses bad
// filters naming the field, shows an org only its own entries, and takes
// no writes.
func TestAuditLog(t *testing.T) {
	e := newEnv(t)
	a, b := e.token("org-a", "admin"), e.token("org-b", "admin")
	start := time.Now().UTC()
	role := createRole(t, e, a, "triage", "incidents:read")
	must(t, call(t, e, "PUT", "/v1/roles/"+role["id"].(string), a, map[string]any{"name": "tier1"}), http.StatusOK)
	createRule(t, e, a, map[string]any{"name": "r", "priority": 1, "severity": "low"})
	mid := time.Now().UTC()
	tagger := e.token("org-a", "incidents:write", "observations:write")
	inc := newIncident(t, e, tagger, "low")
	must(t, call(t, e, "PUT", "/v1/incidents/"+inc, tagger, map[string]any{"tags": []string{"c2"}}), http.StatusOK)

	all := auditEntries(t, e, a, "")
	if len(all) != 5 {
		t.Fatalf("%d entries, want 5: %v", len(all), all)
	}
	types := []string{}
	for _, x := range all {
		types = append(types, x["resource_type"].(string))
	}
	if want := []string{"incident", "observation", "classification_rule", "role", "role"}; !slices.Equal(types, want) {
		t.Errorf("entries %v, want newest first %v", types, want)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"actor=analyst@org-a", 5},
		{"actor=nobody", 0},
		{"resource_type=role", 2},
		{"resource_type=role&resource_id=" + role["id"].(string), 2},
		{"resource_id=" + inc, 1},
		{"from=" + url.QueryEscape(ts(mid)), 2},
		{"to=" + url.QueryEscape(ts(mid)), 3},
		{"from=" + url.QueryEscape(ts(start)) + "&to=" + url.QueryEscape(ts(mid)), 3},
	} {
		if got := auditEntries(t, e, a, tc.query); len(got) != tc.want {
			t.Errorf("%s: %d entries, want %d", tc.query, len(got), tc.want)
		}
	}
	page := must(t, call(t, e, "GET", "/v1/audit?limit=2&offset=1", a, nil), http.StatusOK)
	if got := items(t, page, "entries"); total(t, page) != 5 || len(got) != 2 || got[0]["id"] != all[1]["id"] || got[1]["id"] != all[2]["id"] {
		t.Errorf("page limit 2 offset 1: %v of %d, want the 2nd and 3rd of 5", got, total(t, page))
	}
	update := all[3] // the rename
	if bf, af := update["before"].(map[string]any), update["after"].(map[string]any); len(bf) != 1 || bf["name"] != "triage" || af["name"] != "tier1" {
		t.Errorf("rename entry before %v after %v, want only the name", update["before"], update["after"])
	}

	// Org b's admin sees none of org a's entries, whatever the filter.
	for _, q := range []string{"", "resource_id=" + inc, "actor=analyst@org-a"} {
		if got := auditEntries(t, e, b, q); len(got) != 0 {
			t.Errorf("org b lists %d of org a's entries (%q)", len(got), q)
		}
	}
	// Bad filters: 400 naming the field.
	for _, tc := range []struct{ query, field string }{
		{"resource_type=bogus", "resource_type"},
		{"from=yesterday", "from"},
		{"to=2026-13-01T00:00:00Z", "to"},
		{"from=" + url.QueryEscape(ts(mid)) + "&to=" + url.QueryEscape(ts(start)), "from"},
		{"limit=0", "limit"},
		{"offset=-1", "offset"},
		{"actor=" + strings.Repeat("x", 1025), "actor"},
		{"resource_id=" + strings.Repeat("x", 129), "resource_id"},
	} {
		wantError(t, call(t, e, "GET", "/v1/audit?"+tc.query, a, nil), http.StatusBadRequest, tc.field)
	}
	// Append-only: no route writes or deletes entries.
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		wantError(t, call(t, e, m, "/v1/audit", a, map[string]any{}), http.StatusMethodNotAllowed, "")
	}
	if got := auditEntries(t, e, a, ""); len(got) != 5 {
		t.Errorf("%d entries after refused writes, want 5", len(got))
	}
}
