package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
)

// contractRoutes are the 22 endpoints promised to API users, with paths in
// the promise's ":id" form and the permission each requires.
var contractRoutes = []struct {
	method, path, perm string
	weaker             string // a permission that must not be enough
}{
	{"GET", "/v1/observations", "observations:read", "incidents:read"},
	{"GET", "/v1/observations/:id", "observations:read", "signals:manage"},
	{"POST", "/v1/observations", "observations:write", "observations:read"},
	{"PUT", "/v1/observations/:id", "observations:write", "observer:read"},
	{"DELETE", "/v1/observations/:id", "observations:write", "observations:read"},
	{"GET", "/v1/incidents", "incidents:read", "observations:manage"},
	{"GET", "/v1/incidents/:id", "incidents:read", "signals:read"},
	{"PUT", "/v1/incidents/:id/status", "incidents:write", "incidents:read"},
	{"POST", "/v1/artifacts", "signals:write", "signals:read"},
	{"GET", "/v1/artifacts", "signals:read", "incidents:manage"},
	{"GET", "/v1/classification-rules", "signals:read", "observations:read"},
	{"GET", "/v1/classification-rules/:id", "signals:read", "incidents:read"},
	{"POST", "/v1/classification-rules", "signals:write", "observer:read"},
	{"PUT", "/v1/classification-rules/:id", "signals:write", "signals:read"},
	{"DELETE", "/v1/classification-rules/:id", "signals:manage", "signals:write"},
	{"GET", "/v1/roles", "admin", "signals:manage"},
	{"GET", "/v1/roles/:id", "admin", "observer:read"},
	{"POST", "/v1/roles", "admin", "observations:manage"},
	{"PUT", "/v1/roles/:id", "admin", "incidents:manage"},
	{"DELETE", "/v1/roles/:id", "admin", "signals:manage"},
	{"GET", "/v1/enrichment-settings", "signals:read", "observations:read"},
	{"PUT", "/v1/enrichment-settings", "signals:manage", "signals:write"},
}

// extensionRoutes are the endpoints Vigil adds to the contract (additive:
// no contract shape changes), with the permission each requires.
var extensionRoutes = []struct {
	method, path, perm string
	weaker             string
}{
	{"GET", "/v1/nodes", "observations:read", "incidents:read"},
	{"GET", "/v1/nodes/:id", "observations:read", "signals:read"},
	{"GET", "/v1/artifacts/:id", "signals:read", "incidents:read"},
	{"GET", "/v1/suppressions", "signals:read", "observations:read"},
	{"GET", "/v1/suppressions/:id", "signals:read", "incidents:read"},
	{"POST", "/v1/suppressions", "signals:manage", "signals:write"},
	{"PUT", "/v1/suppressions/:id", "signals:manage", "signals:write"},
	{"DELETE", "/v1/suppressions/:id", "signals:manage", "observer:read"},
	{"POST", "/v1/classification-rules/preview", "incidents:read", "signals:write"},
	{"GET", "/v1/api-keys", "admin", "signals:manage"},
	{"POST", "/v1/api-keys", "admin", "signals:write"},
	{"GET", "/v1/api-keys/:id", "admin", "observer:read"},
	{"DELETE", "/v1/api-keys/:id", "admin", "signals:manage"},
	{"GET", "/v1/incidents/:id/history", "incidents:read", "signals:read"},
	{"GET", "/v1/incidents/:id/observations", "observations:read", "incidents:read"},
	{"GET", "/v1/incidents/:id/nodes", "incidents:read", "observations:read"},
	{"GET", "/v1/incidents/:id/artifacts", "signals:read", "incidents:read"},
	{"GET", "/v1/incidents/:id/sources", "incidents:read", "signals:read"},
	{"GET", "/v1/detection-rules", "signals:read", "observations:read"},
	{"POST", "/v1/detection-rules", "signals:write", "signals:read"},
	{"GET", "/v1/detection-rules/:id", "signals:read", "incidents:read"},
	{"PUT", "/v1/detection-rules/:id", "signals:write", "signals:read"},
	{"DELETE", "/v1/detection-rules/:id", "signals:manage", "signals:write"},
	{"POST", "/v1/detection-rules/:id/enable", "signals:write", "signals:read"},
	{"POST", "/v1/detection-rules/:id/disable", "signals:write", "signals:read"},
	{"POST", "/v1/detection-rules/test", "signals:read", "observations:read"},
	{"GET", "/v1/starter-rules", "signals:read", "observations:read"},
	{"GET", "/v1/starter-rules/:id", "signals:read", "incidents:read"},
	{"POST", "/v1/starter-rules/:id/enable", "signals:write", "signals:read"},
	{"POST", "/v1/starter-rules/:id/disable", "signals:write", "signals:read"},
	{"PUT", "/v1/incidents/:id", "incidents:write", "incidents:read"},
	{"GET", "/v1/incidents/:id/comments", "incidents:read", "observations:read"},
	{"POST", "/v1/incidents/:id/comments", "incidents:write", "observer:read"},
	{"PUT", "/v1/incidents/:id/comments/:comment", "incidents:write", "incidents:read"},
	{"DELETE", "/v1/incidents/:id/comments/:comment", "incidents:write", "signals:manage"},
	{"GET", "/v1/events", "incidents:read", "signals:write"},
	{"GET", "/v1/webhooks", "admin", "incidents:manage"},
	{"POST", "/v1/webhooks", "admin", "signals:manage"},
	{"GET", "/v1/webhooks/:id", "admin", "incidents:read"},
	{"PUT", "/v1/webhooks/:id", "admin", "signals:manage"},
	{"DELETE", "/v1/webhooks/:id", "admin", "observations:manage"},
	{"GET", "/v1/webhooks/:id/deliveries", "admin", "incidents:read"},
	{"GET", "/v1/ingest/elastic", "signals:write", "signals:read"},
	{"GET", "/v1/ingest/elastic/_license", "signals:write", "signals:read"},
	{"POST", "/v1/ingest/elastic/_bulk", "signals:write", "signals:read"},
	{"PUT", "/v1/ingest/elastic/_bulk", "signals:write", "incidents:write"},
	{"POST", "/v1/ingest/elastic/:index/_bulk", "signals:write", "observer:read"},
	{"PUT", "/v1/ingest/elastic/:index/_bulk", "signals:write", "observations:write"},
	{"GET", "/v1/audit", "admin", "signals:manage"},
}

// allRoutes are the contract's routes and Vigil's additions.
var allRoutes = append(contractRoutes[:len(contractRoutes):len(contractRoutes)], extensionRoutes...)

// oasPath turns a contract path (":id") into an OpenAPI path ("{id}").
func oasPath(p string) string {
	return strings.NewReplacer(":id", "{id}", ":comment", "{comment}", ":index", "{index}").Replace(p)
}

func TestOpenAPIDocumentServedAndComplete(t *testing.T) {
	e := newEnv(t)
	r := must(t, e.do("GET", "/v1/openapi.json", "", nil), http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.Raw, &doc); err != nil {
		t.Fatalf("document is not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	type opInfo struct {
		Permission  string             `json:"x-permission"`
		Security    []map[string][]any `json:"security"`
		Responses   map[string]any     `json:"responses"`
		Summary     string             `json:"summary"`
		Description string             `json:"description"`
	}
	operation := func(path, method string) (opInfo, bool) {
		raw, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			return opInfo{}, false
		}
		var o opInfo
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return o, true
	}
	want := map[string]bool{}
	for _, rt := range allRoutes {
		p := oasPath(rt.path)
		want[rt.method+" "+p] = true
		o, ok := operation(p, rt.method)
		if !ok {
			t.Errorf("no operation for %s %s", rt.method, p)
			continue
		}
		if o.Permission != rt.perm {
			t.Errorf("%s %s: x-permission %q, want %q", rt.method, p, o.Permission, rt.perm)
		}
		if len(o.Security) == 0 || o.Security[0]["bearerAuth"] == nil {
			t.Errorf("%s %s: security %v, want bearerAuth", rt.method, p, o.Security)
		}
		if o.Summary == "" {
			t.Errorf("%s %s: no summary", rt.method, p)
		}
		if want := permissionText(rt.perm); !strings.Contains(o.Description, want) {
			t.Errorf("%s %s: description %q does not say %q", rt.method, p, o.Description, want)
		}
		for _, st := range []string{"401", "403", "500"} {
			if o.Responses[st] == nil {
				t.Errorf("%s %s: response %s not documented", rt.method, p, st)
			}
		}
	}
	if len(want) != 22+len(extensionRoutes) {
		t.Fatalf("route tables have %d distinct routes, want the contract's 22 and %d additions", len(want), len(extensionRoutes))
	}
	// Nothing under /v1 beyond the contract's routes, the additions and the
	// document itself.
	for path, item := range doc.Paths {
		// /v1/me needs a token but no permission (TestMe).
		if !strings.HasPrefix(path, "/v1/") || path == "/v1/openapi.json" || path == "/v1/me" {
			continue
		}
		for m := range item {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				if !want[strings.ToUpper(m)+" "+path] {
					t.Errorf("undocumented-by-contract operation %s %s", strings.ToUpper(m), path)
				}
			}
		}
	}
	for _, path := range []string{"/v1/openapi.json", "/healthz", "/readyz", "/metrics"} {
		o, ok := operation(path, "GET")
		if !ok {
			t.Errorf("no operation for GET %s", path)
			continue
		}
		if o.Security == nil || len(o.Security) != 0 {
			t.Errorf("GET %s: security %v, want [] (no authentication)", path, o.Security)
		}
	}
	// The /api/v1 alias serves the same document.
	alias := must(t, e.do("GET", "/api/v1/openapi.json", "", nil), http.StatusOK)
	if !bytes.Equal(alias.Raw, r.Raw) {
		t.Errorf("/api/v1/openapi.json differs from /v1/openapi.json")
	}
}

// permissionText is how an operation's description states the permission
// it requires and what else grants it (grantedBy).
func permissionText(perm string) string {
	var others []string
	for _, g := range grantedBy[perm] {
		if g != perm {
			others = append(others, g)
		}
	}
	if len(others) == 0 {
		return "Requires permission `" + perm + "`."
	}
	list := others[len(others)-1]
	if len(others) > 1 {
		list = strings.Join(others[:len(others)-1], ", ") + " and " + list
	}
	return "Requires permission `" + perm + "` (also granted by " + list + ")"
}

// oas validates real responses against the document the server serves.
type oas struct {
	t     *testing.T
	e     *env
	doc   map[string]any
	c     *jsonschema.Compiler
	cache map[string]*jsonschema.Schema
	seen  map[string]bool // "METHOD /path status" exercised
}

const oasURL = "https://vigil.invalid/v1/openapi.json"

