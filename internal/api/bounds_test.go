package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/search"
)

// holdSearches is a store whose searches of one org wait, once inside,
// until released (or until their context ends, when they go on to the
// real store with it).
type holdSearches struct {
	api.Store
	org     string
	entered chan struct{}
	release chan struct{}
}

func (h *holdSearches) SearchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int, error) {
	if org == h.org {
		h.entered <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	return h.Store.SearchArtifacts(ctx, org, f)
}

func holdingEnv(t *testing.T, org string, configure func(*api.Config)) (*env, *holdSearches) {
	h := &holdSearches{org: org, entered: make(chan struct{}, 100), release: make(chan struct{})}
	e := newEnvWith(t, func(c *api.Config) {
		h.Store = c.Store
		c.Store = h
		if configure != nil {
			configure(c)
		}
	})
	return e, h
}

// TestSearchCostRefused: a phrase of 500 tokens (within the 1,024 bytes
// and 32 terms a query may have) took 6 s on 91,000 artifacts; it is
// refused before it reaches the store, as is a query costing more than
// MaxQueryCost, with a 400 naming the query.
func TestSearchCostRefused(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:read", "signals:write")
	must(t, e.do("POST", "/v1/artifacts", tok, map[string]any{"artifacts": []map[string]any{{"source": "auth", "raw": strings.Repeat("a ", 20)}}}), http.StatusAccepted)
	for name, q := range map[string]string{
		"phrase of 500 tokens":  `"` + strings.Repeat("a ", 500) + `"`,
		"address of 17 parts":   strings.Repeat("1.", search.MaxPhraseTokens) + "1",
		"one-letter prefixes":   strings.Repeat("a* ", 5),
		"five phrases of 16":    strings.Repeat(`"`+strings.Repeat("a ", 16)+`" `, 5),
		"excluded long phrases": "a " + strings.Repeat(`-"`+strings.Repeat("b ", 16)+`" `, 4) + "-c",
	} {
		t.Run(name, func(t *testing.T) {
			r := must(t, e.do("GET", "/v1/artifacts?query="+url.QueryEscape(q), tok, nil), http.StatusBadRequest)
			if r.errCode() != vigil.EINVALID || r.field() != "query" {
				t.Fatalf("code %q field %q, want invalid_argument on query; body %s", r.errCode(), r.field(), r.Raw)
			}
		})
	}
	// The most a query may cost still runs.
	r := must(t, e.do("GET", "/v1/artifacts?query="+url.QueryEscape(`"`+strings.Repeat("a ", 16)+`"`), tok, nil), http.StatusOK)
	if r.data()["total"] != float64(1) {
		t.Fatalf("total %v, want 1", r.data()["total"])
	}
}

// TestSearchesPerOrgBounded: an org may run MaxOrgSearches searches at
// once; one more is a 429 with Retry-After, while another org searches
// and reads its incidents as usual. Nothing here depends on timing: the
// org's searches are held inside the store until released.
func TestSearchesPerOrgBounded(t *testing.T) {
	e, h := holdingEnv(t, "org-a", nil)
	a := e.token("org-a", "signals:read")
	b := e.token("org-b", "signals:read", "incidents:read", "observations:write")
	must(t, e.do("POST", "/v1/observations", b, map[string]any{"type": "auth", "description": "b's finding"}), http.StatusCreated)

	var wg sync.WaitGroup
	held := make([]resp, api.DefaultMaxOrgSearches)
	for i := range held {
		wg.Go(func() { held[i] = e.do("GET", "/v1/artifacts?query=sshd", a, nil) })
	}
	for range held {
		<-h.entered
	}
	r := must(t, e.do("GET", "/v1/artifacts", a, nil), http.StatusTooManyRequests)
	if r.errCode() != vigil.ERATELIMITED || r.Header.Get("Retry-After") == "" {
		t.Fatalf("code %q Retry-After %q, want rate_limited with Retry-After", r.errCode(), r.Header.Get("Retry-After"))
	}
	// Another org is not held back by them.
	if got := must(t, e.do("GET", "/v1/incidents", b, nil), http.StatusOK).data()["total"]; got != float64(1) {
		t.Fatalf("org-b incidents total %v, want 1", got)
	}
	for range 2 * api.DefaultMaxOrgSearches {
		must(t, e.do("GET", "/v1/artifacts?query=sshd", b, nil), http.StatusOK)
	}
	select {
	case <-h.entered:
		t.Fatal("a refused search reached the store")
	default:
	}
	close(h.release)
	wg.Wait()
	for _, r := range held {
		must(t, r, http.StatusOK)
	}
	// The slots are free again.
	must(t, e.do("GET", "/v1/artifacts", a, nil), http.StatusOK)
}

// TestSearchDeadline: a search still running at its deadline is stopped
// (the store's driver gets the cancelled context) and answered 503
// unavailable saying so and what to do.
func TestSearchDeadline(t *testing.T) {
	e, h := holdingEnv(t, "org-a", func(c *api.Config) { c.SearchTimeout = 200 * time.Millisecond })
	a := e.token("org-a", "signals:read")
	r := must(t, e.do("GET", "/v1/artifacts?query=sshd", a, nil), http.StatusServiceUnavailable)
	<-h.entered
	msg, _ := r.Body["message"].(string)
	if r.errCode() != vigil.EUNAVAILABLE || !strings.Contains(msg, "did not finish within 200ms") || !strings.Contains(msg, "narrow it") {
		t.Fatalf("code %q message %q, want unavailable saying the search took too long", r.errCode(), msg)
	}
	// Its slot was given back.
	for range api.DefaultMaxOrgSearches + 1 {
		must(t, e.do("GET", "/v1/artifacts?query=sshd", a, nil), http.StatusServiceUnavailable)
	}
}

// TestRequestDeadline: every other request has a deadline too.
func TestRequestDeadline(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) {
		c.Store = slowIncidents{c.Store}
		c.RequestTimeout = 200 * time.Millisecond
	})
	r := must(t, e.do("GET", "/v1/incidents", e.token("org-a", "incidents:read"), nil), http.StatusServiceUnavailable)
	if msg, _ := r.Body["message"].(string); r.errCode() != vigil.EUNAVAILABLE || !strings.Contains(msg, "did not finish in time") {
		t.Fatalf("code %q message %q, want unavailable saying the request took too long", r.errCode(), msg)
	}
}

