package api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
)

// createKey creates an API key of the admin token's org and returns the
// reply's data (with key and encoded).
func createKey(t testing.TB, e *env, admin, name string) map[string]any {
	t.Helper()
	return must(t, call(t, e, "POST", "/v1/api-keys", admin, map[string]any{"name": name}), http.StatusCreated).data()
}

// artifactBody is a batch of one artifact with raw.
func artifactBody(raw string) []byte {
	b, _ := json.Marshal(map[string]any{"artifacts": []any{map[string]any{"source": "custom", "raw": raw}}})
	return b
}

// postWith posts one artifact with the Authorization header given.
func postWith(t testing.TB, e *env, authz, raw string) resp {
	t.Helper()
	return rawCall(t, e, "POST", "/v1/artifacts", map[string]string{"Authorization": authz, "Content-Type": "application/json"},
		artifactBody(raw))
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// searchTotal is the total of a search of org's artifacts for query.
func searchTotal(t testing.TB, e *env, tok, query string) int {
	t.Helper()
	return total(t, must(t, call(t, e, "GET", "/v1/artifacts?query="+query, tok, nil), http.StatusOK))
}

func TestAPIKeyLifecycle(t *testing.T) {
	var logs syncBuffer
	e := newEnvWith(t, func(c *api.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.AccessLog = true
	})
	admin := e.token("org-a", "admin")
	reader := e.token("org-a", "signals:read")

	k := createKey(t, e, admin, "  filebeat on web-01 ")
	id, secret, encoded := k["id"].(string), k["key"].(string), k["encoded"].(string)
	if k["name"] != "filebeat on web-01" || k["org_id"] != "org-a" || !eqStrings(strs(k["permissions"]), []string{"signals:write"}) ||
		k["last_used_at"] != nil || k["revoked_at"] != nil || k["created_by"] != "analyst@org-a" {
		t.Fatalf("created key = %v", k)
	}
	if !strings.HasPrefix(secret, "vgk_"+id+"_") || len(secret) != 84 {
		t.Fatalf("key %q: want vgk_<id>_<43 characters>", secret)
	}
	if dec, _ := base64.StdEncoding.DecodeString(encoded); string(dec) != id+":"+secret {
		t.Fatalf("encoded = %q, want base64(id:key)", encoded)
	}
	if _, ok := k["hash"]; ok {
		t.Fatalf("the reply shows the hash: %v", k)
	}

	// Every way shippers present it ingests into the key's org.
	for i, authz := range []string{
		"Bearer " + secret,
		"ApiKey " + encoded,
		"ApiKey " + secret,
		basic("elastic", secret),
		basic(id, secret),
	} {
		r := postWith(t, e, authz, "line sent with credential form "+string(rune('a'+i)))
		if r.Status != http.StatusAccepted {
			t.Fatalf("form %d (%s…): status %d, body %s", i, authz[:10], r.Status, r.Raw)
		}
	}
	if n := searchTotal(t, e, reader, "credential"); n != 5 {
		t.Errorf("org-a holds %d artifacts sent with the key, want 5", n)
	}
	if n := searchTotal(t, e, e.token("org-b", "signals:read"), "credential"); n != 0 {
		t.Errorf("org-b sees %d artifacts sent with org-a's key", n)
	}

	// The secret is never shown again, nor logged.
	got := must(t, call(t, e, "GET", "/v1/api-keys/"+id, admin, nil), http.StatusOK)
	list := must(t, call(t, e, "GET", "/v1/api-keys", admin, nil), http.StatusOK)
	for _, r := range []resp{got, list} {
		if bytes.Contains(r.Raw, []byte(secret[len(secret)-43:])) || bytes.Contains(r.Raw, []byte(`"key"`)) {
			t.Errorf("a later reply shows the key: %s", r.Raw)
		}
	}
	if ids := idsOf(items(t, list, "api_keys")); len(ids) != 1 || ids[0] != id {
		t.Errorf("list = %v, want [%s]", ids, id)
	}
	eventually(t, "last_used_at recorded", func() bool {
		return call(t, e, "GET", "/v1/api-keys/"+id, admin, nil).data()["last_used_at"] != nil
	})

	// Revoked: refused at once by the process that revoked it.
	rev := must(t, call(t, e, "DELETE", "/v1/api-keys/"+id, admin, nil), http.StatusOK).data()
	if rev["revoked_at"] == nil {
		t.Fatalf("revoked key = %v", rev)
	}
	r := postWith(t, e, "Bearer "+secret, "after revocation")
	wantError(t, r, http.StatusUnauthorized, "")
	if !strings.Contains(string(r.Raw), "API key revoked") {
		t.Errorf("401 body %s, want it to say the key is revoked", r.Raw)
	}
	if again := must(t, call(t, e, "DELETE", "/v1/api-keys/"+id, admin, nil), http.StatusOK).data(); again["revoked_at"] != rev["revoked_at"] {
		t.Errorf("revoked again: revoked_at %v, want the first %v", again["revoked_at"], rev["revoked_at"])
	}
	if strings.Contains(logs.String(), secret[4+36+1:]) || strings.Contains(logs.String(), encoded) {
		t.Errorf("the log holds the key:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "api-key:"+id) {
		t.Errorf("the access log does not name the key's id as the caller:\n%s", logs.String())
	}
}

// TestAPIKeyRevokedEverywhere: a key revoked through one process stops
// working on another that had it cached, within that one's key TTL.
func TestAPIKeyRevokedEverywhere(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) { c.KeyTTL = 200 * time.Millisecond })
	other := e.sibling()
	admin := e.token("org-a", "admin")
	k := createKey(t, e, admin, "rsyslog")
	secret := k["key"].(string)
	must(t, postWith(t, other, "Bearer "+secret, "cached on the other process"), http.StatusAccepted)
	must(t, call(t, e, "DELETE", "/v1/api-keys/"+k["id"].(string), admin, nil), http.StatusOK)
	start := time.Now()
	eventually(t, "the other process refuses the revoked key", func() bool {
		return postWith(t, other, "Bearer "+secret, "sent after revocation").Status == http.StatusUnauthorized
	})
	t.Logf("refused by the other process %v after the revocation (TTL 200ms)", time.Since(start).Round(time.Millisecond))
}

