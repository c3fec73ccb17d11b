package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// fakeAPI serves fixed replies by "METHOD path" and records each request.
type fakeAPI struct {
	t       *testing.T
	replies map[string]fakeReply
	got     []*http.Request
	bodies  []string
}

type fakeReply struct {
	status int
	header map[string]string
	body   string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.got, f.bodies = append(f.got, r), append(f.bodies, string(body))
	key := r.Method + " " + r.URL.Path
	rep, ok := f.replies[key]
	if !ok {
		f.t.Errorf("unexpected request %s", key)
		http.NotFound(w, r)
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func newFake(t *testing.T, replies map[string]fakeReply) (*fakeAPI, *client.Client) {
	t.Helper()
	f := &fakeAPI{t: t, replies: replies}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, client.New(srv.URL+"/", "tok", srv.Client())
}

func TestPostArtifacts(t *testing.T) {
	arts := []client.NewArtifact{{Source: "auth", Raw: "line 1"}, {Source: "auth", Raw: "", Timestamp: "2026-01-01T00:00:00Z", Metadata: map[string]any{"k": 1}}}
	for _, tc := range []struct {
		name  string
		reply fakeReply
		want  client.PostResult
	}{
		{"accepted in part", fakeReply{202, nil, `{"success":true,"message":"Artifacts accepted for processing","data":{"accepted":1,"rejected":1,` +
			`"ids":["a1"],"errors":[{"index":1,"field":"raw","reason":"raw: is required"}]}}`},
			client.PostResult{Status: 202, Accepted: 1, Rejected: 1, IDs: []string{"a1"},
				Errors: []client.ItemError{{Index: 1, Field: "raw", Reason: "raw: is required"}}, Message: "Artifacts accepted for processing"}},
		{"throttled", fakeReply{429, map[string]string{"Retry-After": "3"}, `{"success":false,"message":"slow down","error":{"code":"rate_limited","details":[]}}`},
			client.PostResult{Status: 429, RetryAfter: 3 * time.Second, Code: "rate_limited", Message: "slow down", Details: []client.FieldIssue{}}},
		{"throttled without Retry-After", fakeReply{429, nil, `{"success":false,"message":"slow down","error":{"code":"rate_limited","details":[]}}`},
			client.PostResult{Status: 429, RetryAfter: time.Second, Code: "rate_limited", Message: "slow down", Details: []client.FieldIssue{}}},
		{"too large", fakeReply{413, nil, `{"success":false,"message":"body too large","error":{"code":"payload_too_large","details":[{"field":"body","issue":"too large"}]}}`},
			client.PostResult{Status: 413, Code: "payload_too_large", Message: "body too large", Details: []client.FieldIssue{{Field: "body", Issue: "too large"}}}},
		{"not the API", fakeReply{502, nil, `<html>bad gateway</html>`}, client.PostResult{Status: 502}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t, map[string]fakeReply{"POST /v1/artifacts": tc.reply})
			got, err := c.PostArtifacts(context.Background(), arts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Body != tc.reply.body || got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("body %q, header %v", got.Body, got.Header)
			}
			got.Body, got.Header = "", nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			r := f.got[0]
			if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("request headers %v", r.Header)
			}
			want := `{"artifacts":[{"source":"auth","raw":"line 1"},{"source":"auth","raw":"","timestamp":"2026-01-01T00:00:00Z","metadata":{"k":1}}]}`
			if f.bodies[0] != want {
				t.Errorf("request body %s, want %s", f.bodies[0], want)
			}
		})
	}
	t.Run("2xx not JSON", func(t *testing.T) {
		_, c := newFake(t, map[string]fakeReply{"POST /v1/artifacts": {202, nil, "ok"}})
		if got, err := c.PostArtifactsJSON(context.Background(), []byte(`{"artifacts":[]}`)); err == nil || got.Status != 202 {
			t.Errorf("got %+v, %v; want status 202 and an error", got, err)
		}
	})
}

func TestArtifacts(t *testing.T) {
	f, c := newFake(t, map[string]fakeReply{"GET /v1/artifacts": {200, nil, `{"success":true,"message":"","data":{"artifacts":[` +
		`{"id":"a1","org_id":"o","source":"auth","raw":"r","timestamp":"2026-01-02T03:04:05Z","metadata":{},"created_at":"2026-01-02T03:04:06Z"}],` +
		`"total":7,"limit":1,"offset":2}}`}})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))
	p, err := c.Artifacts(context.Background(), client.ArtifactQuery{Query: `"a b" OR c`, Source: "auth", Start: start, End: start.Add(90 * time.Minute), Limit: 1, Offset: 2})
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 7 || p.Limit != 1 || p.Offset != 2 || len(p.Artifacts) != 1 || p.Artifacts[0].ID != "a1" ||
		!p.Artifacts[0].Timestamp.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("page %+v", p)
	}
	q := f.got[0].URL.Query()
	want := map[string]string{"query": `"a b" OR c`, "source": "auth", "start": "2025-12-31T23:00:00Z", "end": "2026-01-01T00:30:00Z", "limit": "1", "offset": "2"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s=%q, want %q (%s)", k, q.Get(k), v, f.got[0].URL.RawQuery)
		}
	}
	if n, err := c.ArtifactTotal(context.Background()); err != nil || n != 7 {
		t.Errorf("total %d, %v", n, err)
	}
	if got := f.got[1].URL.RawQuery; got != "limit=1" {
		t.Errorf("total asked %q, want limit=1", got)
	}
	if got := (client.ArtifactQuery{}).Values().Encode(); got != "" {
		t.Errorf("zero query encodes as %q", got)
	}
}