func newOAS(t *testing.T, e *env) *oas {
	t.Helper()
	r := must(t, e.do("GET", "/v1/openapi.json", "", nil), http.StatusOK)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Raw))
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(oasURL, doc); err != nil {
		t.Fatalf("add resource: %v", err)
	}
	m, _ := doc.(map[string]any)
	return &oas{t: t, e: e, doc: m, c: c, cache: map[string]*jsonschema.Schema{}, seen: map[string]bool{}}
}

// oasPtr builds a JSON pointer fragment from unescaped tokens.
func oasPtr(tokens ...string) string {
	var sb strings.Builder
	for _, tok := range tokens {
		tok = strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
		sb.WriteString("/" + url.PathEscape(tok))
	}
	return sb.String()
}

// schema compiles the schema at the JSON pointer frag of the document.
func (o *oas) schema(frag string) *jsonschema.Schema {
	o.t.Helper()
	if s, ok := o.cache[frag]; ok {
		return s
	}
	s, err := o.c.Compile(oasURL + "#" + frag)
	if err != nil {
		o.t.Fatalf("compile %s: %v", frag, err)
	}
	o.cache[frag] = s
	return s
}

// at returns the value at the JSON pointer frag, or nil.
func (o *oas) at(frag string) any {
	var cur any = o.doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok, _ = url.PathUnescape(tok)
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// deref follows an OpenAPI "$ref" at frag, returning the target's pointer.
func (o *oas) deref(frag string) string {
	for range 10 {
		m, _ := o.at(frag).(map[string]any)
		r, ok := m["$ref"].(string)
		if !ok {
			return frag
		}
		if !strings.HasPrefix(r, "#/") {
			o.t.Fatalf("%s: non-local $ref %q", frag, r)
		}
		frag = r[1:]
	}
	o.t.Fatalf("%s: $ref loop", frag)
	return ""
}

// template finds the documented path that path (possibly under /api,
// possibly with a query) is an instance of; "" if none.
func (o *oas) template(path string) string {
	path, _, _ = strings.Cut(path, "?")
	if strings.HasPrefix(path, "/api/v1/") {
		path = strings.TrimPrefix(path, "/api")
	}
	segs := strings.Split(path, "/")
	paths, _ := o.doc["paths"].(map[string]any)
	best, bestWild := "", -1
	for tmpl := range paths {
		if strings.HasPrefix(tmpl, "/v1/") != strings.HasPrefix(path, "/v1/") {
			continue
		}
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		wild, match := 0, true
		for i := range ts {
			switch {
			case strings.HasPrefix(ts[i], "{") && strings.HasSuffix(ts[i], "}") && segs[i] != "":
				wild++
			case ts[i] != segs[i]:
				match = false
			}
		}
		if match && (bestWild < 0 || wild < bestWild) {
			best, bestWild = tmpl, wild
		}
	}
	return best
}

// validate checks v against the schema at frag.
func (o *oas) validate(frag string, v any, what string) {
	o.t.Helper()
	if err := o.schema(frag).Validate(v); err != nil {
		o.t.Errorf("%s does not match %s:\n%v", what, frag, err)
	}
}

// check validates one real response: its status must be documented for
// the operation, its body must match the documented schema.
func (o *oas) check(method, path string, r resp) {
	o.t.Helper()
	what := fmt.Sprintf("%s %s → %d %s", method, path, r.Status, r.Raw)
	tmpl := o.template(path)
	var respFrag string
	switch {
	case tmpl == "":
		if r.Status != http.StatusNotFound {
			o.t.Errorf("%s: undocumented path answered %d, want the 404 fallback", what, r.Status)
			return
		}
		respFrag = o.deref(oasPtr("x-fallback-responses", "404"))
	case o.at(oasPtr("paths", tmpl, strings.ToLower(method))) == nil:
		if r.Status != http.StatusMethodNotAllowed {
			o.t.Errorf("%s: undocumented method answered %d, want the 405 fallback", what, r.Status)
			return
		}
		respFrag = o.deref(oasPtr("x-fallback-responses", "405"))
	default:
		respFrag = oasPtr("paths", tmpl, strings.ToLower(method), "responses", strconv.Itoa(r.Status))
		if o.at(respFrag) == nil {
			o.t.Errorf("%s: status %d is not documented for %s %s", what, r.Status, method, tmpl)
			return
		}
		respFrag = o.deref(respFrag)
		o.seen[fmt.Sprintf("%s %s %d", method, tmpl, r.Status)] = true
	}
	// Required headers.
	if hs, ok := o.at(respFrag + oasPtr("headers")).(map[string]any); ok {
		for name := range hs {
			hf := o.deref(respFrag + oasPtr("headers", name))
			if req, _ := o.at(hf + oasPtr("required")).(bool); req && r.Header.Get(name) == "" {
				o.t.Errorf("%s: documented header %s missing", what, name)
			}
		}
	}
	content, _ := o.at(respFrag + oasPtr("content")).(map[string]any)
	ct := r.Header.Get("Content-Type")
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	if _, ok := content[mt]; !ok {
		o.t.Errorf("%s: Content-Type %q not documented (have %v)", what, ct, oasKeys(content))
		return
	}
	if mt != "application/json" {
		return
	}
	body, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Raw))
	if err != nil {
		o.t.Errorf("%s: body is not JSON: %v", what, err)
		return
	}
	o.validate(respFrag+oasPtr("content", "application/json", "schema"), body, what)
}

func oasKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// call sends a request through the harness, checks its status and
// validates the response against the document.
func (o *oas) call(method, path, token string, body any, want int) resp {
	o.t.Helper()
	r := o.e.do(method, path, token, body)
	o.check(method, path, r)
	if r.Status != want {
		o.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, r.Raw)
	}
	return r
}

