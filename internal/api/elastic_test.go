package api_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
)

// refusing refuses the first n ingests as a full queue does (429), then
// passes them on.
type refusing struct {
	next    api.Ingester
	n       atomic.Int64
	refused atomic.Int64
}

func (r *refusing) Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if r.n.Add(-1) >= 0 {
		r.refused.Add(1)
		return &vigil.Error{Code: vigil.ERATELIMITED, Message: "ingest queue is full; retry later"}
	}
	return r.next.Ingest(ctx, org, arts)
}

// newRefusingEnv is an env whose ingester refuses the first n ingests.
func newRefusingEnv(t testing.TB, n int64) (*env, *refusing) {
	ref := &refusing{}
	ref.n.Store(n)
	e := newEnvWith(t, func(c *api.Config) { ref.next = c.Ingester; c.Ingester = ref })
	return e, ref
}

// esDatasetLines returns the non-empty lines of a file of ../shared/datasets.
func esDatasetLines(t testing.TB, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "shared", "datasets", name))
	if err != nil {
		t.Fatalf("datasets (../shared/datasets beside the checkout): %v", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, vigil.MaxRawBytes)
	for sc.Scan() {
		if l := sc.Text(); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// bulkOf is a bulk body of one create action per document.
func bulkOf(docs ...map[string]any) []byte {
	var b bytes.Buffer
	for _, d := range docs {
		b.WriteString(`{"create":{}}` + "\n")
		j, _ := json.Marshal(d)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// bulk sends body to path under /v1/ingest/elastic with the headers.
func bulk(t testing.TB, e *env, path, authz string, body []byte, hdr ...string) resp {
	t.Helper()
	h := map[string]string{"Authorization": authz, "Content-Type": "application/x-ndjson"}
	for i := 0; i+1 < len(hdr); i += 2 {
		h[hdr[i]] = hdr[i+1]
	}
	r := esCall(t, e, "POST", "/v1/ingest/elastic"+path, h, body)
	if r.Header.Get("X-Elastic-Product") != "Elasticsearch" {
		t.Errorf("POST %s %d: no X-Elastic-Product header", path, r.Status)
	}
	return r
}

// esCall is rawCall for the Elasticsearch endpoint, whose successes are
// Elasticsearch's bodies, and errors Vigil's envelope.
func esCall(t testing.TB, e *env, method, path string, hdr map[string]string, body []byte) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
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
	if len(raw) > 0 && method != "HEAD" {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			t.Fatalf("%s %s: decode %.200q: %v", method, path, raw, err)
		}
	}
	if _, ok := out.Body["success"]; ok || out.Status >= 500 {
		checkEnvelope(t, method+" "+path, out)
	}
	return out
}

// bulkItems returns the items of a bulk response: action, status, error type.
func bulkItems(t testing.TB, r resp) []map[string]any {
	t.Helper()
	if _, ok := r.Body["took"].(float64); !ok {
		t.Fatalf("bulk response without took: %s", r.Raw)
	}
	var out []map[string]any
	for _, x := range r.Body["items"].([]any) {
		for action, v := range x.(map[string]any) {
			m := v.(map[string]any)
			m["action"] = action
			out = append(out, m)
		}
	}
	return out
}

// artifactTotal is how many artifacts org holds, of source if given.
func artifactTotal(t testing.TB, e *env, org, source string) int {
	t.Helper()
	path := "/v1/artifacts?limit=1"
	if source != "" {
		path += "&source=" + source
	}
	return total(t, must(t, call(t, e, "GET", path, e.token(org, "signals:read"), nil), http.StatusOK))
}

func TestElasticBulk(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	k := createKey(t, e, admin, "filebeat")
	auth := "ApiKey " + k["encoded"].(string)

	sshd := esDatasetLines(t, "auth/fail2ban-sshd.log")
	eve := esDatasetLines(t, "suricata/surevego-eve.json")[:20]
	var docs []map[string]any
	for _, l := range sshd {
		docs = append(docs, map[string]any{"message": l, "@timestamp": "2026-11-25T10:00:00Z",
			"log": map[string]any{"file": map[string]any{"path": "/var/log/auth.log"}}, "host": map[string]any{"name": "web-01"}})
	}
	for _, l := range eve {
		var d map[string]any
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d) // structured, as Vector or Fluent Bit send a parsed EVE line
	}
	r := must(t, bulk(t, e, "/_bulk", auth, bulkOf(docs...)), http.StatusOK)
	items := bulkItems(t, r)
	if r.Body["errors"] != false || len(items) != len(docs) {
		t.Fatalf("errors %v, %d items for %d documents", r.Body["errors"], len(items), len(docs))
	}
	for i, it := range items {
		if it["action"] != "create" || it["status"] != float64(201) || it["result"] != "created" || it["_id"] == "" {
			t.Fatalf("item %d = %v", i, it)
		}
	}
	if n := artifactTotal(t, e, "org-a", "auth"); n != len(sshd) {
		t.Errorf("org-a holds %d auth artifacts, want %d", n, len(sshd))
	}
	if n := artifactTotal(t, e, "org-a", "suricata"); n != len(eve) {
		t.Errorf("org-a holds %d suricata artifacts, want %d", n, len(eve))
	}
	if n := artifactTotal(t, e, "org-b", ""); n != 0 {
		t.Errorf("org-b holds %d artifacts", n)
	}
	// The line is stored as sent; the shipper's fields go to metadata.
	id := items[0]["_id"].(string)
	a := must(t, call(t, e, "GET", "/v1/artifacts/"+id, admin, nil), http.StatusOK).data()
	if a["raw"] != sshd[0] || a["source"] != "auth" {
		t.Errorf("artifact %v, want raw %q of auth", a, sshd[0])
	}
	if m, _ := json.Marshal(a["metadata"]); string(m) != `{"elastic":{"host":"web-01","index":"","log_file":"/var/log/auth.log"}}` {
		t.Errorf("metadata %s", m)
	}

	// The index names the source; gzip is taken; an _id retried is one artifact.
	body := []byte(`{"index":{"_id":"line-1"}}` + "\n" + `{"message":"custom line one"}` + "\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()
	for range 2 {
		r = must(t, bulk(t, e, "/dns/_bulk", "Basic "+basicCreds("elastic", k["key"].(string)), gz.Bytes(), "Content-Encoding", "gzip"), http.StatusOK)
		if it := bulkItems(t, r)[0]; it["_id"] != "line-1" || it["_index"] != "dns" || it["status"] != float64(201) {
			t.Errorf("item %v", it)
		}
	}
	if n := artifactTotal(t, e, "org-a", "dns"); n != 1 {
		t.Errorf("%d dns artifacts after sending _id line-1 twice, want 1", n)
	}
}

func basicCreds(user, pass string) string { return strings.TrimPrefix(basic(user, pass), "Basic ") }

// TestElasticItemsAndRequestErrors: a bad document is its item's 400 and
// the others are taken; a malformed request is a 400 naming its line.
func TestElasticItemsAndRequestErrors(t *testing.T) {
	e := newEnv(t)
	secret := createKey(t, e, e.token("org-a", "admin"), "k")["key"].(string)
	auth := "Bearer " + secret
	body := `{"create":{}}` + "\n" + `{"message":"kept one"}` + "\n" +
		`{"create":{}}` + "\n" + `"not an object"` + "\n" +
		`{"delete":{"_id":"x"}}` + "\n" +
		`{"index":{}}` + "\n" + `{"message":"kept two"}` + "\n"
	r := must(t, bulk(t, e, "/_bulk", auth, []byte(body)), http.StatusOK)
	items := bulkItems(t, r)
	want := []float64{201, 400, 400, 201}
	if r.Body["errors"] != true || len(items) != len(want) {
		t.Fatalf("response %s", r.Raw)
	}
	for i, st := range want {
		if items[i]["status"] != st || (st == 400) != (items[i]["error"] != nil) {
			t.Errorf("item %d = %v, want status %v", i, items[i], st)
		}
	}
	if n := artifactTotal(t, e, "org-a", ""); n != 2 {
		t.Errorf("%d artifacts stored, want 2", n)
	}

	for name, c := range map[string]struct {
		body   string
		hdr    []string
		status int
		field  string
	}{
		"empty":             {"", nil, 400, "body"},
		"action not JSON":   {"create\n{}\n", nil, 400, "line 1"},
		"document missing":  {`{"create":{}}` + "\n" + `{"message":"a"}` + "\n" + `{"create":{}}` + "\n", nil, 400, "line 4"},
		"unknown action":    {`{"upsert":{}}` + "\n{}\n", nil, 400, "line 1"},
		"bad gzip":          {"not gzip", []string{"Content-Encoding", "gzip"}, 400, "body"},
		"unknown encoding":  {"x", []string{"Content-Encoding", "br"}, 415, ""},
		"body over 10 MiB":  {strings.Repeat(`{"create":{}}`+"\n"+`{"message":"x"}`+"\n", 11<<20/30), nil, 413, ""},
		"gzip over 10 MiB":  {gzipped(strings.Repeat(`{"create":{}}`+"\n"+`{"message":"`+strings.Repeat("x", 200)+`"}`+"\n", 11<<20/230)), []string{"Content-Encoding", "gzip"}, 413, ""},
		"too many actions?": {strings.Repeat(`{"delete":{}}`+"\n", 100001), nil, 400, "body"},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, bulk(t, e, "/_bulk", auth, []byte(c.body), c.hdr...), c.status, c.field)
		})
	}
	if n := artifactTotal(t, e, "org-a", ""); n != 2 {
		t.Errorf("%d artifacts stored after refused requests, want 2", n)
	}
}

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