func TestIncidents(t *testing.T) {
	const one = `{"id":"i1","title":"SSH brute force","status":2,"artifact_count":10,"merged_into":"i0","nodes":[{"id":"n1","type":"ip","value":"198.51.100.1"}],"observations":[{"id":"o1","type":"brute_force"}]}`
	f, c := newFake(t, map[string]fakeReply{
		"GET /v1/incidents":           {200, nil, `{"success":true,"data":{"incidents":[{"id":"i1","title":"SSH brute force"}],"total":1,"limit":1000,"offset":0}}`},
		"GET /v1/incidents/i1":        {200, nil, `{"success":true,"data":` + one + `}`},
		"PUT /v1/incidents/i1/status": {200, nil, `{"success":true,"data":` + one + `}`},
		"GET /v1/incidents/nope":      {404, nil, `{"success":false,"message":"incident not found","error":{"code":"not_found","details":[]}}`},
	})
	ctx := context.Background()
	p, err := c.Incidents(ctx, 1000, 0)
	if err != nil || p.Total != 1 || len(p.Incidents) != 1 || p.Incidents[0].Title != "SSH brute force" {
		t.Fatalf("list: %+v, %v", p, err)
	}
	if got := f.got[0].URL.RawQuery; got != "limit=1000" {
		t.Errorf("list asked %q", got)
	}
	i, err := c.Incident(ctx, "i1")
	if err != nil || i.ArtifactCount != 10 || i.MergedInto == nil || *i.MergedInto != "i0" || len(i.Nodes) != 1 || i.Nodes[0].Value != "198.51.100.1" ||
		len(i.Observations) != 1 || i.Observations[0].Type != "brute_force" {
		t.Fatalf("get: %+v, %v", i, err)
	}
	if i, err := c.SetIncidentStatus(ctx, "i1", 2); err != nil || i.Status != 2 {
		t.Fatalf("set status: %+v, %v", i, err)
	}
	if got := f.bodies[2]; got != `{"status":2}` {
		t.Errorf("set status sent %s", got)
	}
	_, err = c.Incident(ctx, "nope")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" || e.Message != "incident not found" {
		t.Fatalf("missing incident: %v", err)
	}
	if want := "GET /v1/incidents/nope: 404 Not Found: {"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
}

func TestReady(t *testing.T) {
	f, c := newFake(t, map[string]fakeReply{"GET /readyz": {200, nil, `{"success":true,"message":"ready","data":{"store":"ok","queue":"ok"}}`}})
	checks, err := c.Ready(context.Background())
	if err != nil || !reflect.DeepEqual(checks, map[string]string{"store": "ok", "queue": "ok"}) {
		t.Fatalf("ready: %v, %v", checks, err)
	}
	if h := f.got[0].Header.Get("Authorization"); h != "" {
		t.Errorf("/readyz sent a token: %q", h)
	}
	f.replies["GET /readyz"] = fakeReply{503, nil, `{"success":false,"message":"not ready: store_writes: the disk is full",` +
		`"error":{"code":"unavailable","details":[{"field":"store_writes","issue":"the disk is full"}]}}`}
	checks, err = c.Ready(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code != "unavailable" || e.Message != "not ready: store_writes: the disk is full" {
		t.Fatalf("not ready: %v", err)
	}
	if !reflect.DeepEqual(checks, map[string]string{"store_writes": "the disk is full"}) {
		t.Errorf("failed checks %v", checks)
	}
}

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c := client.New(srv.URL, "tok", nil)
	if _, err := c.PostArtifacts(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "/v1/artifacts") {
		t.Errorf("post to a closed server: %v", err)
	}
	if _, err := c.Metrics(context.Background()); err == nil || !strings.Contains(err.Error(), "/metrics") {
		t.Errorf("scrape of a closed server: %v", err)
	}
}

func TestRetryAfterDate(t *testing.T) {
	at := time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat)
	_, c := newFake(t, map[string]fakeReply{"POST /v1/artifacts": {503, map[string]string{"Retry-After": at}, `{}`}})
	r, err := c.PostArtifactsJSON(context.Background(), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.RetryAfter < 3*time.Second || r.RetryAfter > 6*time.Second {
		t.Errorf("Retry-After %s: waits %v, want about 5 s", at, r.RetryAfter)
	}
}

// The request bodies are the API's own JSON: check that a 2xx reply the
// client cannot read is not mistaken for an accepted batch.
func TestPostResultOfBadData(t *testing.T) {
	_, c := newFake(t, map[string]fakeReply{"POST /v1/artifacts": {202, nil, `{"success":true,"data":{"accepted":"many"}}`}})
	r, err := c.PostArtifactsJSON(context.Background(), []byte(`{}`))
	var se *json.UnmarshalTypeError
	if !errors.As(err, &se) || r.Accepted != 0 {
		t.Errorf("got %+v, %v; want an unmarshal error", r, err)
	}
}
