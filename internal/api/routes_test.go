package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// endpoint is one route of the router with the permission it requires,
// the status of a granted request, and a setup that makes a request to
// it valid, so that the only possible reason for a refusal is the
// caller's permissions.
type endpoint struct {
	// method is the route's; "ANY" for a route of every method (sent as PUT).
	method, path, perm string
	ok                 int
	// setup returns the concrete path (after the prefix) and body.
	setup func(t testing.TB, e *env, admin string) (string, any)
}

func (ep endpoint) String() string { return ep.method + " " + ep.path }

func static(path string, body any) func(testing.TB, *env, string) (string, any) {
	return func(testing.TB, *env, string) (string, any) { return path, body }
}

func withObs(suffix string, body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		o := createObs(t, e, admin, map[string]any{"type": "auth", "description": "fixture"})
		return "/observations/" + o["id"].(string) + suffix, body
	}
}

func withIncident(suffix string, body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		return "/incidents/" + newIncident(t, e, admin, "medium") + suffix, body
	}
}

func withRule(body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		r := createRule(t, e, admin, map[string]any{"name": uniq("rule"), "priority": 3, "severity": "low"})
		return "/classification-rules/" + r["id"].(string), body
	}
}

func withRole(body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		r := createRole(t, e, admin, uniq("role"), "incidents:read")
		return "/roles/" + r["id"].(string), body
	}
}

// withNode names the node of a new observation.
func withNode(t testing.TB, e *env, admin string) (string, any) {
	o := createObs(t, e, admin, map[string]any{"type": "network", "description": "fixture",
		"nodes": []any{map[string]any{"type": "IP", "value": "198.51.100.1"}}})
	return "/nodes/" + strs(o["node_ids"])[0], nil
}

// withArtifact names the org's newest artifact, after posting one.
func withArtifact(t testing.TB, e *env, admin string) (string, any) {
	postArtifacts(t, e, admin, map[string]any{"source": "custom", "raw": "hello"})
	a := items(t, must(t, call(t, e, "GET", "/v1/artifacts?limit=1", admin, nil), http.StatusOK), "artifacts")
	return "/artifacts/" + a[0]["id"].(string), nil
}

// withStarter names the first starter rule.
func withStarter(suffix string) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		r := items(t, must(t, call(t, e, "GET", "/v1/starter-rules?limit=1", admin, nil), http.StatusOK), "starter_rules")
		return "/starter-rules/" + r[0]["id"].(string) + suffix, nil
	}
}

// fresh returns a setup whose body mk makes anew on every call (names
// that must be unique).
func fresh(path string, mk func() any) func(testing.TB, *env, string) (string, any) {
	return func(testing.TB, *env, string) (string, any) { return path, mk() }
}

// esBulk is a bulk body of one document.
const esBulk = "{\"create\":{}}\n{\"message\":\"permission matrix\"}\n"

// endpoints are the 22 endpoints of the contract.
var endpoints = []endpoint{
	{"GET", "/observations", "observations:read", 200, static("/observations", nil)},
	{"GET", "/observations/{id}", "observations:read", 200, withObs("", nil)},
	{"POST", "/observations", "observations:write", 201, static("/observations", map[string]any{"type": "auth", "description": "posted"})},
	{"PUT", "/observations/{id}", "observations:write", 200, withObs("", map[string]any{"severity": "high"})},
	{"DELETE", "/observations/{id}", "observations:write", 200, withObs("", nil)},

	{"GET", "/incidents", "incidents:read", 200, static("/incidents", nil)},
	{"GET", "/incidents/{id}", "incidents:read", 200, withIncident("", nil)},
	{"PUT", "/incidents/{id}/status", "incidents:write", 200, withIncident("/status", map[string]any{"status": 2})},

	{"POST", "/artifacts", "signals:write", 202,
		static("/artifacts", map[string]any{"artifacts": []any{map[string]any{"source": "custom", "raw": "hello"}}})},
	{"GET", "/artifacts", "signals:read", 200, static("/artifacts", nil)},

	{"GET", "/classification-rules", "signals:read", 200, static("/classification-rules", nil)},
	{"GET", "/classification-rules/{id}", "signals:read", 200, withRule(nil)},
	{"POST", "/classification-rules", "signals:write", 201, fresh("/classification-rules", func() any {
		return map[string]any{"name": uniq("rule"), "priority": 1, "severity": "high"}
	})},
	{"PUT", "/classification-rules/{id}", "signals:write", 200, withRule(map[string]any{"priority": 7})},
	{"DELETE", "/classification-rules/{id}", "signals:manage", 200, withRule(nil)},

	{"GET", "/roles", "admin", 200, static("/roles", nil)},
	{"GET", "/roles/{id}", "admin", 200, withRole(nil)},
	{"POST", "/roles", "admin", 201, fresh("/roles", func() any {
		return map[string]any{"name": uniq("role"), "permissions": []string{"signals:read"}}
	})},
	{"PUT", "/roles/{id}", "admin", 200, withRole(map[string]any{"permissions": []string{"signals:write"}})},
	{"DELETE", "/roles/{id}", "admin", 200, withRole(nil)},

	{"GET", "/enrichment-settings", "signals:read", 200, static("/enrichment-settings", nil)},
	{"PUT", "/enrichment-settings", "signals:manage", 200, static("/enrichment-settings", map[string]any{"rate_limit": 30})},
}

