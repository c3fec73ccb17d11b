package api_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestMetricsRoute: the API serves /metrics only when configured to, and
// with a metrics token only to a request that carries it (an API token,
// even an admin's, is not it).
func TestMetricsRoute(t *testing.T) {
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "v.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	const token = "metrics-token-0123456789"
	for _, tc := range []struct {
		name   string
		cfg    api.Config
		bearer string
		want   int
	}{
		{"off", api.Config{NoMetrics: true}, "", http.StatusNotFound},
		{"off, with a token", api.Config{NoMetrics: true, MetricsToken: token}, token, http.StatusNotFound},
		{"open", api.Config{}, "", http.StatusOK},
		{"token missing", api.Config{MetricsToken: token}, "", http.StatusUnauthorized},
		{"an admin's JWT", api.Config{MetricsToken: token}, admin, http.StatusUnauthorized},
		{"token", api.Config{MetricsToken: token}, token, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Store = store
			h := api.New(tc.cfg)
			req := httptest.NewRequest("GET", "/metrics", nil)
			if tc.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Errorf("GET /metrics: %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
}
