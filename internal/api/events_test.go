package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
)

// sse is one server-sent event as a client reads it.
type sse struct {
	id, event string
	data      map[string]any
}

// stream is an open GET /v1/events whose events arrive on c.
type stream struct {
	resp *http.Response
	c    chan sse
}

func openStream(t *testing.T, e *env, tok, query, lastID string) *stream {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("GET /v1/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{resp: resp, c: make(chan sse, 100)}
	go func() {
		defer close(s.c)
		sc := bufio.NewScanner(resp.Body)
		var ev sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.event != "" {
					s.c <- ev
				}
				ev = sse{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data)
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next returns the next event, failing t when none comes within 10 s.
func (s *stream) next(t *testing.T) sse {
	t.Helper()
	select {
	case ev, ok := <-s.c:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sse{}
}

func (s *stream) close() { s.resp.Body.Close() }

// TestEventStream: GET /v1/events carries the org's incident events as
// they happen, in order, resumes after Last-Event-ID, filters by type and
// never shows another org's.
func TestEventStream(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) { c.EventPoll = 10 * time.Millisecond })
	admin := e.token("org-a", "admin")
	reader := e.token("org-a", "incidents:read")
	// What happened before a stream opens without Last-Event-ID is not replayed.
	before := newIncident(t, e, admin, "low")
	s := openStream(t, e, reader, "", "")
	statuses := openStream(t, e, reader, "?types=incident.status_changed", "")
	theirs := openStream(t, e, e.token("org-b", "incidents:read"), "", "")

	inc := newIncident(t, e, admin, "high")
	must(t, call(t, e, "PUT", "/v1/incidents/"+inc+"/status", admin, map[string]any{"status": 2}), http.StatusOK)
	must(t, call(t, e, "PUT", "/v1/incidents/"+inc, admin, map[string]any{"assignee": "bob"}), http.StatusOK)
	must(t, call(t, e, "POST", "/v1/incidents/"+inc+"/comments", admin, map[string]any{"body": "on it"}), http.StatusCreated)
	must(t, call(t, e, "PUT", "/v1/incidents/"+before+"/status", admin, map[string]any{"status": 4}), http.StatusOK)

	want := []struct{ typ, incident string }{
		{"incident.created", inc}, {"incident.status_changed", inc}, {"incident.assigned", inc},
		{"incident.commented", inc}, {"incident.status_changed", before},
	}
	var got []sse
	for i, w := range want {
		ev := s.next(t)
		if ev.event != w.typ || ev.data["type"] != w.typ || ev.data["incident_id"] != w.incident || ev.id == "" {
			t.Fatalf("event %d = %+v, want %s of %s", i, ev, w.typ, w.incident)
		}
		got = append(got, ev)
	}
	if got[1].data["actor"] != "analyst@org-a" {
		t.Errorf("status change by %v, want the token's sub", got[1].data["actor"])
	}
	for _, w := range []string{inc, before} {
		if ev := statuses.next(t); ev.event != "incident.status_changed" || ev.data["incident_id"] != w {
			t.Errorf("types=incident.status_changed stream: %+v, want the status change of %s", ev, w)
		}
	}
	// The other org sees its own first event, nothing of org-a's.
	newIncident(t, e, e.token("org-b", "admin"), "low")
	if ev := theirs.next(t); ev.event != "incident.created" || ev.data["incident_id"] == inc || ev.data["incident_id"] == before {
		t.Errorf("org-b's stream: %+v", ev)
	}

	// A client that saw the second event resumes after it.
	s.close()
	must(t, call(t, e, "PUT", "/v1/incidents/"+inc, admin, map[string]any{"tags": []string{"c2"}}), http.StatusOK)
	again := openStream(t, e, reader, "", got[1].id)
	for _, w := range []string{"incident.assigned", "incident.commented", "incident.status_changed", "incident.tagged"} {
		if ev := again.next(t); ev.event != w {
			t.Fatalf("resumed stream: %s, want %s", ev.event, w)
		}
	}
	// The parameter serves clients that cannot set the header.
	q := openStream(t, e, reader, "?last_event_id="+got[3].id, "")
	if ev := q.next(t); ev.id != got[4].id {
		t.Errorf("last_event_id=%s resumed at %s, want %s", got[3].id, ev.id, got[4].id)
	}

	wantError(t, call(t, e, "GET", "/v1/events?types=incident.deleted", reader, nil), http.StatusBadRequest, "types")
	wantError(t, call(t, e, "GET", "/v1/events?last_event_id=x", reader, nil), http.StatusBadRequest, "last_event_id")
	wantError(t, call(t, e, "GET", "/v1/events", e.token("org-a", "signals:read"), nil), http.StatusForbidden, "")
	wantError(t, call(t, e, "GET", "/v1/events", "", nil), http.StatusUnauthorized, "")
}

// TestEventStreamBounds: one org holds a bounded number of streams, and
// StopStreams ends them (a graceful shutdown is not held by them).
func TestEventStreamBounds(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) { c.MaxOrgStreams = 2 })
	tok := e.token("org-a", "incidents:read")
	a := openStream(t, e, tok, "", "")
	openStream(t, e, tok, "", "")
	wantError(t, call(t, e, "GET", "/v1/events", tok, nil), http.StatusTooManyRequests, "")
	openStream(t, e, e.token("org-b", "incidents:read"), "", "") // another org's bound is its own
	a.close()
	eventually(t, "a slot freed by a closed stream", func() bool {
		r := e.do("GET", "/v1/events?types=x", tok, nil) // refused before taking a slot
		if r.Status != http.StatusBadRequest {
			return false
		}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func TestStopStreams(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg
	cfg.Registry = nil
	h := api.New(cfg)
	srv := httptest.NewServer(h)
	defer srv.Close()
	other := &env{t: t, srv: srv, store: e.store, cfg: cfg}
	s := openStream(t, other, e.token("org-a", "incidents:read"), "", "")
	h.StopStreams()
	select {
	case _, open := <-s.c:
		if open {
			t.Fatal("an event after StopStreams")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream still open 10 s after StopStreams")
	}
}