// TestElasticBackpressure: a full queue refuses the whole request (429,
// Retry-After, each item 429), storing nothing, and a retry is taken; a request the queue
// takes only in part answers 429 for exactly the items it did not take.
func TestElasticBackpressure(t *testing.T) {
	e, ref := newRefusingEnv(t, 1)
	auth := "Bearer " + createKey(t, e, e.token("org-a", "admin"), "k")["key"].(string)
	body := bulkOf(map[string]any{"message": "one"}, map[string]any{"message": "two"})
	r := must(t, bulk(t, e, "/_bulk", auth, body), http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" || r.Body["status"] != float64(429) || r.Body["errors"] != true {
		t.Errorf("429: Retry-After %q, body %s", r.Header.Get("Retry-After"), r.Raw)
	}
	// Each item says so too, for clients that read only the body (rsyslog).
	for i, it := range bulkItems(t, r) {
		if it["status"] != float64(429) || it["error"].(map[string]any)["type"] != "es_rejected_execution_exception" {
			t.Errorf("item %d of a refused request: %v", i, it)
		}
	}
	if n := artifactTotal(t, e, "org-a", ""); n != 0 {
		t.Fatalf("%d artifacts stored by a refused request", n)
	}
	must(t, bulk(t, e, "/_bulk", auth, body), http.StatusOK)
	if n := artifactTotal(t, e, "org-a", ""); n != 2 || ref.refused.Load() != 1 {
		t.Fatalf("%d artifacts after the retry (refused %d), want 2", n, ref.refused.Load())
	}

	// Split to fit the queue: the first half taken, the second refused.
	split := &splitting{max: 2}
	e2 := newEnvWith(t, func(c *api.Config) { split.next = c.Ingester; c.Ingester = split })
	auth = "Bearer " + createKey(t, e2, e2.token("org-a", "admin"), "k")["key"].(string)
	r = must(t, bulk(t, e2, "/_bulk", auth, bulkOf(map[string]any{"message": "a"}, map[string]any{"message": "b"},
		map[string]any{"message": "c"}, map[string]any{"message": "d"})), http.StatusOK)
	items := bulkItems(t, r)
	for i, st := range []float64{201, 201, 429, 429} {
		if items[i]["status"] != st {
			t.Errorf("item %d = %v, want %v", i, items[i], st)
		}
	}
	if typ := items[2]["error"].(map[string]any)["type"]; r.Body["errors"] != true || typ != "es_rejected_execution_exception" {
		t.Errorf("errors %v, type %v", r.Body["errors"], typ)
	}
	if n := artifactTotal(t, e2, "org-a", ""); n != 2 {
		t.Errorf("%d artifacts stored, want the 2 answered 201", n)
	}
}

