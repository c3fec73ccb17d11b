package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/webhook"
)

func createWebhook(t testing.TB, e *env, admin string, body map[string]any) map[string]any {
	t.Helper()
	return must(t, call(t, e, "POST", "/v1/webhooks", admin, body), http.StatusCreated).data()
}

var hookBody = map[string]any{"url": "https://203.0.113.10/hook", "event_types": []string{"incident.created"}}

// TestWebhookEndpointsNeedAdmin: every webhook endpoint requires admin;
// every other permission is 403.
func TestWebhookEndpointsNeedAdmin(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	id := createWebhook(t, e, admin, hookBody)["id"].(string)
	routes := []struct{ method, path string }{
		{"GET", "/v1/webhooks"}, {"POST", "/v1/webhooks"}, {"GET", "/v1/webhooks/" + id}, {"PUT", "/v1/webhooks/" + id},
		{"DELETE", "/v1/webhooks/" + id}, {"GET", "/v1/webhooks/" + id + "/deliveries"},
	}
	for _, perm := range catalog {
		if perm == "admin" {
			continue
		}
		tok := e.token("org-a", perm)
		for _, c := range routes {
			wantError(t, call(t, e, c.method, c.path, tok, map[string]any{"enabled": false}), http.StatusForbidden, "")
		}
	}
	for _, c := range routes {
		wantError(t, call(t, e, c.method, c.path, "", nil), http.StatusUnauthorized, "")
	}
	if h := must(t, call(t, e, "GET", "/v1/webhooks/"+id, admin, nil), http.StatusOK).data(); h["enabled"] != true {
		t.Errorf("a refused PUT or DELETE changed the webhook: %v", h)
	}
	// An admin role grants it as the admin permission does.
	must(t, call(t, e, "GET", "/v1/webhooks", e.token("org-a", "admin"), nil), http.StatusOK)
}

// TestWebhookTenancy: another org's admin can neither read, change,
// delete nor read the delivery log of a subscription, and does not list it.
func TestWebhookTenancy(t *testing.T) {
	e := newEnv(t)
	adminA, adminB := e.token("org-a", "admin"), e.token("org-b", "admin")
	idA := createWebhook(t, e, adminA, hookBody)["id"].(string)
	idB := createWebhook(t, e, adminB, hookBody)["id"].(string)
	wantError(t, call(t, e, "GET", "/v1/webhooks/"+idA, adminB, nil), http.StatusNotFound, "")
	wantError(t, call(t, e, "PUT", "/v1/webhooks/"+idA, adminB, map[string]any{"enabled": false}), http.StatusNotFound, "")
	wantError(t, call(t, e, "DELETE", "/v1/webhooks/"+idA, adminB, nil), http.StatusNotFound, "")
	wantError(t, call(t, e, "GET", "/v1/webhooks/"+idA+"/deliveries", adminB, nil), http.StatusNotFound, "")
	if ids := idsOf(items(t, must(t, call(t, e, "GET", "/v1/webhooks", adminB, nil), http.StatusOK), "webhooks")); len(ids) != 1 || ids[0] != idB {
		t.Errorf("org-b lists %v, want only its own", ids)
	}
	if h := must(t, call(t, e, "GET", "/v1/webhooks/"+idA, adminA, nil), http.StatusOK).data(); h["enabled"] != true {
		t.Errorf("org-b's refused writes changed org-a's webhook: %v", h)
	}
}

