package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeBodies sends arbitrary bodies to every endpoint that decodes
// one, through the real handler: the answer is never a 5xx, always a JSON
// envelope, and a 4xx carries success=false and an error code matching
// its status.
func FuzzDecodeBodies(f *testing.F) {
	e := newEnv(f)
	h := e.srv.Config.Handler
	admin := e.token("org-a", "admin")
	obs := createObs(f, e, admin, map[string]any{"type": "auth", "description": "fuzz target"})
	rule := createRule(f, e, admin, map[string]any{"name": "fuzz", "priority": 1, "severity": "low"})
	role := createRole(f, e, admin, "fuzz", "incidents:read")
	createRole(f, e, admin, "taken", "incidents:read")

	targets := []struct{ method, path string }{
		{"POST", "/v1/observations"},
		{"PUT", "/v1/observations/" + obs["id"].(string)},
		{"POST", "/v1/artifacts"},
		{"POST", "/v1/classification-rules"},
		{"PUT", "/v1/classification-rules/" + rule["id"].(string)},
		{"POST", "/v1/roles"},
		{"PUT", "/v1/roles/" + role["id"].(string)},
		{"PUT", "/v1/enrichment-settings"},
		{"PUT", "/v1/incidents/" + obs["incident_id"].(string) + "/status"},
	}
	deep := strings.Repeat(`{"not":`, 40) + `{}` + strings.Repeat(`}`, 40)
	seeds := [][]string{
		{`{"type":"auth","description":"d"}`, `{"type":"Bad Type"}`, `{}`, `[]`, `null`, `{"type":1}`, `{"type":"a","description":"d","node_ids":["x"]}`,
			`{"severity":"urgent","description":""}`, `{"type":"a","description":"d","extra":1}`, `{"type":"a","description":"d"} x`, `"\u0000"`,
			`{"type":"a","description":"\ud800"}`, `{"type":"a","description":"d","artifact_ids":null}`},
		{`{"severity":"high"}`, `{"description":"new"}`, `{"node_ids":[]}`, `{"artifact_ids":["00000000-0000-0000-0000-000000000000"]}`, `{"type":null}`, `{`},
		{`{"artifacts":[{"source":"s","raw":"x"}]}`, `{"artifacts":[null,1,"x",{}]}`, `{"artifacts":[{"source":"s","raw":"x","metadata":[1]}]}`,
			`{"artifacts":[{"source":"s","raw":"x","timestamp":"0000-01-01T00:00:00Z"}]}`, `{"artifacts":[{"source":"s","raw":"x","timestamp":"9999-12-31T23:59:59Z"}]}`,
			`{"artifacts":{}}`, `{"artifacts":[{"source":"s","raw":"x","metadata":{"a":`, `{"artifacts":[{"source":"s","raw":"x","metadata":{"a":1,"a":2}}]}`,
			`{"artifacts":[{"source":"suricata","raw":"{\"event_type\":\"alert\",\"src_ip\":\"10.0.0.1\"}"}]}`, `{"artifacts":[{"source":"auth","raw":"\u0000\u00ff"}]}`},
		{`{"name":"n","priority":1,"severity":"low"}`, `{"name":"n","priority":1e300,"severity":"low"}`, `{"name":"n","priority":9223372036854775807,"severity":"low"}`,
			`{"name":"n","priority":1,"severity":"low","conditions":` + deep + `}`,
			`{"name":"n","priority":1,"severity":"low","conditions":{"all":[{"field":"event.x","op":"regex","value":"(a+)+$"}]}}`,
			`{"name":"n","priority":1,"severity":"low","conditions":null}`, `{"name":"n","priority":1,"severity":"low","conditions":{"all":[{"field":"incident.artifact_count","op":"gt","value":1e400}]}}`},
		{`{"priority":2}`, `{"conditions":{"any":[{"field":"node.value","op":"cidr","value":["10.0.0.0/8","::1"]}]}}`, `{"enabled":null}`, `{"name":"` + strings.Repeat("n", 300) + `"}`},
		{`{"name":"x","permissions":[]}`, `{"name":"x","permissions":[null]}`, `{"name":"\u0000","permissions":[]}`, `{"name":"taken","permissions":[]}`},
		{`{"name":"taken"}`, `{"permissions":["admin","admin"]}`, `{"name":"  "}`},
		{`{"rate_limit":1e10}`, `{"internal_networks":["::/0"]}`, `{"internal_networks":[null]}`, `{"cache_ttl_hours":-0}`, `{"whois_enabled":1}`},
		{`{"status":3}`, `{"status":"3"}`, `{"status":3.0}`, `{"status":99999999999999999999999}`, `{"status":-0}`, `{"status":03}`, `{"status":[3]}`, `{"status":1}`},
	}
	// Inputs the fuzzer found.
	seeds[8] = append(seeds[8], `{"":""}`)
	for i, list := range seeds {
		for _, s := range list {
			f.Add(uint8(i), []byte(s))
		}
	}

	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		tg := targets[int(which)%len(targets)]
		req := httptest.NewRequest(tg.method, tg.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: status %d: %s", tg.method, tg.path, body, rec.Code, rec.Body.Bytes())
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s %s %q: Content-Type %q", tg.method, tg.path, body, ct)
		}
		var env struct {
			Success *bool           `json:"success"`
			Message *string         `json:"message"`
			Data    json.RawMessage `json:"data"`
			Error   *struct {
				Code    string `json:"code"`
				Details []struct {
					Field string `json:"field"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Success == nil || env.Message == nil {
			t.Fatalf("%s %s %q: not an envelope (%v): %s", tg.method, tg.path, body, err, rec.Body.Bytes())
		}
		if rec.Code < 300 {
			if !*env.Success {
				t.Fatalf("%s %s %q: %d with success=false", tg.method, tg.path, body, rec.Code)
			}
			return
		}
		if *env.Success || env.Error == nil || env.Error.Code == "" {
			t.Fatalf("%s %s %q: %d without success=false and error.code: %s", tg.method, tg.path, body, rec.Code, rec.Body.Bytes())
		}
		if want := codeOfStatus[rec.Code]; want != "" && env.Error.Code != want {
			t.Fatalf("%s %s %q: %d with code %q, want %q", tg.method, tg.path, body, rec.Code, env.Error.Code, want)
		}
		switch rec.Code {
		case http.StatusBadRequest:
			if len(env.Error.Details) == 0 || env.Error.Details[0].Field == "" {
				t.Fatalf("%s %s %q: 400 without a field: %s", tg.method, tg.path, body, rec.Body.Bytes())
			}
		case http.StatusConflict, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%s %s %q: unexpected status %d: %s", tg.method, tg.path, body, rec.Code, rec.Body.Bytes())
		}
	})
}
