package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/detectionrules"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/rules"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/suppress"
)

var testSecret = []byte("test-secret-0123456789abcdef0123456789abcdef")

// env is one running server on 127.0.0.1:0 with its own SQLite database.
type env struct {
	t     testing.TB
	srv   *httptest.Server
	store api.Store
	cfg   api.Config
}

// The same suite runs against the scale-out parts when asked:
// VIGIL_TEST_API_STORE=postgres uses a fresh PostgreSQL database per
// server (internal/postgres/pgtest), VIGIL_TEST_API_STORE=vlogs the same
// with the artifacts in a VictoriaLogs cluster on loopback (vltest,
// shared by the package's tests, each server its own tenants), and VIGIL_TEST_API_QUEUE=jetstream
// sends artifacts through a real JetStream queue (an in-process server
// per test, so tests never share a stream) and a worker, as vigil serve
// does, instead of storing them in the request.
func newEnv(t testing.TB) *env {
	t.Helper()
	return buildEnv(t, false, nil)
}

// newDetectingEnv is newEnv with the pipeline's detection on, wired as
// vigil serve wires it: one cache of the orgs' suppressions and settings
// shared by the API (which invalidates it on writes) and the workers, and
// the pipeline's metrics on the API's /metrics.
func newDetectingEnv(t testing.TB) *env {
	t.Helper()
	return buildEnv(t, true, nil)
}

// newEnvWith is newEnv with the server's configuration changed by
// configure (which may wrap the store) before the server is built.
func newEnvWith(t testing.TB, configure func(*api.Config)) *env {
	t.Helper()
	return buildEnv(t, false, configure)
}

func buildEnv(t testing.TB, detection bool, configure func(*api.Config)) *env {
	t.Helper()
	ctx := context.Background()
	var store api.Store
	var err error
	switch os.Getenv("VIGIL_TEST_API_STORE") {
	case "", "sqlite":
		store, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "vigil.db"), sqlite.Options{})
	case "postgres":
		store, err = postgres.Open(ctx, pgtest.FreshDB(t), postgres.Options{})
	case "vlogs":
		store, err = openVLogs(t)
	default:
		t.Fatalf("VIGIL_TEST_API_STORE=%q: want sqlite, postgres or vlogs", os.Getenv("VIGIL_TEST_API_STORE"))
	}
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	v, err := auth.NewVerifier(ctx, auth.Config{HS256Secret: testSecret})
	if err != nil {
		t.Fatalf("verifier: %v", err)
	}
	reg := prometheus.NewRegistry()
	m := pipeline.NewMetrics(reg)
	proc := pipeline.NewProcessor(store, nil, m)
	screens := suppress.NewCache(store, suppress.DefaultTTL, nil)
	detectionRules := detectionrules.NewCache(store, detectionrules.DefaultTTL, nil)
	if detection {
		proc.WithSuppressions(screens).WithDetection(detect.NewEngine(detect.Default(detect.Config{})...), vigil.DefaultCorrelationPolicy()).
			WithDetectionRules(detectionRules)
	}
	var ingester api.Ingester = pipeline.NewDirectProcessor(proc)
	if os.Getenv("VIGIL_TEST_API_QUEUE") == "jetstream" {
		ingester = queuedIngester(t, proc, m)
	}
	// Re-classification after rule writes runs in the background, as in
	// vigil serve; configure may set Reclassify to nil to keep it from
	// running.
	rc := rules.NewReclassifier(store, nil)
	cfg := api.Config{Store: store, Verifier: v, Ingester: ingester, Reclassify: rc, Registry: reg, Screens: screens,
		DetectionRules: detectionRules}
	if configure != nil {
		configure(&cfg)
	}
	if cfg.Reclassify == rc {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); rc.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	srv := httptest.NewServer(api.New(cfg))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, store: store, cfg: cfg}
}

// sibling returns another API process on e's store and ingester, as a
// second vigil serve on one database: what each process caches is its own.
func (e *env) sibling() *env {
	e.t.Helper()
	cfg := e.cfg
	cfg.Registry, cfg.Reclassify = prometheus.NewRegistry(), nil
	srv := httptest.NewServer(api.New(cfg))
	e.t.Cleanup(srv.Close)
	return &env{t: e.t, srv: srv, store: e.store, cfg: cfg}
}

// router returns another Server of e's configuration, not serving: for
// tests that read its route table.
func (e *env) router() *api.Server {
	cfg := e.cfg
	cfg.Registry, cfg.Reclassify = prometheus.NewRegistry(), nil
	return api.New(cfg)
}

// queuedIngester starts an in-process JetStream queue and one worker
// running proc, stopped when the test ends. Replies wait for the worker,
// so a test reading right after a POST sees its artifacts.
func queuedIngester(t testing.TB, proc *pipeline.Processor, m *pipeline.Metrics) api.Ingester {
	t.Helper()
	q, err := queue.Open(context.Background(), queue.Config{Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	w := pipeline.NewWorker(q, proc, nil, m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; q.Close() })
	return pipeline.NewQueued(q, 30*time.Second, m)
}

// eventually polls cond until it holds, failing t after 30 s: for
// effects of the background re-classification.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// token mints a token of org with perms.
func (e *env) token(org string, perms ...string) string {
	e.t.Helper()
	tok, err := auth.Mint(testSecret, auth.Claims{Subject: "analyst@" + org, OrgID: org, Permissions: perms}, time.Hour, time.Now())
	if err != nil {
		e.t.Fatalf("mint: %v", err)
	}
	return tok
}

func (e *env) roleToken(org string, roles ...string) string {
	e.t.Helper()
	tok, err := auth.Mint(testSecret, auth.Claims{Subject: "analyst@" + org, OrgID: org, Roles: roles}, time.Hour, time.Now())
	if err != nil {
		e.t.Fatalf("mint: %v", err)
	}
	return tok
}

// resp is a decoded response.
type resp struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func (r resp) data() map[string]any { d, _ := r.Body["data"].(map[string]any); return d }

func (r resp) errCode() string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// details returns the field issues of an error response.
func (r resp) details() []map[string]any {
	e, _ := r.Body["error"].(map[string]any)
	d, _ := e["details"].([]any)
	out := make([]map[string]any, 0, len(d))
	for _, x := range d {
		m, _ := x.(map[string]any)
		out = append(out, m)
	}
	return out
}

// field returns the field named by the first detail of an error response.
func (r resp) field() string {
	e, _ := r.Body["error"].(map[string]any)
	d, _ := e["details"].([]any)
	if len(d) == 0 {
		return ""
	}
	f, _ := d[0].(map[string]any)["field"].(string)
	return f
}

// do sends a request; body may be nil, a string (sent as is) or a value
// (sent as JSON).
func (e *env) do(method, path, token string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("marshal: %v", err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatalf("request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return out
}

// must asserts the status of r and returns it.
func must(t testing.TB, r resp, status int) resp {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Raw)
	}
	return r
}