// splitting refuses batches larger than max as too large for the queue,
// takes the first batch that fits and refuses the next as a full queue.
type splitting struct {
	next  api.Ingester
	max   int
	taken atomic.Int64
}

func (s *splitting) Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if len(arts) > s.max {
		return &vigil.Error{Code: vigil.ETOOLARGE, Message: "batch larger than the queue takes"}
	}
	if s.taken.Add(1) > 1 {
		return &vigil.Error{Code: vigil.ERATELIMITED, Message: "ingest queue is full; retry later"}
	}
	return s.next.Ingest(ctx, org, arts)
}

// TestElasticBulkTimeout: with the bulk API's timeout parameter a request
// the queue refuses waits for room and is taken whole (rsyslog 8.2302's
// omelasticsearch cannot retry a refusal); past the timeout it is still
// the 429 without it; a bad value is the request's 400 naming timeout.
func TestElasticBulkTimeout(t *testing.T) {
	e, ref := newRefusingEnv(t, 3)
	auth := "Bearer " + createKey(t, e, e.token("org-a", "admin"), "k")["key"].(string)
	body := bulkOf(map[string]any{"message": "one"}, map[string]any{"message": "two"})
	r := must(t, bulk(t, e, "/_bulk?timeout=30s", auth, body), http.StatusOK)
	for i, it := range bulkItems(t, r) {
		if it["status"] != float64(201) {
			t.Errorf("item %d after waiting: %v", i, it)
		}
	}
	if n := artifactTotal(t, e, "org-a", ""); n != 2 || ref.refused.Load() != 3 {
		t.Fatalf("%d artifacts after waiting out %d refusals, want 2 after 3", n, ref.refused.Load())
	}
	ref.n.Store(1000)
	must(t, bulk(t, e, "/_bulk?timeout=100ms", auth, body), http.StatusTooManyRequests)
	if n := artifactTotal(t, e, "org-a", ""); n != 2 {
		t.Fatalf("%d artifacts after a refusal past the timeout, want 2", n)
	}
	for _, v := range []string{"soon", "-1s", "1"} {
		wantError(t, bulk(t, e, "/_bulk?timeout="+v, auth, body), http.StatusBadRequest, "timeout")
	}
}