// TestAPIKeyOnlyIngests: a key is refused (403) by every endpoint of the
// contract but POST /v1/artifacts, and by the key management endpoints.
func TestAPIKeyOnlyIngests(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	secret := createKey(t, e, admin, "shipper")["key"].(string)
	for _, ep := range endpoints {
		path, body := ep.setup(t, e, admin)
		t.Run(ep.String(), func(t *testing.T) {
			r := call(t, e, ep.method, "/v1"+path, secret, body)
			if ep.method == "POST" && ep.path == "/artifacts" {
				must(t, r, ep.ok)
				return
			}
			wantError(t, r, http.StatusForbidden, "")
		})
	}
	for _, m := range []string{"GET", "POST"} {
		wantError(t, call(t, e, m, "/v1/api-keys", secret, map[string]any{"name": "more"}), http.StatusForbidden, "")
	}
}

// TestAPIKeyEndpointsNeedAdmin: the key endpoints require admin; every
// other permission is 403.
func TestAPIKeyEndpointsNeedAdmin(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	id := createKey(t, e, admin, "k")["id"].(string)
	for _, perm := range catalog {
		if perm == "admin" {
			continue
		}
		tok := e.token("org-a", perm)
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/api-keys"}, {"POST", "/v1/api-keys"}, {"GET", "/v1/api-keys/" + id}, {"DELETE", "/v1/api-keys/" + id},
		} {
			wantError(t, call(t, e, c.method, c.path, tok, map[string]any{"name": "x"}), http.StatusForbidden, "")
		}
	}
	wantError(t, call(t, e, "GET", "/v1/api-keys", "", nil), http.StatusUnauthorized, "")
	if k := must(t, call(t, e, "GET", "/v1/api-keys/"+id, admin, nil), http.StatusOK).data(); k["revoked_at"] != nil {
		t.Errorf("a refused DELETE revoked the key: %v", k)
	}
}