// additions are every other route of the router: Vigil's additions to
// the contract. TestEveryRoutePermission fails on a route missing here.
var additions = []endpoint{
	{"GET", "/nodes", "observations:read", 200, static("/nodes", nil)},
	{"GET", "/nodes/{id}", "observations:read", 200, withNode},

	{"GET", "/incidents/{id}/history", "incidents:read", 200, withIncident("/history", nil)},
	{"GET", "/incidents/{id}/observations", "observations:read", 200, withIncident("/observations", nil)},
	{"GET", "/incidents/{id}/nodes", "incidents:read", 200, withIncident("/nodes", nil)},
	{"GET", "/incidents/{id}/artifacts", "signals:read", 200, withIncident("/artifacts", nil)},
	// A plain incident is no roll-up: 404 once the permission passed.
	{"GET", "/incidents/{id}/sources", "incidents:read", 404, withIncident("/sources", nil)},
	{"PUT", "/incidents/{id}", "incidents:write", 200, withIncident("", map[string]any{"tags": []string{"vip"}})},
	{"GET", "/incidents/{id}/comments", "incidents:read", 200, withIncident("/comments", nil)},
	{"POST", "/incidents/{id}/comments", "incidents:write", 201, withIncident("/comments", map[string]any{"body": "seen"})},
	{"PUT", "/incidents/{id}/comments/{comment}", "incidents:write", 200, withComment(map[string]any{"body": "edited"})},
	{"DELETE", "/incidents/{id}/comments/{comment}", "incidents:write", 200, withComment(nil)},
	{"GET", "/events", "incidents:read", 200, static("/events", nil)},

	{"GET", "/artifacts/{id}", "signals:read", 200, withArtifact},
	{"POST", "/classification-rules/preview", "incidents:read", 200,
		static("/classification-rules/preview", map[string]any{"name": "p", "priority": 1, "severity": "low"})},

	{"GET", "/suppressions", "signals:read", 200, static("/suppressions", nil)},
	{"POST", "/suppressions", "signals:manage", 201, fresh("/suppressions", func() any {
		return map[string]any{"name": uniq("sup"), "conditions": leaf("signal.source_ip", "eq", "203.0.113.7")}
	})},
	{"GET", "/suppressions/{id}", "signals:read", 200, withSuppression("", nil)},
	{"PUT", "/suppressions/{id}", "signals:manage", 200, withSuppression("", map[string]any{"enabled": false})},
	{"DELETE", "/suppressions/{id}", "signals:manage", 200, withSuppression("", nil)},

	{"GET", "/detection-rules", "signals:read", 200, static("/detection-rules", nil)},
	{"POST", "/detection-rules", "signals:write", 201, static("/detection-rules", json.RawMessage(sigmaJSON))},
	{"GET", "/detection-rules/{id}", "signals:read", 200, withDetectionRule("", nil, true)},
	{"PUT", "/detection-rules/{id}", "signals:write", 200, withDetectionRule("", json.RawMessage(sigmaJSON), true)},
	{"DELETE", "/detection-rules/{id}", "signals:manage", 200, withDetectionRule("", nil, true)},
	{"POST", "/detection-rules/{id}/enable", "signals:write", 200, withDetectionRule("/enable", nil, false)},
	{"POST", "/detection-rules/{id}/disable", "signals:write", 200, withDetectionRule("/disable", nil, true)},
	// Over the org's stored artifacts of the last hour: no lines to make up.
	{"POST", "/detection-rules/test", "signals:read", 200, fresh("/detection-rules/test", func() any {
		now := time.Now()
		return map[string]any{"rule": sigmaJSON, "from": ts(now.Add(-time.Hour)), "to": ts(now.Add(time.Minute))}
	})},
	{"GET", "/starter-rules", "signals:read", 200, static("/starter-rules", nil)},
	{"GET", "/starter-rules/{id}", "signals:read", 200, withStarter("")},
	{"POST", "/starter-rules/{id}/enable", "signals:write", 200, withStarter("/enable")},
	{"POST", "/starter-rules/{id}/disable", "signals:write", 200, withStarter("/disable")},

	{"GET", "/api-keys", "admin", 200, static("/api-keys", nil)},
	{"POST", "/api-keys", "admin", 201, fresh("/api-keys", func() any { return map[string]any{"name": uniq("key")} })},
	{"GET", "/api-keys/{id}", "admin", 200, withAPIKey},
	{"DELETE", "/api-keys/{id}", "admin", 200, withAPIKey},

	{"GET", "/webhooks", "admin", 200, static("/webhooks", nil)},
	{"POST", "/webhooks", "admin", 201, static("/webhooks", hookBody)},
	{"GET", "/webhooks/{id}", "admin", 200, withWebhook(nil)},
	{"PUT", "/webhooks/{id}", "admin", 200, withWebhook(map[string]any{"enabled": false})},
	{"DELETE", "/webhooks/{id}", "admin", 200, withWebhook(nil)},
	{"GET", "/webhooks/{id}/deliveries", "admin", 200, func(t testing.TB, e *env, admin string) (string, any) {
		p, _ := withWebhook(nil)(t, e, admin)
		return p + "/deliveries", nil
	}},

	{"GET", "/audit", "admin", 200, static("/audit", nil)},

	// The Elasticsearch-compatible ingest endpoint: what ingest takes.
	{"POST", "/ingest/elastic/_bulk", "signals:write", 200, static("/ingest/elastic/_bulk", esBulk)},
	{"PUT", "/ingest/elastic/_bulk", "signals:write", 200, static("/ingest/elastic/_bulk", esBulk)},
	{"POST", "/ingest/elastic/{index}/_bulk", "signals:write", 200, static("/ingest/elastic/logs/_bulk", esBulk)},
	{"PUT", "/ingest/elastic/{index}/_bulk", "signals:write", 200, static("/ingest/elastic/logs/_bulk", esBulk)},
	{"GET", "/ingest/elastic/{$}", "signals:write", 200, static("/ingest/elastic/", nil)},
	{"GET", "/ingest/elastic", "signals:write", 200, static("/ingest/elastic", nil)},
	{"GET", "/ingest/elastic/_license", "signals:write", 200, static("/ingest/elastic/_license", nil)},
	{"ANY", "/ingest/elastic/", "signals:write", 200, static("/ingest/elastic/_index_template/vigil", `{"index_patterns":["vigil-*"]}`)},
}

