package console_test

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/console"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestAuditPage: an admin's console lists the org's audit entries with
// each changed field before and after, filters them through the API
// (whose 400 it shows), and a session without admin is refused.
func TestAuditPage(t *testing.T) {
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "vigil.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	secret := []byte("audit-page-secret-0123456789abcdef")
	v, err := auth.NewVerifier(t.Context(), auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(api.Config{Store: store, Verifier: v})
	srv := httptest.NewServer(console.Mount(a, console.New(console.Config{API: a})))
	t.Cleanup(srv.Close)
	mint := func(sub string, perms ...string) string {
		tok, err := auth.Mint(secret, auth.Claims{Subject: sub, OrgID: "acme", Permissions: perms}, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin := mint("ana@acme", "admin")
	apiCall := func(method, path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct{ Data map[string]any }
		json.NewDecoder(res.Body).Decode(&out)
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d", method, path, res.StatusCode)
		}
		return out.Data
	}
	role := apiCall("POST", "/v1/roles", map[string]any{"name": "triage", "permissions": []string{"incidents:read"}})
	apiCall("PUT", "/v1/roles/"+role["id"].(string), map[string]any{"name": "tier1"})
	key := apiCall("POST", "/v1/api-keys", map[string]any{"name": "shipper"})

	b := newBrowser(t)
	b.post(srv.URL+"/signin", url.Values{"token": {admin}})
	status, body, _ := b.get(srv.URL + "/audit")
	page := html.UnescapeString(body)
	if status != http.StatusOK || !strings.Contains(page, `"triage"`) || !strings.Contains(page, `"tier1"`) ||
		!strings.Contains(page, "PUT /v1/roles/"+role["id"].(string)) || !strings.Contains(page, "ana@acme") {
		t.Fatalf("audit page %d without the rename's entry: %.2000s", status, page)
	}
	if strings.Contains(page, key["key"].(string)) {
		t.Error("the audit page shows an API key's secret")
	}
	if _, body, _ := b.get(srv.URL + "/audit?resource_type=api_key"); strings.Contains(body, "tier1") || !strings.Contains(body, "shipper") {
		t.Errorf("filtered by api_key: %.2000s", body)
	}
	if _, body, _ := b.get(srv.URL + "/audit?resource_type=bogus"); !strings.Contains(body, "resource_type") {
		t.Errorf("a bad filter is not named: %.2000s", body)
	}

	other := newBrowser(t)
	other.post(srv.URL+"/signin", url.Values{"token": {mint("bo@acme", "incidents:read")}})
	if status, _, _ := other.get(srv.URL + "/audit"); status != http.StatusForbidden {
		t.Errorf("a session without admin: %d, want 403", status)
	}
}
