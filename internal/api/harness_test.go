package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

var testSecret = []byte("test-secret-0123456789abcdef0123456789abcdef")

// env is one running server on 127.0.0.1:0 with its own SQLite database.
type env struct {
	t     testing.TB
	srv   *httptest.Server
	store vigil.Store
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "vigil.db"), sqlite.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	v, err := auth.NewVerifier(ctx, auth.Config{HS256Secret: testSecret})
	if err != nil {
		t.Fatalf("verifier: %v", err)
	}
	h := api.New(api.Config{Store: store, Verifier: v, Ingester: pipeline.NewDirect(store, nil)})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, store: store}
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