func TestWebhookBadInput(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	id := createWebhook(t, e, admin, hookBody)["id"].(string)
	for name, c := range map[string]struct {
		method, body, field string
	}{
		"no url":                     {"POST", `{"event_types": ["incident.created"]}`, "url"},
		"no event types":             {"POST", `{"url": "https://203.0.113.10/"}`, "event_types"},
		"empty event types":          {"POST", `{"url": "https://203.0.113.10/", "event_types": []}`, "event_types"},
		"unknown event type":         {"POST", `{"url": "https://203.0.113.10/", "event_types": ["incident.deleted"]}`, "event_types"},
		"event types a string":       {"POST", `{"url": "https://203.0.113.10/", "event_types": "incident.created"}`, "event_types"},
		"url a number":               {"POST", `{"url": 5, "event_types": ["incident.created"]}`, "url"},
		"http":                       {"POST", `{"url": "http://203.0.113.10/", "event_types": ["incident.created"]}`, "url"},
		"loopback":                   {"POST", `{"url": "https://127.0.0.1:8443/", "event_types": ["incident.created"]}`, "url"},
		"localhost":                  {"POST", `{"url": "https://localhost/", "event_types": ["incident.created"]}`, "url"},
		"metadata":                   {"POST", `{"url": "https://169.254.169.254/latest/", "event_types": ["incident.created"]}`, "url"},
		"metadata over IPv6":         {"POST", `{"url": "https://[fd00:ec2::254]/", "event_types": ["incident.created"]}`, "url"},
		"private":                    {"POST", `{"url": "https://192.168.1.10/", "event_types": ["incident.created"]}`, "url"},
		"localhost, trailing dot":    {"POST", `{"url": "https://localhost./", "event_types": ["incident.created"]}`, "url"},
		"short dotted loopback":      {"POST", `{"url": "https://127.1/", "event_types": ["incident.created"]}`, "url"},
		"decimal loopback":           {"POST", `{"url": "https://2130706433/", "event_types": ["incident.created"]}`, "url"},
		"hex loopback":               {"POST", `{"url": "https://0x7f000001/", "event_types": ["incident.created"]}`, "url"},
		"zero":                       {"POST", `{"url": "https://0/", "event_types": ["incident.created"]}`, "url"},
		"IPv4-compatible loopback":   {"POST", `{"url": "https://[::127.0.0.1]/", "event_types": ["incident.created"]}`, "url"},
		"IPv4-translated loopback":   {"POST", `{"url": "https://[::ffff:0:7f00:1]/", "event_types": ["incident.created"]}`, "url"},
		"update to decimal loopback": {"PUT", `{"url": "https://2130706433:8443/"}`, "url"},
		"credentials in the url":     {"POST", `{"url": "https://u:p@203.0.113.10/", "event_types": ["incident.created"]}`, "url"},
		"url too long":               {"POST", `{"url": "https://203.0.113.10/` + strings.Repeat("a", 2100) + `", "event_types": ["incident.created"]}`, "url"},
		"short secret":               {"POST", `{"url": "https://203.0.113.10/", "event_types": ["incident.created"], "secret": "abc"}`, "secret"},
		"secret with a space":        {"POST", `{"url": "https://203.0.113.10/", "event_types": ["incident.created"], "secret": "0123456789 abcdef"}`, "secret"},
		"enabled a string":           {"POST", `{"url": "https://203.0.113.10/", "event_types": ["incident.created"], "enabled": "yes"}`, "enabled"},
		"unknown field":              {"POST", `{"url": "https://203.0.113.10/", "event_types": ["incident.created"], "org_id": "org-b"}`, "org_id"},
		"not JSON":                   {"POST", `url=x`, "body"},
		"empty update":               {"PUT", `{}`, "body"},
		"update to loopback":         {"PUT", `{"url": "https://[::1]/"}`, "url"},
		"update the secret":          {"PUT", `{"secret": "0123456789abcdef0123"}`, "secret"},
		"update no event types":      {"PUT", `{"event_types": []}`, "event_types"},
	} {
		t.Run(name, func(t *testing.T) {
			path := "/v1/webhooks"
			if c.method == "PUT" {
				path += "/" + id
			}
			wantError(t, call(t, e, c.method, path, admin, c.body), http.StatusBadRequest, c.field)
		})
	}
	wantError(t, call(t, e, "GET", "/v1/webhooks/nope", admin, nil), http.StatusNotFound, "")
	wantError(t, call(t, e, "GET", "/v1/webhooks?limit=0", admin, nil), http.StatusBadRequest, "limit")
	wantError(t, call(t, e, "GET", "/v1/webhooks/"+id+"/deliveries?limit=5000", admin, nil), http.StatusBadRequest, "limit")
}

