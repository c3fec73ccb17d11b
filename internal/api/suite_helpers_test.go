package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Helpers shared by the black-box suite (endpoints, permissions, tenancy,
// validation, tokens, correlation and fuzz tests).

// prefixes are the two path prefixes every endpoint is served under.
var prefixes = []string{"/v1", "/api/v1"}

// codeOfStatus is the error code every error status must carry
// (docs/api.md).
var codeOfStatus = map[int]string{
	http.StatusBadRequest:            "invalid_argument",
	http.StatusUnauthorized:          "unauthenticated",
	http.StatusForbidden:             "permission_denied",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "payload_too_large",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
	http.StatusTooManyRequests:       "rate_limited",
}

// as returns a copy of e that reports to t, so that a subtest fails itself.
func (e *env) as(t testing.TB) *env { c := *e; c.t = t; return &c }

// call sends a request through the harness and checks the envelope rules
// that hold for every response: never a 5xx, always a JSON envelope, and
// on an error success=false with the code matching the status.
func call(t testing.TB, e *env, method, path, tok string, body any) resp {
	t.Helper()
	r := e.as(t).do(method, path, tok, body)
	checkEnvelope(t, method+" "+path, r)
	return r
}

// rawCall sends body with exactly the headers given (no defaults).
func rawCall(t testing.TB, e *env, method, path string, hdr map[string]string, body []byte) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	checkEnvelope(t, method+" "+path, out)
	return out
}

func checkEnvelope(t testing.TB, what string, r resp) {
	t.Helper()
	if r.Status >= 500 {
		t.Fatalf("%s: server error %d: %s", what, r.Status, r.Raw)
	}
	if r.Header.Get("X-Request-ID") == "" {
		t.Errorf("%s: response without X-Request-ID", what)
	}
	if r.Body == nil {
		t.Fatalf("%s: status %d without a JSON envelope: %q", what, r.Status, r.Raw)
	}
	success, ok := r.Body["success"].(bool)
	if !ok {
		t.Fatalf("%s: envelope without boolean success: %s", what, r.Raw)
	}
	if _, ok := r.Body["message"].(string); !ok {
		t.Errorf("%s: envelope without string message: %s", what, r.Raw)
	}
	if r.Status < 400 {
		if !success {
			t.Errorf("%s: status %d with success=false: %s", what, r.Status, r.Raw)
		}
		if _, ok := r.Body["data"]; !ok {
			t.Errorf("%s: success envelope without data: %s", what, r.Raw)
		}
		return
	}
	if success {
		t.Errorf("%s: status %d with success=true: %s", what, r.Status, r.Raw)
	}
	e, _ := r.Body["error"].(map[string]any)
	if e == nil {
		t.Fatalf("%s: status %d without error object: %s", what, r.Status, r.Raw)
	}
	if _, ok := e["details"].([]any); !ok {
		t.Errorf("%s: error.details is not an array: %s", what, r.Raw)
	}
	if want, known := codeOfStatus[r.Status]; known && r.errCode() != want {
		t.Errorf("%s: status %d with code %q, want %q", what, r.Status, r.errCode(), want)
	} else if r.errCode() == "" {
		t.Errorf("%s: status %d without error.code: %s", what, r.Status, r.Raw)
	}
}

// wantError asserts an error status, its code, and (when field != "") the
// field named by the first detail.
func wantError(t testing.TB, r resp, status int, field string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Raw)
	}
	if want := codeOfStatus[status]; r.errCode() != want {
		t.Errorf("code %q, want %q; body %s", r.errCode(), want, r.Raw)
	}
	if field != "" && r.field() != field {
		t.Errorf("error.details[0].field = %q, want %q; body %s", r.field(), field, r.Raw)
	}
}

// items returns the named array of a list payload.
func items(t testing.TB, r resp, name string) []map[string]any {
	t.Helper()
	arr, ok := r.data()[name].([]any)
	if !ok {
		t.Fatalf("data.%s is not an array: %s", name, r.Raw)
	}
	out := make([]map[string]any, len(arr))
	for i, v := range arr {
		out[i], _ = v.(map[string]any)
	}
	return out
}

// idsOf returns the id of each item.
func idsOf(list []map[string]any) []string {
	out := make([]string, len(list))
	for i, m := range list {
		out[i], _ = m["id"].(string)
	}
	return out
}

func total(t testing.TB, r resp) int {
	t.Helper()
	n, ok := r.data()["total"].(float64)
	if !ok {
		t.Fatalf("data.total is not a number: %s", r.Raw)
	}
	return int(n)
}

// strs converts a JSON array of strings.
func strs(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func eqStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// createObs creates an observation and returns its data.
func createObs(t testing.TB, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	return must(t, call(t, e, "POST", "/v1/observations", tok, body), http.StatusCreated).data()
}

// newIncident creates an observation that opens an incident and returns
// the incident id.
func newIncident(t testing.TB, e *env, tok, severity string) string {
	t.Helper()
	o := createObs(t, e, tok, map[string]any{"type": "network", "description": "suspicious flow", "severity": severity})
	id, _ := o["incident_id"].(string)
	if id == "" {
		t.Fatalf("observation without incident_id: %v", o)
	}
	return id
}

// postArtifacts posts items and returns the response data (202 expected).
func postArtifacts(t testing.TB, e *env, tok string, arts ...map[string]any) map[string]any {
	t.Helper()
	list := make([]any, len(arts))
	for i, a := range arts {
		list[i] = a
	}
	return must(t, call(t, e, "POST", "/v1/artifacts", tok, map[string]any{"artifacts": list}), http.StatusAccepted).data()
}

var nameSeq atomic.Int64

// uniq returns a fresh name with prefix.
func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1)) }

func createRule(t testing.TB, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	return must(t, call(t, e, "POST", "/v1/classification-rules", tok, body), http.StatusCreated).data()
}

func createRole(t testing.TB, e *env, tok, name string, perms ...string) map[string]any {
	t.Helper()
	if perms == nil {
		perms = []string{}
	}
	return must(t, call(t, e, "POST", "/v1/roles", tok, map[string]any{"name": name, "permissions": perms}), http.StatusCreated).data()
}

// ts formats a time as RFC 3339 with nanoseconds.
func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// parseTS parses an RFC 3339 value of a response.
func parseTS(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("timestamp %v: %v", v, err)
	}
	return tm
}