// TestElasticHandshake: what shippers read before they send, with the
// product header on every response, refusals included.
func TestElasticHandshake(t *testing.T) {
	e := newEnv(t)
	secret := createKey(t, e, e.token("org-a", "admin"), "k")["key"].(string)
	hdr := map[string]string{"Authorization": "Bearer " + secret}
	get := func(method, path string, body []byte) resp {
		t.Helper()
		r := esCall(t, e, method, "/v1/ingest/elastic"+path, hdr, body)
		if r.Header.Get("X-Elastic-Product") != "Elasticsearch" {
			t.Errorf("%s %s: no X-Elastic-Product header", method, path)
		}
		return r
	}
	for _, p := range []string{"", "/"} {
		r := must(t, get("GET", p, nil), http.StatusOK)
		v, _ := r.Body["version"].(map[string]any)
		if v["number"] != api.ElasticVersion || r.Body["tagline"] == nil {
			t.Errorf("GET %q = %s", p, r.Raw)
		}
	}
	must(t, get("HEAD", "/", nil), http.StatusOK)
	lic, _ := must(t, get("GET", "/_license", nil), http.StatusOK).Body["license"].(map[string]any)
	if lic["status"] != "active" || lic["type"] != "basic" {
		t.Errorf("licence %v", lic)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/_ilm/policy/filebeat"}, {"PUT", "/_ilm/policy/filebeat"}, {"GET", "/_index_template/filebeat-8.19.0"},
		{"PUT", "/_index_template/logstash"}, {"HEAD", "/_index_template/x"}, {"PUT", "/_ingest/pipeline/p"},
		{"GET", "/_nodes/http"}, {"GET", "/_cluster/health"}, {"GET", "/_xpack"},
	} {
		r := must(t, get(c.method, c.path, []byte(`{"a":1}`)), http.StatusOK)
		if c.method != "HEAD" && string(bytes.TrimSpace(r.Raw)) != "{}" {
			t.Errorf("%s %s = %s, want {}", c.method, c.path, r.Raw)
		}
	}
	// Unauthenticated: 401 offering the shippers' schemes.
	hdr = map[string]string{}
	r := get("GET", "/", nil)
	wantError(t, r, http.StatusUnauthorized, "")
	if v := r.Header.Values("WWW-Authenticate"); len(v) != 3 || !strings.HasPrefix(v[1], "Basic") {
		t.Errorf("WWW-Authenticate %q", v)
	}
	// A token with signals:write ingests; one without is refused.
	for _, c := range []struct {
		perm   string
		status int
	}{{"signals:write", 200}, {"signals:read", 403}, {"admin", 200}} {
		r := bulk(t, e, "/_bulk", "Bearer "+e.token("org-a", c.perm), bulkOf(map[string]any{"message": "via " + c.perm}))
		if r.Status != c.status {
			t.Errorf("%s: status %d, want %d", c.perm, r.Status, c.status)
		}
	}
	wantError(t, bulk(t, e, "/_bulk", "Bearer "+secret[:len(secret)-1]+"x", bulkOf(map[string]any{"message": "x"})), http.StatusUnauthorized, "")
}