// slowIncidents lists incidents only once the request's context ends.
type slowIncidents struct{ api.Store }

func (s slowIncidents) ListIncidents(ctx context.Context, org string, f vigil.IncidentFilter) ([]*vigil.Incident, int, error) {
	<-ctx.Done()
	return s.Store.ListIncidents(ctx, org, f)
}

// TestArtifactListBounded: 108 Suricata lines with 1 MiB URLs made a
// 340 MB response, built whole in memory (1.3 GB of heap). A list now
// shows previews (raw cut to 16 KiB, the event of a cut raw left out) and
// encodes them one at a time: the response and what the server allocates
// to answer it are bounded by the page, not by what is stored; the
// artifact by id is whole.
func TestArtifactListBounded(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:read")
	const n = 40
	longURL := "/" + strings.Repeat("A", vigil.MaxRawBytes-200)
	var arts []*vigil.Artifact
	for i := range n {
		raw := `{"timestamp":"2024-05-01T10:00:00.000000+0000","event_type":"http","src_ip":"203.0.113.7","dest_ip":"10.0.0.5",` +
			`"http":{"hostname":"evil.example","url":"` + longURL + `","status":200}}`
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "suricata", Raw: raw, Metadata: []byte("{}"),
			Timestamp: time.Date(2024, 5, 1, 10, 0, i, 0, time.UTC), CreatedAt: time.Now()})
	}
	if err := e.store.InsertArtifacts(context.Background(), "org-a", arts); err != nil {
		t.Fatal(err)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := must(t, e.do("GET", "/v1/artifacts?limit=1000", tok, nil), http.StatusOK)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("response %d bytes, %d KiB allocated", len(r.Raw), allocated>>10)

	// Per artifact: 16 KiB of raw and a little JSON around it.
	if limit := n * (vigil.PreviewRawBytes + 2<<10); len(r.Raw) > limit {
		t.Fatalf("response of %d bytes for %d artifacts, want at most %d", len(r.Raw), n, limit)
	}
	// The server's work and the client's reading of the body (decoded
	// twice by the harness): a few times the response, never the
	// 40 MiB stored.
	if limit := uint64(16 << 20); allocated > limit {
		t.Fatalf("answering allocated %d MiB, want at most %d MiB", allocated>>20, limit>>20)
	}
	list := r.data()["artifacts"].([]any)
	if len(list) != n || r.data()["total"] != float64(n) {
		t.Fatalf("%d artifacts of total %v, want %d", len(list), r.data()["total"], n)
	}
	for _, x := range list {
		a := x.(map[string]any)
		if a["raw_truncated"] != true || a["raw_bytes"] != float64(len(arts[0].Raw)) || a["event_truncated"] != true || a["event"] != nil {
			t.Fatalf("preview: raw_truncated %v raw_bytes %v event_truncated %v", a["raw_truncated"], a["raw_bytes"], a["event_truncated"])
		}
	}
	whole := must(t, e.do("GET", "/v1/artifacts/"+arts[3].ID, tok, nil), http.StatusOK).data()
	ev, _ := whole["event"].(map[string]any)
	if whole["raw"] != arts[3].Raw || ev == nil || !strings.HasSuffix(fmt.Sprint(ev["url.original"]), "AAAA") {
		t.Fatalf("artifact by id: raw of %d bytes, event %.200v", len(whole["raw"].(string)), ev)
	}
}