// TestAPIKeyTenancy: another org's admin can neither read nor revoke a
// key, and does not list it.
func TestAPIKeyTenancy(t *testing.T) {
	e := newEnv(t)
	adminA, adminB := e.token("org-a", "admin"), e.token("org-b", "admin")
	ka := createKey(t, e, adminA, "org a")
	kb := createKey(t, e, adminB, "org b")
	idA := ka["id"].(string)
	wantError(t, call(t, e, "GET", "/v1/api-keys/"+idA, adminB, nil), http.StatusNotFound, "")
	wantError(t, call(t, e, "DELETE", "/v1/api-keys/"+idA, adminB, nil), http.StatusNotFound, "")
	if ids := idsOf(items(t, must(t, call(t, e, "GET", "/v1/api-keys", adminB, nil), http.StatusOK), "api_keys")); len(ids) != 1 || ids[0] != kb["id"] {
		t.Errorf("org-b lists %v, want only its own key", ids)
	}
	must(t, postWith(t, e, "Bearer "+ka["key"].(string), "org a's key still works"), http.StatusAccepted)
	// A secret whose id is another key's is refused, not taken as either.
	forged := "vgk_" + kb["id"].(string) + ka["key"].(string)[40:]
	wantError(t, postWith(t, e, "Bearer "+forged, "forged"), http.StatusUnauthorized, "")
}

func TestAPIKeyBadInput(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	k := createKey(t, e, admin, "valid")
	id, secret := k["id"].(string), k["key"].(string)
	for name, c := range map[string]struct {
		body  string
		field string
	}{
		"no name":       {`{}`, "name"},
		"empty name":    {`{"name": "  "}`, "name"},
		"long name":     {`{"name": "` + strings.Repeat("n", 201) + `"}`, "name"},
		"name a number": {`{"name": 7}`, "name"},
		"unknown field": {`{"name": "x", "permissions": ["admin"]}`, "permissions"},
		"not JSON":      {`name=x`, "body"},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, call(t, e, "POST", "/v1/api-keys", admin, c.body), http.StatusBadRequest, c.field)
		})
	}
	wantError(t, call(t, e, "GET", "/v1/api-keys/"+"nope", admin, nil), http.StatusNotFound, "")
	wantError(t, call(t, e, "GET", "/v1/api-keys?limit=0", admin, nil), http.StatusBadRequest, "limit")

	wrong := secret[:len(secret)-4] + "AAAA"
	if wrong == secret {
		wrong = secret[:len(secret)-4] + "BBBB"
	}
	for name, authz := range map[string]string{
		"wrong secret":          "Bearer " + wrong,
		"truncated secret":      "Bearer " + secret[:50],
		"ApiKey not base64":     "ApiKey %%%",
		"ApiKey other id":       "ApiKey " + base64.StdEncoding.EncodeToString([]byte("someone:"+secret)),
		"ApiKey without colon":  "ApiKey " + base64.StdEncoding.EncodeToString([]byte(secret)),
		"Basic not a key":       basic(id, "password"),
		"Basic not base64":      "Basic %%%",
		"unknown id":            "Bearer vgk_00000000-0000-7000-8000-000000000000_" + secret[41:],
		"Bearer neither key or": "Bearer vgk-not-a-key",
	} {
		t.Run(name, func(t *testing.T) {
			r := postWith(t, e, authz, "refused")
			wantError(t, r, http.StatusUnauthorized, "")
			if h := r.Header.Values("WWW-Authenticate"); len(h) != 3 {
				t.Errorf("WWW-Authenticate = %q, want Bearer, Basic and ApiKey challenges", h)
			}
		})
	}
	if n := searchTotal(t, e, e.token("org-a", "signals:read"), "refused"); n != 0 {
		t.Errorf("%d refused artifacts stored", n)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