// withComment makes a comment on a new incident, written by the sub of
// every token of the matrix (so that only permissions decide).
func withComment(body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		inc := newIncident(t, e, admin, "medium")
		c := must(t, call(t, e, "POST", "/v1/incidents/"+inc+"/comments", admin, map[string]any{"body": "fixture"}), http.StatusCreated).data()
		return "/incidents/" + inc + "/comments/" + c["id"].(string), body
	}
}

// catalog is every permission a token or role may carry.
var catalog = []string{
	"observations:read", "observations:write", "observations:manage",
	"incidents:read", "incidents:write", "incidents:manage",
	"signals:read", "signals:write", "signals:manage",
	"observer:read", "admin",
}

// grantedBy lists, per required permission, every catalog permission that
// grants it (docs/api.md, least privilege): itself, admin, the resource's
// manage for its write and read, and observer:read for every *:read.
// Write does not grant read: a sensor's credential reads nothing.
var grantedBy = map[string][]string{
	"observations:read":  {"observations:read", "observations:manage", "observer:read", "admin"},
	"observations:write": {"observations:write", "observations:manage", "admin"},
	"incidents:read":     {"incidents:read", "incidents:manage", "observer:read", "admin"},
	"incidents:write":    {"incidents:write", "incidents:manage", "admin"},
	"signals:read":       {"signals:read", "signals:manage", "observer:read", "admin"},
	"signals:write":      {"signals:write", "signals:manage", "admin"},
	"signals:manage":     {"signals:manage", "admin"},
	"admin":              {"admin"},
}
