package e2e_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// hookReceiver is a webhook receiver written from docs/events.md: it
// checks each delivery's signature, answers 503 while down, and records
// the events it took (first arrival of each delivery id) by incident.
type hookReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	secret   string
	down     bool
	requests int
	bad      []string
	seen     map[string]bool
	order    map[string][]int64
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{down: true, seen: map[string]bool{}, order: map[string][]int64{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.requests++
		if rc.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		m := hmac.New(sha256.New, []byte(rc.secret))
		m.Write([]byte(r.Header.Get("Vigil-Webhook-Timestamp") + "."))
		m.Write(body)
		if !hmac.Equal([]byte(r.Header.Get("Vigil-Webhook-Signature")), []byte("v1="+hex.EncodeToString(m.Sum(nil)))) {
			rc.bad = append(rc.bad, r.Header.Get("Vigil-Webhook-Id"))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p struct {
			ID    string               `json:"id"`
			Event *vigil.IncidentEvent `json:"event"`
		}
		if json.Unmarshal(body, &p) != nil || p.Event == nil {
			rc.bad = append(rc.bad, string(body))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if !rc.seen[p.ID] {
			rc.seen[p.ID] = true
			rc.order[p.Event.IncidentID] = append(rc.order[p.Event.IncidentID], p.Event.ID)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) locked(f func()) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	f()
}

// TestWebhookSurvivesCrash: deliveries pending for a receiver that is
// down survive a SIGKILL of vigil serve; once the receiver is back, the
// next process over the same data dir delivers every event of every
// incident, in the order of its history, signed.
func TestWebhookSurvivesCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	args := []string{"--webhook-allow-http-hosts", "127.0.0.1", "--webhook-allow-networks", "127.0.0.0/8", "--webhook-retry-base", "200ms"}
	p1 := startVigil(t, "vigil#1", dir, args...)
	tok := mintToken(t, dir, org, "admin")
	rc := newHookReceiver(t)
	_, secret, err := newClient(p1, tok).CreateWebhook(ctx, rc.srv.URL+"/hook", vigil.WebhookEventTypes)
	if err != nil {
		t.Fatal(err)
	}
	rc.locked(func() { rc.secret = secret })

	var incidents []string
	for range 3 {
		var o struct {
			IncidentID string `json:"incident_id"`
		}
		jsonCall(t, p1, tok, "POST", "/v1/observations", map[string]any{"type": "auth", "description": "brute force"}, http.StatusCreated, &o)
		incidents = append(incidents, o.IncidentID)
	}
	for _, inc := range incidents {
		jsonCall(t, p1, tok, "PUT", "/v1/incidents/"+inc+"/status", map[string]any{"status": 2}, http.StatusOK, nil)
		jsonCall(t, p1, tok, "POST", "/v1/incidents/"+inc+"/comments", map[string]any{"body": "looking"}, http.StatusCreated, nil)
	}
	pollUntil(t, 30*time.Second, "three failed attempts", func() (int, bool) {
		n := 0
		rc.locked(func() { n = rc.requests })
		return n, n >= 3
	})
	p1.kill(t)

	rc.locked(func() { rc.down = false })
	p2 := startVigil(t, "vigil#2", dir, args...)
	want := map[string][]int64{}
	n := 0
	for _, inc := range incidents {
		var h struct {
			Events []vigil.IncidentEvent `json:"events"`
		}
		jsonCall(t, p2, tok, "GET", "/v1/incidents/"+inc+"/history", nil, http.StatusOK, &h)
		for _, ev := range h.Events {
			if slices.Contains(vigil.WebhookEventTypes, ev.Type) {
				want[inc] = append(want[inc], ev.ID)
				n++
			}
		}
	}
	if n < 9 {
		t.Fatalf("history holds %d subscribed events of the 3 incidents, want at least 9 (created, status, comment each)", n)
	}
	pollUntil(t, 60*time.Second, "every event delivered after the restart", func() (int, bool) {
		got := 0
		rc.locked(func() { got = len(rc.seen) })
		return got, got >= n
	})
	rc.locked(func() {
		if len(rc.bad) > 0 {
			t.Errorf("receiver refused %q", rc.bad)
		}
		for inc, ids := range want {
			if !slices.Equal(rc.order[inc], ids) {
				t.Errorf("incident %s: received events %v, want %v in this order", inc, rc.order[inc], ids)
			}
		}
		t.Logf("%d events of %d incidents delivered after a SIGKILL, in order; %d requests in all", n, len(incidents), rc.requests)
	})
}

// jsonCall sends a JSON request with tok to p and decodes the envelope's
// data into out (if not nil), failing t unless the status is want.
func jsonCall(t *testing.T, p *proc, tok, method, path string, in any, want int, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || json.Unmarshal(env.Data, out) != nil {
			t.Fatalf("%s %s: reply %s", method, path, raw)
		}
	}
}