// raw sends body with the given Content-Type (none if ""), bypassing the
// harness's JSON handling.
func (o *oas) raw(method, path, token, contentType string, body []byte, want int) resp {
	o.t.Helper()
	req, err := http.NewRequest(method, o.e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		o.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := o.e.srv.Client().Do(req)
	if err != nil {
		o.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := resp{Status: res.StatusCode, Header: res.Header, Raw: b}
	json.Unmarshal(b, &r.Body)
	o.check(method, path, r)
	if r.Status != want {
		o.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, b)
	}
	return r
}

// oasJSON round-trips v into the validator's JSON model.
func oasJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requestValid reports whether body matches the documented request body
// of method path.
func (o *oas) requestValid(method, path string, body any) bool {
	o.t.Helper()
	tmpl := o.template(path)
	frag := oasPtr("paths", tmpl, strings.ToLower(method), "requestBody", "content", "application/json", "schema")
	if o.at(frag) == nil {
		o.t.Fatalf("%s %s: no documented JSON request body", method, tmpl)
	}
	return o.schema(frag).Validate(oasJSON(o.t, body)) == nil
}

// ok sends a body the server accepts; the document must accept it too.
func (o *oas) ok(method, path, token string, body any, want int) resp {
	o.t.Helper()
	if !o.requestValid(method, path, body) {
		o.t.Errorf("%s %s: documented request schema refuses a body the server accepts: %s", method, path, oasMarshal(body))
	}
	return o.call(method, path, token, body, want)
}

// bad sends a body the server refuses with 400 naming field; the
// document's request schema must refuse it too.
func (o *oas) bad(method, path, token string, body any, field string) resp {
	o.t.Helper()
	if o.requestValid(method, path, body) {
		o.t.Errorf("%s %s: documented request schema accepts a body the server refuses: %s", method, path, oasMarshal(body))
	}
	r := o.call(method, path, token, body, http.StatusBadRequest)
	if r.field() != field {
		o.t.Errorf("%s %s %s: 400 names field %q, want %q", method, path, oasMarshal(body), r.field(), field)
	}
	return r
}

// badQuery sends path with name=value added, which the server refuses;
// the documented parameter schema must refuse the value too (pass
// schemaToo=false for a rule the schema cannot state, like start > end).
func (o *oas) badQuery(path, token, name, value string, schemaToo bool) {
	o.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	full := path + sep + url.Values{name: {value}}.Encode()
	r := o.call("GET", full, token, nil, http.StatusBadRequest)
	if r.field() != name {
		o.t.Errorf("GET %s: 400 names %q, want %q", full, r.field(), name)
	}
	if !schemaToo {
		return
	}
	tmpl := o.template(path)
	params, _ := o.at(oasPtr("paths", tmpl, "get", "parameters")).([]any)
	for i := range params {
		pf := o.deref(oasPtr("paths", tmpl, "get", "parameters", strconv.Itoa(i)))
		if n, _ := o.at(pf + oasPtr("name")).(string); n != name {
			continue
		}
		var v any = value
		if _, err := strconv.Atoi(value); err == nil {
			v = json.Number(value)
		}
		if o.schema(pf+oasPtr("schema")).Validate(v) == nil {
			o.t.Errorf("GET %s: documented schema of %s accepts %q, which the server refuses", tmpl, name, value)
		}
		return
	}
	o.t.Errorf("GET %s: parameter %s not documented", tmpl, name)
}

func oasMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const oasMissingID = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

func TestOpenAPIConformance(t *testing.T) {
	e := newEnv(t)
	o := newOAS(t, e)
	admin := e.token("org-a", "admin")
	other := e.token("org-b", "admin")
	nobody := e.token("org-a")

	// Authentication and permissions on every route, both prefixes.
	for _, rt := range allRoutes {
		p := strings.NewReplacer(":id", oasMissingID, ":comment", oasMissingID, ":index", "auth").Replace(rt.path)
		if rt.path == "/v1/events" {
			p += "?follow=false" // the stream ends instead of waiting for events
		}
		var body any
		if rt.method == "POST" || rt.method == "PUT" {
			body = map[string]any{}
		}
		r := o.call(rt.method, "/api"+p, "", body, http.StatusUnauthorized)
		if r.errCode() != "unauthenticated" {
			t.Errorf("%s %s without token: code %q", rt.method, p, r.errCode())
		}
		o.call(rt.method, p, "not-a-jwt", body, http.StatusUnauthorized)
		o.call(rt.method, p, nobody, body, http.StatusForbidden)
		o.call(rt.method, p, e.token("org-a", rt.weaker), body, http.StatusForbidden)
		// The documented permission alone is enough.
		r = o.e.do(rt.method, p, e.token("org-z", rt.perm), body)
		o.check(rt.method, p, r)
		if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			t.Errorf("%s %s with only %s: %d %s", rt.method, p, rt.perm, r.Status, r.Raw)
		}
	}

	// Enrichment settings.
	set := o.call("GET", "/v1/enrichment-settings", admin, nil, http.StatusOK)
	if set.data()["rate_limit"] != float64(60) || set.data()["whois_enabled"] != false {
		t.Errorf("default settings = %s", set.Raw)
	}
	set = o.ok("PUT", "/api/v1/enrichment-settings", admin, map[string]any{
		"rate_limit": 120, "whois_enabled": true, "internal_networks": []string{"10.1.2.3/16", "fd00::/8"},
	}, http.StatusOK)
	if nets := set.data()["internal_networks"].([]any); len(nets) != 2 || nets[0] != "10.1.0.0/16" {
		t.Errorf("internal_networks = %v", nets)
	}
	o.ok("PUT", "/v1/enrichment-settings", admin, map[string]any{}, http.StatusOK)
	o.bad("PUT", "/v1/enrichment-settings", admin, map[string]any{"rate_limit": -1}, "rate_limit")
	o.bad("PUT", "/v1/enrichment-settings", admin, map[string]any{"cache_ttl_hours": 8761}, "cache_ttl_hours")
	o.bad("PUT", "/v1/enrichment-settings", admin, map[string]any{"geoip_enabled": "yes"}, "geoip_enabled")
	o.bad("PUT", "/v1/enrichment-settings", admin, map[string]any{"colour": "red"}, "colour")
	if set := o.ok("PUT", "/v1/enrichment-settings", admin, map[string]any{"suricata_engine_events": true}, http.StatusOK); set.data()["suricata_engine_events"] != true {
		t.Errorf("suricata_engine_events not set: %s", set.Raw)
	}
	o.bad("PUT", "/v1/enrichment-settings", admin, map[string]any{"suricata_engine_events": "yes"}, "suricata_engine_events")
	o.call("PUT", "/v1/enrichment-settings", admin, map[string]any{"internal_networks": []string{"not-a-cidr"}}, http.StatusBadRequest)

	// Artifacts.
	authLine := "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=218.188.2.4"
	eve := `{"timestamp":"2024-05-01T10:00:00.000000+0000","event_type":"alert","src_ip":"203.0.113.7","src_port":4444,"dest_ip":"10.0.0.5","dest_port":22,"proto":"TCP","alert":{"signature":"ET SCAN","category":"Attempted Information Leak","severity":2}}`
	good := map[string]any{"artifacts": []any{
		map[string]any{"source": "auth", "raw": authLine, "timestamp": "2024-05-01T10:00:00Z", "metadata": map[string]any{"host": "combo"}},
		map[string]any{"source": "suricata", "raw": eve},
	}}
	ing := o.ok("POST", "/v1/artifacts", admin, good, http.StatusAccepted)
	if ing.data()["accepted"] != float64(2) || len(ing.data()["ids"].([]any)) != 2 {
		t.Fatalf("ingest = %s", ing.Raw)
	}
	artIDs := ing.data()["ids"].([]any)
	mixed := map[string]any{"artifacts": []any{
		map[string]any{"source": "firewall", "raw": "kernel: [UFW BLOCK] IN=eth0 SRC=198.51.100.9 DST=10.0.0.5 PROTO=TCP DPT=23"},
		map[string]any{"source": "Bad Source", "raw": "x"},
		map[string]any{"source": "auth", "raw": "x", "timestamp": "yesterday"},
		map[string]any{"source": "auth", "raw": "x", "colour": "red"},
		"not an object",
	}}
	if o.requestValid("POST", "/v1/artifacts", mixed) {
		t.Errorf("documented ArtifactBatch accepts items the server rejects")
	}
	mr := o.call("POST", "/api/v1/artifacts", admin, mixed, http.StatusAccepted)
	if d := mr.data(); d["accepted"] != float64(1) || d["rejected"] != float64(4) {
		t.Errorf("mixed batch = %s", mr.Raw)
	} else {
		for i, want := range []string{"source", "timestamp", "colour", "artifact"} {
			if f := d["errors"].([]any)[i].(map[string]any)["field"]; f != want {
				t.Errorf("errors[%d].field = %v, want %s", i, f, want)
			}
		}
	}
	o.bad("POST", "/v1/artifacts", admin, map[string]any{}, "artifacts")
	o.bad("POST", "/v1/artifacts", admin, map[string]any{"artifacts": []any{}}, "artifacts")
	o.bad("POST", "/v1/artifacts", admin, map[string]any{"artifacts": "x"}, "artifacts")
	o.bad("POST", "/v1/artifacts", admin, map[string]any{"artifacts": good["artifacts"], "extra": 1}, "extra")
	o.call("POST", "/v1/artifacts", admin, "{", http.StatusBadRequest)

	// The Elasticsearch bulk endpoint, each form: taken; a bad timeout;
	// refused whole by a full queue.
	nd := `{"create":{}}` + "\n" + `{"message":` + strconv.Quote(authLine) + "}\n"
	shipper := e.token("org-elastic", "signals:write") // an org of its own: the counts below are org-a's
	full, _ := newRefusingEnv(t, 1000)
	// A budget of bodies smaller than one request: refused before it is read.
	tight := newEnvWith(t, func(c *api.Config) { c.BodyBudget, c.ClientBodyBudget = 64, 64 })
	for _, m := range []string{"POST", "PUT"} {
		for _, p := range []string{"/v1/ingest/elastic/_bulk", "/v1/ingest/elastic/auth/_bulk"} {
			o.call(m, p, shipper, nd, http.StatusOK)
			o.call(m, p+"?timeout=soon", shipper, nd, http.StatusBadRequest)
			saved := o.e
			o.e = full
			o.call(m, p, full.token("org-a", "admin"), nd, http.StatusTooManyRequests)
			o.e = tight
			o.call(m, p, tight.token("org-a", "admin"), nd, http.StatusTooManyRequests)
			o.e = saved
		}
	}

	list := o.call("GET", "/v1/artifacts", admin, nil, http.StatusOK)
	if list.data()["total"] != float64(3) || list.data()["limit"] != float64(50) || list.data()["offset"] != float64(0) {
		t.Errorf("artifact list = %s", list.Raw)
	}
	found := o.call("GET", "/v1/artifacts?source=auth&query=218.188.2.4&start=2024-01-01T00:00:00Z&end=2025-01-01T00:00:00Z&limit=10&offset=0", admin, nil, http.StatusOK)
	if found.data()["total"] != float64(1) {
		t.Errorf("search = %s", found.Raw)
	}
	o.call("GET", "/v1/artifacts?query=%22port+scan%22+OR+ssh*+-telnet", admin, nil, http.StatusOK)
	o.badQuery("/v1/artifacts", admin, "source", "Bad Source", true)
	o.badQuery("/v1/artifacts", admin, "limit", "0", true)
	o.badQuery("/v1/artifacts", admin, "limit", "1001", true)
	o.badQuery("/v1/artifacts", admin, "offset", "-1", true)
	o.badQuery("/v1/artifacts", admin, "start", "yesterday", true)
	o.badQuery("/v1/artifacts", admin, "query", `"unterminated`, false)
	o.badQuery("/v1/artifacts?end=2024-01-01T00:00:00Z", admin, "start", "2025-01-01T00:00:00Z", false)
	o.badQuery("/v1/artifacts", admin, "query", `"`+strings.Repeat("a ", 500)+`"`, false)
	// A large artifact: previewed in lists, whole by id.
	bigRaw := strings.Repeat("GET /"+strings.Repeat("A", 1000)+" ", 100)
	bigArt := o.ok("POST", "/v1/artifacts", admin, map[string]any{"artifacts": []any{map[string]any{"source": "generic", "raw": bigRaw,
		"timestamp": "2030-01-01T00:00:00Z", "metadata": map[string]any{"k": strings.Repeat("m", 20000)}}}}, http.StatusAccepted)
	bigID := bigArt.data()["ids"].([]any)[0].(string)
	pv := o.call("GET", "/v1/artifacts?limit=1", admin, nil, http.StatusOK).data()["artifacts"].([]any)[0].(map[string]any)
	if pv["id"] != bigID || pv["raw_truncated"] != true || pv["raw_bytes"] != float64(len(bigRaw)) || pv["metadata_truncated"] != true ||
		pv["event_truncated"] != true || len(pv["raw"].(string)) != vigil.PreviewRawBytes {
		t.Errorf("preview of a large artifact: %v", pv)
	}
	whole := o.call("GET", "/v1/artifacts/"+bigID, admin, nil, http.StatusOK).data()
	if whole["raw"] != bigRaw || whole["raw_truncated"] != nil || whole["event"] == nil {
		t.Errorf("artifact by id is not whole")
	}
	o.call("GET", "/api/v1/artifacts/"+artIDs[0].(string), admin, nil, http.StatusOK)
	o.call("GET", "/v1/artifacts/"+artIDs[0].(string), other, nil, http.StatusNotFound)
	o.call("GET", "/v1/artifacts/"+oasMissingID, admin, nil, http.StatusNotFound)
	o.call("GET", "/v1/artifacts/not-a-uuid", admin, nil, http.StatusNotFound)

	// Observations: two nodes made directly, named by id.
	nodes, err := e.store.UpsertNodes(context.Background(), "org-a", []vigil.NodeRef{
		{Type: vigil.NodeIP, Value: "203.0.113.7", Key: true}, {Type: vigil.NodeHost, Value: "web-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	obs1 := o.ok("POST", "/v1/observations", admin, map[string]any{
		"type": "network", "description": "port scan from 203.0.113.7", "severity": "high",
		"node_ids": []string{nodes[0].ID}, "artifact_ids": artIDs,
	}, http.StatusCreated).data()
	obs2 := o.ok("POST", "/api/v1/observations", admin, map[string]any{
		"type": "auth", "description": "ssh brute force", "node_ids": []string{nodes[0].ID, nodes[1].ID},
	}, http.StatusCreated).data()
	if obs2["severity"] != "medium" || obs1["incident_id"] == nil || obs1["incident_id"] != obs2["incident_id"] {
		t.Errorf("observations = %v / %v", obs1, obs2)
	}
	obsID, incID := obs1["id"].(string), obs1["incident_id"].(string)
	o.bad("POST", "/v1/observations", admin, map[string]any{"description": "x"}, "type")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "auth"}, "description")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "Bad Type", "description": "x"}, "type")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": ""}, "description")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": "x", "severity": "urgent"}, "severity")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": "x", "node_ids": []string{"nope"}}, "node_ids[0]")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": "x", "colour": "red"}, "colour")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": 7, "description": "x"}, "type")
	o.call("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": "x", "node_ids": []string{oasMissingID}}, http.StatusBadRequest)
	o.call("POST", "/v1/observations", admin, `{"type":"auth","description":"x"} {}`, http.StatusBadRequest)
	o.call("POST", "/v1/observations", admin, `[]`, http.StatusBadRequest)
	o.raw("POST", "/v1/observations", admin, "application/xml", []byte(`<observation/>`), http.StatusUnsupportedMediaType)
	o.raw("POST", "/v1/observations", admin, "", []byte(`{"type":"auth","description":"no content type"}`), http.StatusCreated)
	big := append(append([]byte(`{"type":"auth","description":"`), bytes.Repeat([]byte("a"), oasBodyLimit+1024)...), `"}`...)
	o.raw("POST", "/v1/observations", admin, "application/json", big, http.StatusRequestEntityTooLarge)

	// Nodes named by value (an addition to the contract).
	if !o.requestValid("POST", "/v1/observations", map[string]any{"type": "auth", "description": "x",
		"nodes": []any{map[string]any{"type": "IP", "value": "198.51.100.7"}}}) {
		t.Errorf("documented ObservationCreate refuses nodes named by value")
	}
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": "x",
		"nodes": []any{map[string]any{"type": "Address", "value": "198.51.100.7"}}}, "nodes[0].type")
	o.bad("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": "x",
		"nodes": []any{map[string]any{"type": "IP"}}}, "nodes[0].value")
	o.bad("PUT", "/v1/observations/"+obsID, admin, map[string]any{
		"nodes": []any{map[string]any{"type": "IP", "value": "198.51.100.7", "key": true}}}, "key")
	o.call("POST", "/v1/observations", admin, map[string]any{"type": "auth", "description": "x",
		"nodes": []any{map[string]any{"type": "IP", "value": "198.51.100.300"}}}, http.StatusBadRequest)

	ol := o.call("GET", "/v1/observations", admin, nil, http.StatusOK)
	if ol.data()["total"] != float64(3) {
		t.Errorf("observations total = %v", ol.data()["total"])
	}
	o.call("GET", "/api/v1/observations?type=network&severity=high&start=2000-01-01T00:00:00Z&end=2200-01-01T00:00:00Z&limit=1&offset=0", admin, nil, http.StatusOK)
	o.badQuery("/v1/observations", admin, "severity", "urgent", true)
	o.badQuery("/v1/observations", admin, "limit", "abc", true)
	o.badQuery("/v1/observations", admin, "offset", "-5", true)
	o.badQuery("/v1/observations", admin, "end", "2024-13-01", true)
	o.call("GET", "/v1/observations?start=2025-01-01T00:00:00Z&end=2024-01-01T00:00:00Z", admin, nil, http.StatusBadRequest)

	got := o.call("GET", "/v1/observations/"+obsID, admin, nil, http.StatusOK)
	if got.data()["incident_id"] != incID {
		t.Errorf("observation = %s", got.Raw)
	}
	o.call("GET", "/v1/observations/"+oasMissingID, admin, nil, http.StatusNotFound)
	o.call("GET", "/v1/observations/not-a-uuid", admin, nil, http.StatusNotFound)
	o.call("GET", "/v1/observations/"+obsID, other, nil, http.StatusNotFound)
	upd := o.ok("PUT", "/v1/observations/"+obsID, admin, map[string]any{"severity": "critical"}, http.StatusOK)
	if upd.data()["severity"] != "critical" || upd.data()["description"] != "port scan from 203.0.113.7" {
		t.Errorf("updated observation = %s", upd.Raw)
	}
	o.ok("PUT", "/api/v1/observations/"+obsID, admin, map[string]any{}, http.StatusOK)
	o.bad("PUT", "/v1/observations/"+obsID, admin, map[string]any{"severity": "urgent"}, "severity")
	o.bad("PUT", "/v1/observations/"+obsID, admin, map[string]any{"id": oasMissingID}, "id")
	o.call("PUT", "/v1/observations/"+oasMissingID, admin, map[string]any{"severity": "low"}, http.StatusNotFound)
	o.raw("PUT", "/v1/observations/"+obsID, admin, "text/html", []byte(`{}`), http.StatusUnsupportedMediaType)

	// Incidents.
	il := o.call("GET", "/v1/incidents", admin, nil, http.StatusOK)
	if il.data()["total"] != float64(2) {
		t.Errorf("incidents = %s", il.Raw)
	}
	o.call("GET", "/v1/incidents?status=1&severity=critical&start=2000-01-01T00:00:00Z&limit=5&offset=0", admin, nil, http.StatusOK)
	if il := o.call("GET", "/v1/incidents?sort=first_event&event_start=2024-05-01T00:00:00Z&event_end=2200-01-01T00:00:00Z", admin, nil, http.StatusOK); il.data()["total"] != float64(2) {
		t.Errorf("incidents by event time = %s", il.Raw)
	}
	o.call("GET", "/v1/incidents?sort=last_event", admin, nil, http.StatusOK)
	o.badQuery("/v1/incidents", admin, "sort", "happened", true)
	o.badQuery("/v1/incidents", admin, "event_start", "yesterday", true)
	o.badQuery("/v1/incidents?event_end=2024-01-01T00:00:00Z", admin, "event_start", "2025-01-01T00:00:00Z", false)
	o.badQuery("/v1/incidents", admin, "status", "0", true)
	o.badQuery("/v1/incidents", admin, "status", "6", true)
	o.badQuery("/v1/incidents", admin, "status", "new", true)
	o.badQuery("/v1/incidents", admin, "severity", "HIGH", true)
	o.badQuery("/v1/incidents", admin, "limit", "0", true)
	inc := o.call("GET", "/v1/incidents/"+incID, admin, nil, http.StatusOK).data()
	// The two named nodes and the entities of obs1's artifacts: the auth
	// line's rhost and host, the alert's destination (its source is
	// 203.0.113.7, named already).
	if len(inc["nodes"].([]any)) != 5 || len(inc["observations"].([]any)) != 2 || inc["severity"] != "critical" {
		t.Errorf("incident = %v", inc)
	}
	o.call("GET", "/v1/incidents/not-a-uuid", admin, nil, http.StatusBadRequest)
	o.call("GET", "/v1/incidents/"+oasMissingID, admin, nil, http.StatusNotFound)
	o.call("GET", "/api/v1/incidents/"+incID, other, nil, http.StatusNotFound)
	// Its parts, a page at a time (additions to the contract).
	if got := o.call("GET", "/v1/incidents/"+incID+"/observations?limit=1&offset=1", admin, nil, http.StatusOK).data(); got["total"] != float64(2) {
		t.Errorf("incident observations = %v", got)
	}
	if got := o.call("GET", "/api/v1/incidents/"+incID+"/nodes?limit=2", admin, nil, http.StatusOK).data(); got["total"] != float64(5) {
		t.Errorf("incident nodes = %v", got)
	}
	if got := o.call("GET", "/v1/incidents/"+incID+"/artifacts", admin, nil, http.StatusOK).data(); got["total"] != float64(2) {
		t.Errorf("incident artifacts = %v", got)
	}
	for _, part := range []string{"observations", "nodes", "artifacts"} {
		o.badQuery("/v1/incidents/"+incID+"/"+part, admin, "limit", "0", true)
		o.call("GET", "/v1/incidents/not-a-uuid/"+part, admin, nil, http.StatusBadRequest)
		o.call("GET", "/v1/incidents/"+oasMissingID+"/"+part, admin, nil, http.StatusNotFound)
		o.call("GET", "/v1/incidents/"+incID+"/"+part, other, nil, http.StatusNotFound)
	}

	// Nodes (an addition to the contract).
	nl := o.call("GET", "/v1/nodes", admin, nil, http.StatusOK)
	if nl.data()["total"] != float64(5) {
		t.Errorf("nodes = %s", nl.Raw)
	}
	nl = o.call("GET", "/api/v1/nodes?type=IP&value=203.0.113.7&limit=10&offset=0", admin, nil, http.StatusOK)
	if nl.data()["total"] != float64(1) || nl.data()["nodes"].([]any)[0].(map[string]any)["id"] != nodes[0].ID {
		t.Errorf("nodes by value = %s", nl.Raw)
	}
	o.call("GET", "/v1/nodes?type=Host&prefix=WEB", admin, nil, http.StatusOK)
	o.badQuery("/v1/nodes", admin, "type", "ip", true)
	o.badQuery("/v1/nodes?type=IP", admin, "value", "not-an-ip", false)
	o.badQuery("/v1/nodes", admin, "limit", "1001", true)
	o.badQuery("/v1/nodes", admin, "prefix", "a\x01", false)
	o.call("GET", "/v1/nodes/"+nodes[1].ID, admin, nil, http.StatusOK)
	o.call("GET", "/api/v1/nodes/"+nodes[1].ID, other, nil, http.StatusNotFound)
	o.call("GET", "/v1/nodes/"+oasMissingID, admin, nil, http.StatusNotFound)

	st := o.ok("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 3}, http.StatusOK)
	if d := st.data(); d["status_name"] != "Resolved" || d["classification"] != "true_positive" || d["resolved_at"] == nil {
		t.Errorf("status = %s", st.Raw)
	}
	o.ok("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 3}, http.StatusOK)
	st = o.ok("PUT", "/api/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 2}, http.StatusOK)
	if d := st.data(); d["classification"] != nil || d["resolved_at"] != nil {
		t.Errorf("re-opened status = %s", st.Raw)
	}
	o.ok("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 4}, http.StatusOK)
	// An incident merged into another (an observation bridged them) leaves
	// the list unless asked for, and takes no status.
	mergeTok := e.token("org-merge", "admin")
	ipNode := func(v string) map[string]any { return map[string]any{"type": "IP", "value": v} }
	kept := o.ok("POST", "/v1/observations", mergeTok, map[string]any{"type": "network", "description": "scan", "nodes": []any{ipNode("192.0.2.61")}}, http.StatusCreated).data()
	gone := o.ok("POST", "/v1/observations", mergeTok, map[string]any{"type": "network", "description": "scan", "nodes": []any{ipNode("192.0.2.62")}}, http.StatusCreated).data()
	o.ok("POST", "/v1/observations", mergeTok, map[string]any{"type": "network", "description": "both", "nodes": []any{ipNode("192.0.2.61"), ipNode("192.0.2.62")}}, http.StatusCreated)
	if l := o.call("GET", "/v1/incidents?merged=only", mergeTok, nil, http.StatusOK).data(); l["total"] != float64(1) {
		t.Errorf("merged incidents = %v", l)
	}
	o.call("GET", "/api/v1/incidents?merged=include&status=1", mergeTok, nil, http.StatusOK)
	o.badQuery("/v1/incidents", mergeTok, "merged", "all", true)
	if r := o.call("PUT", "/v1/incidents/"+gone["incident_id"].(string)+"/status", mergeTok, map[string]any{"status": 4}, http.StatusConflict); !strings.Contains(string(r.Raw), kept["incident_id"].(string)) {
		t.Errorf("status of a merged incident: %s, want the incident it went to named", r.Raw)
	}
	if h := o.call("GET", "/v1/incidents/"+incID, admin, nil, http.StatusOK).data()["history"].([]any); len(h) != 3 {
		t.Errorf("history = %v", h)
	}
	// The history has every change, the status changes among them.
	hist := o.call("GET", "/v1/incidents/"+incID+"/history?limit=100", admin, nil, http.StatusOK)
	var changes int
	for _, ev := range hist.data()["events"].([]any) {
		if ev.(map[string]any)["type"] == "incident.status_changed" {
			changes++
		}
	}
	if changes != 3 || hist.data()["total"].(float64) < 5 {
		t.Errorf("incident history = %s", hist.Raw)
	}
	o.call("GET", "/api/v1/incidents/"+incID+"/history?limit=1&offset=1", admin, nil, http.StatusOK)
	o.badQuery("/v1/incidents/"+incID+"/history", admin, "limit", "0", true)
	o.call("GET", "/v1/incidents/not-a-uuid/history", admin, nil, http.StatusBadRequest)
	o.call("GET", "/v1/incidents/"+oasMissingID+"/history", admin, nil, http.StatusNotFound)
	o.call("GET", "/v1/incidents/"+incID+"/history", other, nil, http.StatusNotFound)
	oasRollup(t, o)
	// Case work: assignee, tags, comments.
	caseUpd := o.ok("PUT", "/v1/incidents/"+incID, admin, map[string]any{"assignee": "bob@example.org", "tags": []string{"vip", "c2"}}, http.StatusOK)
	if d := caseUpd.data(); d["assignee"] != "bob@example.org" || len(d["tags"].([]any)) != 2 || d["history"] == nil {
		t.Errorf("case update = %s", caseUpd.Raw)
	}
	o.call("GET", "/v1/incidents?assignee=bob@example.org&tag=vip", admin, nil, http.StatusOK)
	o.badQuery("/v1/incidents", admin, "tag", "no spaces", true)
	o.badQuery("/v1/incidents", admin, "assignee", "a\x01", false)
	o.bad("PUT", "/v1/incidents/"+incID, admin, map[string]any{"status": 2}, "status")
	o.bad("PUT", "/v1/incidents/"+incID, admin, map[string]any{}, "body")
	o.bad("PUT", "/v1/incidents/"+incID, admin, map[string]any{"tags": []string{"ok", "not ok"}}, "tags[1]")
	o.bad("PUT", "/v1/incidents/"+incID, admin, map[string]any{"assignee": 7}, "assignee")
	o.ok("PUT", "/api/v1/incidents/"+incID, admin, map[string]any{"assignee": nil, "tags": []string{}}, http.StatusOK)
	o.call("PUT", "/v1/incidents/"+oasMissingID, admin, map[string]any{"tags": []string{}}, http.StatusNotFound)
	o.call("PUT", "/v1/incidents/"+incID, other, map[string]any{"tags": []string{}}, http.StatusNotFound)
	o.raw("PUT", "/v1/incidents/"+incID, admin, "text/html", []byte(`{}`), http.StatusUnsupportedMediaType)
	com := o.ok("POST", "/v1/incidents/"+incID+"/comments", admin, map[string]any{"body": "Looks like **C2**."}, http.StatusCreated).data()
	comID := com["id"].(string)
	o.bad("POST", "/v1/incidents/"+incID+"/comments", admin, map[string]any{"body": ""}, "body")
	o.bad("POST", "/v1/incidents/"+incID+"/comments", admin, map[string]any{"body": strings.Repeat("x", 16385)}, "body")
	o.call("POST", "/v1/incidents/"+oasMissingID+"/comments", admin, map[string]any{"body": "x"}, http.StatusNotFound)
	o.raw("POST", "/v1/incidents/"+incID+"/comments", admin, "text/html", []byte(`{}`), http.StatusUnsupportedMediaType)
	if cl := o.call("GET", "/v1/incidents/"+incID+"/comments?limit=10", admin, nil, http.StatusOK); cl.data()["total"] != float64(1) {
		t.Errorf("comments = %s", cl.Raw)
	}
	o.badQuery("/v1/incidents/"+incID+"/comments", admin, "offset", "-1", true)
	o.call("GET", "/v1/incidents/"+oasMissingID+"/comments", admin, nil, http.StatusNotFound)
	o.ok("PUT", "/v1/incidents/"+incID+"/comments/"+comID, admin, map[string]any{"body": "Edited."}, http.StatusOK)
	o.bad("PUT", "/v1/incidents/"+incID+"/comments/"+comID, admin, map[string]any{"text": "x"}, "text")
	o.call("PUT", "/v1/incidents/"+incID+"/comments/"+comID, e.token("org-a", "incidents:write"), map[string]any{"body": "x"}, http.StatusOK)
	o.call("PUT", "/v1/incidents/"+incID+"/comments/"+oasMissingID, admin, map[string]any{"body": "x"}, http.StatusNotFound)
	o.raw("PUT", "/v1/incidents/"+incID+"/comments/"+comID, admin, "text/html", []byte(`{}`), http.StatusUnsupportedMediaType)
	o.call("DELETE", "/v1/incidents/not-a-uuid/comments/"+comID, admin, nil, http.StatusBadRequest)
	o.call("DELETE", "/v1/incidents/"+incID+"/comments/"+comID, other, nil, http.StatusNotFound)
	o.call("DELETE", "/v1/incidents/"+incID+"/comments/"+comID, admin, nil, http.StatusOK)
	o.call("DELETE", "/v1/incidents/"+incID+"/comments/"+comID, admin, nil, http.StatusNotFound)
	// The live stream, read to the end with follow=false.
	evs := o.call("GET", "/v1/events?follow=false&last_event_id=0&types=incident.created,incident.commented", admin, nil, http.StatusOK)
	if n := strings.Count(string(evs.Raw), "event: incident.commented\n"); n != 1 || !strings.Contains(string(evs.Raw), "event: incident.created\n") {
		t.Errorf("event stream = %s", evs.Raw)
	}
	o.badQuery("/v1/events", admin, "types", "incident.deleted", false)
	o.badQuery("/v1/events", admin, "follow", "maybe", false)
	o.badQuery("/v1/events", admin, "last_event_id", "-1", true)
	var open []*http.Response
	for range api.DefaultMaxOrgStreams {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := e.srv.Client().Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %v %v", err, resp)
		}
		open = append(open, resp)
	}
	o.call("GET", "/v1/events", admin, nil, http.StatusTooManyRequests)
	for _, resp := range open {
		resp.Body.Close()
	}
	o.bad("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 6}, "status")
	o.bad("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 0}, "status")
	o.bad("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 2.5}, "status")
	o.bad("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{}, "status")
	o.bad("PUT", "/v1/incidents/"+incID+"/status", admin, map[string]any{"status": 2, "note": "x"}, "note")
	o.call("PUT", "/v1/incidents/not-a-uuid/status", admin, map[string]any{"status": 2}, http.StatusBadRequest)
	o.call("PUT", "/v1/incidents/"+oasMissingID+"/status", admin, map[string]any{"status": 2}, http.StatusNotFound)

	o.call("DELETE", "/v1/observations/"+obs2["id"].(string), admin, nil, http.StatusOK)
	o.call("DELETE", "/api/v1/observations/"+obs2["id"].(string), admin, nil, http.StatusNotFound)

	// Classification rules.
	rule := o.ok("POST", "/v1/classification-rules", admin, map[string]any{
		"name": "internal targets", "priority": 10, "severity": "critical", "target_infrastructure": true, "enabled": false,
		"conditions": map[string]any{"all": []any{
			map[string]any{"field": "observation.type", "op": "in", "value": []string{"network", "auth"}},
			map[string]any{"not": map[string]any{"field": "node.value", "op": "cidr", "value": []string{"192.0.2.0/24"}}},
			map[string]any{"any": []any{
				map[string]any{"field": "event.source.ip", "op": "exists"},
				map[string]any{"field": "incident.artifact_count", "op": "gte", "value": 2},
			}},
		}},
	}, http.StatusCreated).data()
	ruleID := rule["id"].(string)
	minRule := o.ok("POST", "/api/v1/classification-rules", admin, map[string]any{"name": "all", "priority": 0, "severity": "low"}, http.StatusCreated).data()
	if minRule["enabled"] != true || minRule["target_infrastructure"] != false {
		t.Errorf("rule defaults = %v", minRule)
	}
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"priority": 1, "severity": "low"}, "name")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "severity": "low"}, "priority")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "priority": 1}, "severity")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "   ", "priority": 1, "severity": "low"}, "name")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "priority": -1, "severity": "low"}, "priority")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "priority": 1, "severity": "low",
		"conditions": map[string]any{"all": []any{map[string]any{"field": "observation.type", "op": "like", "value": "x"}}}}, "conditions.all[0].op")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "priority": 1, "severity": "low",
		"conditions": map[string]any{"field": "incident.colour", "op": "eq", "value": "x"}}, "conditions.field")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "priority": 1, "severity": "low",
		"conditions": map[string]any{"field": "observation.type", "op": "eq"}}, "conditions.value")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "priority": 1, "severity": "low",
		"conditions": map[string]any{"all": []any{}}}, "conditions.all")
	o.bad("POST", "/v1/classification-rules", admin, map[string]any{"name": "x", "priority": 1, "severity": "low", "org_id": "org-b"}, "org_id")
	o.ok("POST", "/v1/classification-rules/preview", admin, map[string]any{"severity": "high",
		"conditions": map[string]any{"field": "incident.severity", "op": "gte", "value": "low"}}, http.StatusOK)
	o.ok("POST", "/api/v1/classification-rules/preview", admin, map[string]any{"id": ruleID, "name": "x", "priority": 1}, http.StatusOK)
	o.bad("POST", "/v1/classification-rules/preview", admin, map[string]any{"priority": -1}, "priority")
	o.bad("POST", "/v1/classification-rules/preview", admin, map[string]any{"conditions": map[string]any{"field": "incident.colour", "op": "eq", "value": "x"}}, "conditions.field")
	o.call("GET", "/v1/me", admin, nil, http.StatusOK)
	o.call("GET", "/api/v1/me", "", nil, http.StatusUnauthorized)
	o.badQuery("/v1/incidents", admin, "sort", "newest", true)
	o.badQuery("/v1/incidents", admin, "q", strings.Repeat("x", 201), true)
	rl := o.call("GET", "/v1/classification-rules?limit=10", admin, nil, http.StatusOK)
	if rs := rl.data()["rules"].([]any); len(rs) != 2 || rs[0].(map[string]any)["name"] != "all" {
		t.Errorf("rules = %s", rl.Raw)
	}
	o.badQuery("/v1/classification-rules", admin, "limit", "0", true)
	o.badQuery("/v1/classification-rules", admin, "offset", "x", true)
	// An org has at most vigil.MaxRules rules: one more is a 409.
	for i := range vigil.MaxRules {
		now := time.Now()
		if err := e.store.CreateRule(context.Background(), "org-full", &vigil.Rule{ID: vigil.NewID(), Name: fmt.Sprint("r", i),
			Severity: "low", Conditions: json.RawMessage("{}"), CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if r := o.call("POST", "/v1/classification-rules", e.token("org-full", "admin"), map[string]any{"name": "x", "priority": 1, "severity": "low"},
		http.StatusConflict); r.errCode() != vigil.ECONFLICT {
		t.Errorf("rule %d: %s", vigil.MaxRules+1, r.Raw)
	}
	o.call("GET", "/v1/classification-rules/"+ruleID, admin, nil, http.StatusOK)
	o.call("GET", "/v1/classification-rules/"+oasMissingID, admin, nil, http.StatusNotFound)
	o.call("GET", "/v1/classification-rules/"+ruleID, other, nil, http.StatusNotFound)
	o.ok("PUT", "/v1/classification-rules/"+ruleID, admin, map[string]any{"enabled": true, "conditions": map[string]any{}}, http.StatusOK)
	o.bad("PUT", "/v1/classification-rules/"+ruleID, admin, map[string]any{"severity": "none"}, "severity")
	o.bad("PUT", "/v1/classification-rules/"+ruleID, admin, map[string]any{"conditions": []any{}}, "conditions")
	o.call("PUT", "/v1/classification-rules/"+oasMissingID, admin, map[string]any{"enabled": true}, http.StatusNotFound)
	o.call("DELETE", "/v1/classification-rules/"+ruleID, e.token("org-a", "signals:write"), nil, http.StatusForbidden)
	o.call("DELETE", "/v1/classification-rules/"+ruleID, e.token("org-a", "signals:manage"), nil, http.StatusOK)
	o.call("DELETE", "/v1/classification-rules/"+ruleID, admin, nil, http.StatusNotFound)

	// Suppressions.
	leaf := func(field, op string, value any) map[string]any {
		return map[string]any{"field": field, "op": op, "value": value}
	}
	sup := o.ok("POST", "/v1/suppressions", admin, map[string]any{
		"name": "our own scanner", "reason": "weekly authorized scan from the security team's host", "enabled": true,
		"expires_at": "2199-01-01T00:00:00Z",
		"conditions": map[string]any{"all": []any{
			leaf("signal.detector", "in", []string{"port_scan", "host_sweep"}),
			leaf("signal.source_ip", "cidr", "10.9.0.0/16"),
			map[string]any{"not": leaf("event.destination.port", "eq", 22)},
		}},
	}, http.StatusCreated).data()
	if sup["active"] != true || sup["suppressed_count"] != float64(0) || sup["last_suppressed_at"] != nil || sup["created_by"] != "analyst@org-a" {
		t.Errorf("created suppression = %v", sup)
	}
	supID := sup["id"].(string)
	minSup := o.ok("POST", "/api/v1/suppressions", admin, map[string]any{"name": "noisy signature",
		"conditions": leaf("signal.signature", "prefix", "ET POLICY")}, http.StatusCreated).data()
	if minSup["enabled"] != true || minSup["expires_at"] != nil || minSup["reason"] != "" {
		t.Errorf("defaults = %v", minSup)
	}
	cond := leaf("signal.user", "eq", "backup")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"conditions": cond}, "name")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": "x"}, "conditions")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": "x", "conditions": map[string]any{}}, "conditions")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": "x", "conditions": map[string]any{"all": []any{
		leaf("incident.severity", "eq", "high")}}}, "conditions.all[0].field")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": "x", "conditions": leaf("signal.user", "like", "b")}, "conditions.op")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": "x", "conditions": cond, "expires_at": "tomorrow"}, "expires_at")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": "x", "conditions": cond, "reason": strings.Repeat("r", 2001)}, "reason")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": " ", "conditions": cond}, "name")
	o.bad("POST", "/v1/suppressions", admin, map[string]any{"name": "x", "conditions": cond, "org_id": "org-b"}, "org_id")
	sl := o.call("GET", "/v1/suppressions?limit=1", admin, nil, http.StatusOK)
	if sl.data()["total"] != float64(2) || len(sl.data()["suppressions"].([]any)) != 1 {
		t.Errorf("suppressions list = %s", sl.Raw)
	}
	o.badQuery("/v1/suppressions", admin, "limit", "0", true)
	o.badQuery("/v1/suppressions", admin, "offset", "-1", true)
	o.call("GET", "/v1/suppressions/"+supID, admin, nil, http.StatusOK)
	o.call("GET", "/api/v1/suppressions/"+supID, other, nil, http.StatusNotFound)
	o.call("GET", "/v1/suppressions/"+oasMissingID, admin, nil, http.StatusNotFound)
	if u := o.ok("PUT", "/v1/suppressions/"+supID, admin, map[string]any{"enabled": false, "expires_at": nil}, http.StatusOK).data(); u["active"] != false || u["expires_at"] != nil {
		t.Errorf("updated suppression = %v", u)
	}
	o.ok("PUT", "/v1/suppressions/"+supID, admin, map[string]any{"expires_at": "2020-01-01T00:00:00Z", "enabled": true}, http.StatusOK)
	o.bad("PUT", "/v1/suppressions/"+supID, admin, map[string]any{"conditions": leaf("observation.type", "eq", "auth")}, "conditions.field")
	o.bad("PUT", "/v1/suppressions/"+supID, admin, map[string]any{"expires_at": 5}, "expires_at")
	o.call("PUT", "/v1/suppressions/"+supID, other, map[string]any{"enabled": true}, http.StatusNotFound)
	o.call("DELETE", "/v1/suppressions/"+supID, e.token("org-a", "signals:write"), nil, http.StatusForbidden)
	o.call("DELETE", "/v1/suppressions/"+supID, e.token("org-a", "signals:manage"), nil, http.StatusOK)
	o.call("DELETE", "/v1/suppressions/"+supID, admin, nil, http.StatusNotFound)
	// An org has at most vigil.MaxSuppressions.
	for i := 0; i < vigil.MaxSuppressions-1; i++ {
		now := time.Now()
		if err := e.store.CreateSuppression(context.Background(), "org-a", &vigil.Suppression{ID: vigil.NewID(), Name: "filler", Enabled: false,
			Conditions: json.RawMessage(`{"field":"signal.key","op":"eq","value":"x"}`), CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatalf("filler %d: %v", i, err)
		}
	}
	if r := o.call("POST", "/v1/suppressions", admin, map[string]any{"name": "one too many", "conditions": cond}, http.StatusConflict); r.errCode() != "conflict" {
		t.Errorf("limit: %s", r.Raw)
	}

	// API keys.
	key := o.ok("POST", "/v1/api-keys", admin, map[string]any{"name": "filebeat"}, http.StatusCreated).data()
	keyID := key["id"].(string)
	o.bad("POST", "/v1/api-keys", admin, map[string]any{}, "name")
	o.bad("POST", "/v1/api-keys", admin, map[string]any{"name": ""}, "name")
	o.bad("POST", "/v1/api-keys", admin, map[string]any{"name": "x", "permissions": []string{"admin"}}, "permissions")
	o.call("GET", "/v1/api-keys", admin, nil, http.StatusOK)
	o.badQuery("/v1/api-keys", admin, "limit", "0", true)
	// The audit log of the writes above, and a bad filter.
	o.call("GET", "/v1/audit?resource_type=api_key", admin, nil, http.StatusOK)
	o.badQuery("/v1/audit", admin, "resource_type", "bogus", true)
	o.call("GET", "/v1/api-keys/"+keyID, admin, nil, http.StatusOK)
	o.call("GET", "/v1/api-keys/"+keyID, other, nil, http.StatusNotFound)
	o.call("DELETE", "/v1/api-keys/"+keyID, other, nil, http.StatusNotFound)
	o.call("DELETE", "/api/v1/api-keys/"+keyID, admin, nil, http.StatusOK)
	for i := 0; i < vigil.MaxAPIKeys-1; i++ {
		if err := e.store.CreateAPIKey(context.Background(), "org-a", &vigil.APIKey{ID: vigil.NewID(), Name: "filler",
			Permissions: []string{vigil.PermSignalsWrite}, Hash: []byte{1}, CreatedAt: time.Now()}); err != nil {
			t.Fatalf("filler key %d: %v", i, err)
		}
	}
	if r := o.call("POST", "/v1/api-keys", admin, map[string]any{"name": "one too many"}, http.StatusConflict); r.errCode() != "conflict" {
		t.Errorf("key limit: %s", r.Raw)
	}
	// Webhooks.
	hook := o.ok("POST", "/v1/webhooks", admin, map[string]any{"url": "https://203.0.113.10/hook",
		"event_types": []string{"incident.created", "incident.commented"}}, http.StatusCreated).data()
	hookID := hook["id"].(string)
	if sec, _ := hook["secret"].(string); !strings.HasPrefix(sec, "whsec_") || len(sec) < 40 {
		t.Errorf("created webhook secret %q", sec)
	}
	o.bad("POST", "/v1/webhooks", admin, map[string]any{"event_types": []string{"incident.created"}}, "url")
	// The server's policy on addresses is no schema's: refused with 400
	// naming url, though the document accepts the shape.
	refusedURL := func(method, path string, body map[string]any) {
		t.Helper()
		if r := o.call(method, path, admin, body, http.StatusBadRequest); r.field() != "url" {
			t.Errorf("%s %s %v: 400 names %q, want url", method, path, body, r.field())
		}
	}
	refusedURL("POST", "/v1/webhooks", map[string]any{"url": "http://203.0.113.10/", "event_types": []string{"incident.created"}})
	refusedURL("POST", "/v1/webhooks", map[string]any{"url": "https://169.254.169.254/", "event_types": []string{"incident.created"}})
	o.bad("POST", "/v1/webhooks", admin, map[string]any{"url": "https://203.0.113.10/", "event_types": []string{"incident.merged"}}, "event_types")
	o.bad("POST", "/v1/webhooks", admin, map[string]any{"url": "https://203.0.113.10/", "event_types": []string{"incident.created"}, "secret": "short"}, "secret")
	o.call("GET", "/v1/webhooks", admin, nil, http.StatusOK)
	o.badQuery("/v1/webhooks", admin, "limit", "0", true)
	if g := o.call("GET", "/v1/webhooks/"+hookID, admin, nil, http.StatusOK).data(); g["secret"] != nil {
		t.Errorf("GET shows the webhook's secret: %v", g)
	}
	o.call("GET", "/v1/webhooks/"+hookID, other, nil, http.StatusNotFound)
	if u := o.ok("PUT", "/v1/webhooks/"+hookID, admin, map[string]any{"enabled": false}, http.StatusOK).data(); u["enabled"] != false {
		t.Errorf("updated webhook = %v", u)
	}
	refusedURL("PUT", "/v1/webhooks/"+hookID, map[string]any{"url": "https://[::1]/"})
	o.bad("PUT", "/v1/webhooks/"+hookID, admin, map[string]any{"secret": "0123456789abcdef0123"}, "secret")
	o.call("PUT", "/v1/webhooks/"+hookID, other, map[string]any{"enabled": true}, http.StatusNotFound)
	o.call("GET", "/v1/webhooks/"+hookID+"/deliveries", admin, nil, http.StatusOK)
	o.badQuery("/v1/webhooks/"+hookID+"/deliveries", admin, "offset", "-1", true)
	o.call("GET", "/v1/webhooks/"+hookID+"/deliveries", other, nil, http.StatusNotFound)
	o.call("DELETE", "/v1/webhooks/"+hookID, other, nil, http.StatusNotFound)
	o.call("DELETE", "/api/v1/webhooks/"+hookID, admin, nil, http.StatusOK)
	for i := 0; i < vigil.MaxWebhooks; i++ {
		now := time.Now()
		if err := e.store.CreateWebhook(context.Background(), "org-a", &vigil.Webhook{ID: vigil.NewID(), URL: "https://203.0.113.10/",
			EventTypes: []string{vigil.EventCreated}, Secret: "whsec_filler-secret", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatalf("filler webhook %d: %v", i, err)
		}
	}
	if r := o.call("POST", "/v1/webhooks", admin, map[string]any{"url": "https://203.0.113.10/", "event_types": []string{"incident.created"}},
		http.StatusConflict); r.errCode() != "conflict" {
		t.Errorf("webhook limit: %s", r.Raw)
	}
	// Detection rules (Sigma).
	pamRule := []byte("title: PAM authentication failure\nid: 6e0d7c86-2b1f-4f6e-9a57-3b1a1c5e2f10\nname: pam_failure\nlevel: low\n" +
		"logsource:\n    product: linux\n    service: auth\ndetection:\n    keywords:\n        - 'authentication failure'\n    condition: keywords\n")
	yamlCT := "application/yaml"
	dr := o.raw("POST", "/v1/detection-rules", admin, yamlCT, pamRule, http.StatusCreated).data()
	if dr["enabled"] != true || dr["kind"] != "detection" || dr["sigma_id"] != "6e0d7c86-2b1f-4f6e-9a57-3b1a1c5e2f10" ||
		dr["level"] != "low" || dr["created_by"] != "analyst@org-a" || len(dr["sources"].([]any)) == 0 {
		t.Errorf("created detection rule = %v", dr)
	}
	drID := dr["id"].(string)
	o.raw("POST", "/v1/detection-rules", admin, yamlCT, pamRule, http.StatusConflict)
	jsonRule := []byte(`{"title": "Onion look-ups", "logsource": {"category": "dns"}, "detection": {"s": {"query|endswith": ".onion"}, "condition": "s"}}`)
	o.raw("POST", "/api/v1/detection-rules", admin, "application/json", jsonRule, http.StatusCreated)
	for _, c := range []struct{ body, field string }{
		{"title: t\nlogsource:\n    product: macos\ndetection:\n    s:\n        Image: x\n    condition: s\n", "logsource.product"},
		{"title: t\nlogsource:\n    category: dns\ndetection:\n    s:\n        query|sounds_like: x\n    condition: s\n", "detection.s.query|sounds_like"},
		{"title: t\nlogsource:\n    category: dns\ndetection:\n    s:\n        query: x\n    condition: s and (\n", "detection.condition"},
		{"title: t\nlogsource:\n    category: dns\ndetection:\n    s:\n        Fancy: x\n    condition: s\n", "detection.s.Fancy"},
		{"", "body"},
		{"title: [", "body"},
	} {
		if r := o.raw("POST", "/v1/detection-rules", admin, yamlCT, []byte(c.body), http.StatusBadRequest); r.field() != c.field {
			t.Errorf("%q: 400 names %q, want %q (%s)", c.body, r.field(), c.field, r.Raw)
		}
	}
	o.raw("POST", "/v1/detection-rules", admin, "image/png", pamRule, http.StatusUnsupportedMediaType)
	drl := o.call("GET", "/v1/detection-rules?limit=1", admin, nil, http.StatusOK)
	if drl.data()["total"] != float64(2) || len(drl.data()["detection_rules"].([]any)) != 1 {
		t.Errorf("detection rules list = %s", drl.Raw)
	}
	o.badQuery("/v1/detection-rules", admin, "limit", "0", true)
	o.call("GET", "/v1/detection-rules/"+drID, admin, nil, http.StatusOK)
	o.call("GET", "/v1/detection-rules/"+drID, other, nil, http.StatusNotFound)
	if d := o.call("POST", "/v1/detection-rules/"+drID+"/disable", admin, nil, http.StatusOK).data(); d["enabled"] != false {
		t.Errorf("disabled rule = %v", d)
	}
	o.call("POST", "/v1/detection-rules/"+drID+"/enable", other, nil, http.StatusNotFound)
	if d := o.call("POST", "/v1/detection-rules/"+drID+"/enable", admin, nil, http.StatusOK).data(); d["enabled"] != true {
		t.Errorf("enabled rule = %v", d)
	}
	renamed := bytes.Replace(pamRule, []byte("title: PAM authentication failure"), []byte("title: PAM failures"), 1)
	if d := o.raw("PUT", "/v1/detection-rules/"+drID, admin, yamlCT, renamed, http.StatusOK).data(); d["title"] != "PAM failures" || d["enabled"] != true {
		t.Errorf("replaced rule = %v", d)
	}
	o.raw("PUT", "/v1/detection-rules/"+oasMissingID, admin, yamlCT, renamed, http.StatusNotFound)
	// Another rule may not take this one's Sigma id.
	twin := o.raw("POST", "/v1/detection-rules", admin, yamlCT, []byte("title: twin\nlogsource:\n    product: linux\ndetection:\n    k:\n        - x\n    condition: k\n"), http.StatusCreated).data()
	o.raw("PUT", "/v1/detection-rules/"+twin["id"].(string), admin, yamlCT, pamRule, http.StatusConflict)
	// A test over lines, and over the org's stored artifacts.
	tr := o.ok("POST", "/v1/detection-rules/test", admin, map[string]any{"rule": string(pamRule), "lines": []any{
		map[string]any{"source": "auth", "raw": authLine}, map[string]any{"source": "suricata", "raw": eve},
		map[string]any{"source": "syslog", "raw": authLine}}}, http.StatusOK).data()
	if m := tr["matches"].([]any); len(m) != 1 || m[0].(map[string]any)["index"] != float64(0) || tr["scanned"] != float64(3) {
		t.Errorf("rule test over lines = %v", tr)
	}
	tr = o.ok("POST", "/v1/detection-rules/test", admin, map[string]any{"rule": string(pamRule), "from": "2024-05-01T00:00:00Z",
		"to": "2024-05-02T00:00:00Z", "limit": 1}, http.StatusOK).data()
	if tr["total"] != float64(2) || tr["scanned"] != float64(1) || tr["next_offset"] != float64(1) {
		t.Errorf("rule test over artifacts, page 1 = %v", tr)
	}
	o.bad("POST", "/v1/detection-rules/test", admin, map[string]any{"lines": []any{}}, "rule")
	o.call("POST", "/v1/detection-rules/test", admin, map[string]any{"rule": "title: t\nlogsource:\n    category: dns\ndetection:\n    s:\n        query|hour: 3\n    condition: s\n", "lines": []any{}}, http.StatusBadRequest)
	o.bad("POST", "/v1/detection-rules/test", admin, map[string]any{"rule": string(pamRule), "lines": []any{map[string]any{"raw": "x"}}}, "lines[0].source")
	o.bad("POST", "/v1/detection-rules/test", admin, map[string]any{"rule": string(pamRule), "limit": 5000, "from": "2024-05-01T00:00:00Z"}, "limit")
	// A correlation naming no rule of the org is refused naming the
	// field; one naming a rule keeps that rule from being deleted.
	corr := func(ref string) []byte {
		return []byte("title: PAM failures from one host\ncorrelation:\n    type: event_count\n    rules:\n        - " + ref +
			"\n    group-by:\n        - host.name\n    timespan: 5m\n    condition:\n        gte: 3\n")
	}
	if r := o.raw("POST", "/v1/detection-rules", admin, yamlCT, corr("no_such_rule"), http.StatusBadRequest); r.field() != "correlation.rules[0]" {
		t.Errorf("correlation naming a missing rule: %s", r.Raw)
	}
	pamCorr := o.raw("POST", "/v1/detection-rules", admin, yamlCT, corr("pam_failure"), http.StatusCreated).data()
	o.call("DELETE", "/v1/detection-rules/"+drID, admin, nil, http.StatusConflict)
	o.raw("PUT", "/v1/detection-rules/"+pamCorr["id"].(string), admin, yamlCT, corr("missing"), http.StatusBadRequest)
	o.call("DELETE", "/v1/detection-rules/"+pamCorr["id"].(string), admin, nil, http.StatusOK)
	// The starter rules: the same for every org, switched per org.
	stl := o.call("GET", "/v1/starter-rules?limit=2", admin, nil, http.StatusOK).data()
	if stl["total"].(float64) < 30 || len(stl["starter_rules"].([]any)) != 2 {
		t.Errorf("starter rules = %v", stl)
	}
	o.badQuery("/v1/starter-rules", admin, "limit", "0", true)
	const shellshock = "c67e0c98-4d39-46ee-8f6b-437ebf6b950e"
	if d := o.call("GET", "/v1/starter-rules/"+shellshock, admin, nil, http.StatusOK).data(); d["enabled"] != true ||
		d["origin"] != "SigmaHQ" || d["author"] == "" || d["license"] != "DRL-1.1" {
		t.Errorf("starter rule = %v", d)
	}
	o.call("GET", "/v1/starter-rules/"+oasMissingID, admin, nil, http.StatusNotFound)
	if d := o.call("POST", "/v1/starter-rules/"+shellshock+"/disable", admin, nil, http.StatusOK).data(); d["enabled"] != false {
		t.Errorf("disabled starter rule = %v", d)
	}
	if d := o.call("GET", "/v1/starter-rules/"+shellshock, other, nil, http.StatusOK).data(); d["enabled"] != true {
		t.Errorf("another org's starter rule after org-a disabled it = %v", d)
	}
	if d := o.call("POST", "/api/v1/starter-rules/"+shellshock+"/enable", admin, nil, http.StatusOK).data(); d["enabled"] != true {
		t.Errorf("enabled starter rule = %v", d)
	}
	o.call("DELETE", "/v1/detection-rules/"+drID, e.token("org-a", "signals:write"), nil, http.StatusForbidden)
	o.call("DELETE", "/v1/detection-rules/"+drID, e.token("org-a", "signals:manage"), nil, http.StatusOK)
	o.call("DELETE", "/v1/detection-rules/"+drID, admin, nil, http.StatusNotFound)

	// Roles.
	role := o.ok("POST", "/v1/roles", admin, map[string]any{"name": "analyst", "permissions": []string{"observations:read", "incidents:read", "incidents:read"}}, http.StatusCreated).data()
	if ps := role["permissions"].([]any); len(ps) != 2 {
		t.Errorf("role permissions = %v", ps)
	}
	roleID := role["id"].(string)
	o.ok("POST", "/v1/roles", admin, map[string]any{"name": "viewer", "permissions": []string{}}, http.StatusCreated)
	dup := o.call("POST", "/v1/roles", admin, map[string]any{"name": "analyst", "permissions": []string{"admin"}}, http.StatusConflict)
	if dup.errCode() != "conflict" {
		t.Errorf("duplicate role: %s", dup.Raw)
	}
	o.call("PUT", "/v1/roles/"+roleID, admin, map[string]any{"name": "viewer"}, http.StatusConflict)
	o.bad("POST", "/v1/roles", admin, map[string]any{"name": "x", "permissions": []string{"root"}}, "permissions[0]")
	o.bad("POST", "/v1/roles", admin, map[string]any{"permissions": []string{"admin"}}, "name")
	o.bad("POST", "/v1/roles", admin, map[string]any{"name": "x"}, "permissions")
	o.bad("POST", "/v1/roles", admin, map[string]any{"name": " ", "permissions": []string{}}, "name")
	o.bad("POST", "/v1/roles", admin, map[string]any{"name": "x", "permissions": "admin"}, "permissions")
	// The role grants at once to tokens naming it.
	o.call("GET", "/v1/observations", e.roleToken("org-a", "analyst"), nil, http.StatusOK)
	o.call("GET", "/v1/artifacts", e.roleToken("org-a", "analyst"), nil, http.StatusForbidden)
	o.call("GET", "/v1/roles?limit=1&offset=1", admin, nil, http.StatusOK)
	o.badQuery("/v1/roles", admin, "limit", "5000", true)
	o.call("GET", "/v1/roles/"+roleID, admin, nil, http.StatusOK)
	o.call("GET", "/v1/roles/"+oasMissingID, admin, nil, http.StatusNotFound)
	o.ok("PUT", "/api/v1/roles/"+roleID, admin, map[string]any{"permissions": []string{"signals:read"}}, http.StatusOK)
	o.call("GET", "/v1/artifacts", e.roleToken("org-a", "analyst"), nil, http.StatusOK)
	o.bad("PUT", "/v1/roles/"+roleID, admin, map[string]any{"permissions": []string{"signals:delete"}}, "permissions[0]")
	o.call("PUT", "/v1/roles/"+oasMissingID, admin, map[string]any{"name": "x"}, http.StatusNotFound)
	o.call("DELETE", "/v1/roles/"+roleID, admin, nil, http.StatusOK)
	o.call("DELETE", "/v1/roles/"+roleID, admin, nil, http.StatusNotFound)
	o.call("GET", "/v1/artifacts", e.roleToken("org-a", "analyst"), nil, http.StatusForbidden)

	// Wrong methods and unknown paths.
	for _, c := range []struct{ method, path string }{
		{"PATCH", "/v1/observations"}, {"DELETE", "/v1/observations"}, {"POST", "/v1/observations/" + obsID},
		{"DELETE", "/v1/incidents"}, {"POST", "/v1/incidents/" + incID}, {"GET", "/v1/incidents/" + incID + "/status"},
		{"DELETE", "/api/v1/artifacts"}, {"PUT", "/v1/classification-rules"}, {"POST", "/v1/roles/" + roleID},
		{"POST", "/v1/enrichment-settings"}, {"DELETE", "/v1/openapi.json"}, {"PUT", "/api/v1/openapi.json"},
		{"PATCH", "/v1/suppressions"}, {"POST", "/v1/suppressions/" + oasMissingID},
	} {
		r := o.call(c.method, c.path, admin, nil, http.StatusMethodNotAllowed)
		if r.errCode() != "method_not_allowed" {
			t.Errorf("%s %s: code %q", c.method, c.path, r.errCode())
		}
	}
	if allow := o.call("PATCH", "/v1/observations", admin, nil, http.StatusMethodNotAllowed).Header.Get("Allow"); allow != "GET, POST, HEAD" {
		t.Errorf("Allow = %q", allow)
	}
	for _, p := range []string{"/v1/nope", "/v1/observations/" + obsID + "/extra", "/v2/observations", "/"} {
		o.call("GET", p, admin, nil, http.StatusNotFound)
	}

	// Operational endpoints.
	o.call("GET", "/healthz", "", nil, http.StatusOK)
	o.call("GET", "/readyz", "", nil, http.StatusOK)
	m := o.call("GET", "/metrics", "", nil, http.StatusOK)
	if !bytes.Contains(m.Raw, []byte("vigil_http_requests_total")) {
		t.Errorf("metrics lack vigil_http_requests_total")
	}
	o.call("GET", "/v1/openapi.json", "", nil, http.StatusOK)
	o.call("GET", "/api/v1/openapi.json", "bogus", nil, http.StatusOK)

	// Failing dependencies: the same handlers over an ingester and a
	// readiness check that fail as the queue does.
	v, err := auth.NewVerifier(context.Background(), auth.Config{HS256Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	stub := &oasStubIngester{}
	srv := httptest.NewServer(api.New(api.Config{Store: e.store, Verifier: v, Ingester: stub, Ready: []api.Readiness{oasDown{}}}))
	defer srv.Close()
	f := *o
	f.e = &env{t: t, srv: srv, store: e.store}
	stub.err = &vigil.Error{Code: vigil.ERATELIMITED, Message: "ingest queue is full; retry later"}
	if ra := f.call("POST", "/v1/artifacts", admin, good, http.StatusTooManyRequests).Header.Get("Retry-After"); ra == "" {
		t.Errorf("429 without Retry-After")
	}
	stub.err = &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "ingest queue unavailable"}
	f.call("POST", "/v1/artifacts", admin, good, http.StatusServiceUnavailable)
	stub.err = &vigil.Error{Code: vigil.ENOSPACE, Message: "no space left on the disk of the data directory"}
	f.call("POST", "/v1/artifacts", admin, good, http.StatusInsufficientStorage)
	stub.err = errors.New("disk on fire")
	if r := f.call("POST", "/api/v1/artifacts", admin, good, http.StatusInternalServerError); bytes.Contains(r.Raw, []byte("fire")) {
		t.Errorf("500 leaks the cause: %s", r.Raw)
	}
	f.call("GET", "/readyz", "", nil, http.StatusServiceUnavailable)

	// /metrics with a metrics token, and not served on the API's address.
	for _, c := range []struct {
		cfg  api.Config
		want int
	}{{api.Config{MetricsToken: "metrics-token-0123456789"}, http.StatusUnauthorized}, {api.Config{NoMetrics: true}, http.StatusNotFound}} {
		c.cfg.Store, c.cfg.Verifier = e.store, v
		msrv := httptest.NewServer(api.New(c.cfg))
		m := *o
		m.e = &env{t: t, srv: msrv, store: e.store}
		m.call("GET", "/metrics", admin, nil, c.want)
		msrv.Close()
	}

	// An org's searches beyond its bound.
	hold := &holdSearches{Store: e.store, org: "org-a", entered: make(chan struct{}, 1), release: make(chan struct{})}
	hsrv := httptest.NewServer(api.New(api.Config{Store: hold, Verifier: v, Ingester: stub, MaxOrgSearches: 1}))
	defer hsrv.Close()
	h := *o
	h.e = &env{t: t, srv: hsrv, store: e.store}
	done := make(chan struct{})
	go func() { defer close(done); h.e.do("GET", "/v1/artifacts", admin, nil) }()
	<-hold.entered
	if ra := h.call("GET", "/v1/artifacts", admin, nil, http.StatusTooManyRequests).Header.Get("Retry-After"); ra == "" {
		t.Errorf("429 without Retry-After")
	}
	h.call("GET", "/v1/artifacts/"+oasMissingID, admin, nil, http.StatusTooManyRequests)
	h.call("GET", "/v1/incidents/"+oasMissingID+"/artifacts", admin, nil, http.StatusTooManyRequests)
	close(hold.release)
	<-done

	// Every operation's success status was exercised; list what was not.
	var missing, unexercised []string
	paths, _ := o.doc["paths"].(map[string]any)
	for tmpl, item := range paths {
		for method, opv := range item.(map[string]any) {
			op, ok := opv.(map[string]any)
			if !ok || method == "servers" || method == "parameters" {
				continue
			}
			for status := range op["responses"].(map[string]any) {
				key := fmt.Sprintf("%s %s %s", strings.ToUpper(method), tmpl, status)
				if o.seen[key] {
					continue
				}
				if status[0] == '2' {
					missing = append(missing, key)
				} else {
					unexercised = append(unexercised, key)
				}
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(unexercised)
	if len(missing) > 0 {
		t.Errorf("success responses never exercised:\n%s", strings.Join(missing, "\n"))
	}
	for _, k := range unexercised {
		if !strings.HasSuffix(k, " 500") && !strings.HasSuffix(k, " 503") && !strings.HasSuffix(k, " 507") &&
			!strings.HasSuffix(k, " 413") && !strings.HasSuffix(k, " 415") {
			t.Errorf("documented error response never exercised: %s", k)
		}
	}
}

// oasStubIngester fails every ingest with err.
type oasStubIngester struct{ err error }

func (s *oasStubIngester) Ingest(context.Context, string, []*vigil.Artifact) error { return s.err }

// oasDown is a dependency that is never ready.
type oasDown struct{}

func (oasDown) Ready(context.Context) error { return errors.New("unreachable") }
func (oasDown) Name() string                { return "queue" }

// oasBodyLimit is the body limit the API promises (413 above it).
const oasBodyLimit = 10 << 20

// oasRollup checks a roll-up's responses against the document: a server
// with detection on (its own, the documented coverage shared with o)
// rolls up alerts of one signature from three scanners, and one of them
// then stands apart.
func oasRollup(t *testing.T, o *oas) {
	de := newDetectingEnv(t)
	od := newOAS(t, de)
	od.seen = o.seen
	tok := de.token("org-a", "admin")
	od.ok("PUT", "/v1/enrichment-settings", tok, map[string]any{"rollup_threshold": 3}, http.StatusOK)
	now := time.Now().UTC().Truncate(time.Second)
	for i := 1; i <= 3; i++ {
		postArtifacts(t, de, tok, eveAlert(now.Add(time.Duration(i)*time.Second), fmt.Sprint("198.51.100.", i), sshScanSID, sshScanSig, reconCat, 2))
	}
	var id string
	for k := range openIncidents(t, de, tok) {
		id = k
	}
	od.call("GET", "/v1/incidents?limit=10", tok, nil, http.StatusOK)
	if r := od.call("GET", "/v1/incidents/"+id, tok, nil, http.StatusOK); r.data()["rollup"] == nil {
		t.Fatalf("no roll-up: %s", r.Raw)
	}
	od.call("GET", "/v1/incidents/"+id+"/sources?limit=2", tok, nil, http.StatusOK)
	od.badQuery("/v1/incidents/"+id+"/sources", tok, "limit", "0", true)
	od.call("GET", "/v1/incidents/not-a-uuid/sources", tok, nil, http.StatusBadRequest)
	od.call("GET", "/v1/incidents/"+oasMissingID+"/sources", tok, nil, http.StatusNotFound)
	var bf []map[string]any
	for k := range 6 {
		bf = append(bf, failedPassword(now.Add(time.Duration(10+k)*time.Second), "198.51.100.1", 4242))
	}
	postArtifacts(t, de, tok, bf...)
	for k := range openIncidents(t, de, tok) {
		od.call("GET", "/v1/incidents/"+k, tok, nil, http.StatusOK)
		od.call("GET", "/v1/incidents/"+k+"/history?limit=100", tok, nil, http.StatusOK)
	}
}