// TestWebhookSecretShownOnce: the reply to the creation shows the secret
// (generated, or as given); no other reply and no log line does.
func TestWebhookSecretShownOnce(t *testing.T) {
	var logs syncBuffer
	e := newEnvWith(t, func(c *api.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.AccessLog = true
	})
	admin := e.token("org-a", "admin")
	gen := createWebhook(t, e, admin, hookBody)
	given := createWebhook(t, e, admin, map[string]any{"url": "https://203.0.113.10/b", "event_types": []string{"incident.grew", "incident.created"},
		"secret": "my-own-secret-0123456789"})
	if s, _ := gen["secret"].(string); !strings.HasPrefix(s, webhook.SecretPrefix) || len(s) != len(webhook.SecretPrefix)+43 {
		t.Errorf("generated secret %q, want whsec_ and 256 bits", s)
	}
	if given["secret"] != "my-own-secret-0123456789" || !eqStrings(strs(given["event_types"]), []string{"incident.created", "incident.grew"}) {
		t.Errorf("created with a secret: %v", given)
	}
	id := given["id"].(string)
	for _, r := range []resp{
		call(t, e, "GET", "/v1/webhooks/"+id, admin, nil),
		call(t, e, "GET", "/v1/webhooks", admin, nil),
		call(t, e, "PUT", "/v1/webhooks/"+id, admin, map[string]any{"enabled": false}),
		call(t, e, "GET", "/v1/webhooks/"+id+"/deliveries", admin, nil),
		call(t, e, "DELETE", "/v1/webhooks/"+id, admin, nil),
	} {
		must(t, r, http.StatusOK)
		if bytes.Contains(r.Raw, []byte("secret")) {
			t.Errorf("a reply shows the secret: %s", r.Raw)
		}
	}
	for _, s := range []string{gen["secret"].(string), "my-own-secret-0123456789"} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the log holds a secret")
		}
	}
}

// TestWebhookDeliveredThroughAPI: a subscription created through the API
// (to a receiver the operator's policy allows) gets the incident created
// by an observation posted through the API, signed with the secret the
// creation showed, and its delivery log says so.
func TestWebhookDeliveredThroughAPI(t *testing.T) {
	policy := webhook.Policy{AllowHTTPHosts: []string{"127.0.0.1"}, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	e := newEnvWith(t, func(c *api.Config) { c.Webhooks = policy })
	q, err := queue.Open(context.Background(), queue.Config{Dir: filepath.Join(t.TempDir(), "jetstream")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := webhook.New(webhook.Config{Store: e.store, Queue: q, Policy: policy, Poll: 20 * time.Millisecond, Refresh: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; q.Close() })

	type delivery struct {
		h    http.Header
		body []byte
	}
	got := make(chan delivery, 10)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), b}
	}))
	t.Cleanup(rc.Close)
	admin := e.token("org-a", "admin")
	// Refused by default (the loopback), allowed by the operator's flags.
	wantError(t, call(t, newEnv(t), "POST", "/v1/webhooks", admin, map[string]any{"url": rc.URL, "event_types": []string{"incident.created"}}),
		http.StatusBadRequest, "url")
	h := createWebhook(t, e, admin, map[string]any{"url": rc.URL + "/hook", "event_types": []string{"incident.created"}})
	inc := newIncident(t, e, admin, "high")
	var d delivery
	select {
	case d = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery within 30 s")
	}
	if err := webhook.Verify(h["secret"].(string), d.h, d.body, time.Minute, time.Now()); err != nil {
		t.Errorf("delivery does not verify with the secret shown at creation: %v", err)
	}
	if !bytes.Contains(d.body, []byte(`"incident_id":"`+inc+`"`)) || d.h.Get(webhook.HeaderEvent) != "incident.created" {
		t.Errorf("delivery %s %v, want incident %s created", d.body, d.h, inc)
	}
	eventually(t, "the delivery logged as delivered", func() bool {
		ds := items(t, must(t, call(t, e, "GET", "/v1/webhooks/"+h["id"].(string)+"/deliveries", admin, nil), http.StatusOK), "deliveries")
		return len(ds) == 1 && ds[0]["state"] == "delivered" && ds[0]["status_code"] == float64(200) &&
			ds[0]["incident_id"] == inc && ds[0]["id"] == d.h.Get(webhook.HeaderID)
	})
}
