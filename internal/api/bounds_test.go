package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
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
	// A whole artifact (megabytes, for a large one) takes a slot too.
	must(t, e.do("GET", "/v1/artifacts/"+vigil.NewID(), a, nil), http.StatusTooManyRequests)
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
	must(t, e.do("GET", "/v1/artifacts/"+vigil.NewID(), a, nil), http.StatusNotFound)
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

// slowClient is a raw HTTP/1.1 client that sends a request's headers and
// as much of its body as a test says, from a local address of its own
// (every 127.x address reaches the loopback server), so that bodies stay
// unfinished on the server as long as the test wants.
type slowClient struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// startPost sends the headers of a POST /v1/artifacts from local with
// Expect: 100-continue, declaring length bytes (-1: chunked), and
// returns the client and the server's first answer: 100 Continue when
// the server will read the body, else its final response.
func (e *env) startPost(t *testing.T, local, token string, length int64) (*slowClient, *http.Response) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := d.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(time.Minute)) // only so that a failure ends the test
	size := "Transfer-Encoding: chunked"
	if length >= 0 {
		size = fmt.Sprintf("Content-Length: %d", length)
	}
	fmt.Fprintf(conn, "POST /v1/artifacts HTTP/1.1\r\nHost: vigil\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Expect: 100-continue\r\n%s\r\n\r\n", token, size)
	c := &slowClient{t: t, conn: conn, br: bufio.NewReader(conn)}
	return c, c.response()
}

// response reads the server's next response.
func (c *slowClient) response() *http.Response {
	c.t.Helper()
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if res.StatusCode >= 200 {
		body, _ := io.ReadAll(res.Body)
		res.Body = io.NopCloser(bytes.NewReader(body))
	}
	return res
}

// code returns the error code of a response's envelope.
func code(res *http.Response) string {
	var b struct {
		Error struct{ Code string } `json:"error"`
	}
	raw, _ := io.ReadAll(res.Body)
	json.Unmarshal(raw, &b)
	return b.Error.Code
}

// TestBodiesBounded: forty unfinished ~10 MiB bodies raised memory by
// 390 MB. The bytes of bodies in flight are bounded: in all (beyond:
// 503), and per remote address and per org (beyond: 429), each with
// Retry-After, refused before the body is sent (no 100 Continue).
func TestBodiesBounded(t *testing.T) {
	const mib = 1 << 20
	t.Run("FortyUnfinishedBodies", func(t *testing.T) {
		e := newEnvWith(t, func(c *api.Config) { c.BodyGrace = time.Minute })
		admitted, refused := 0, 0
		var held []*slowClient
		for i := range 40 {
			// Each from an address and an org of its own: only the
			// whole budget binds.
			c, res := e.startPost(t, fmt.Sprintf("127.0.1.%d", i+1), e.token(fmt.Sprint("org-", i), "signals:write"), 10*mib)
			switch res.StatusCode {
			case http.StatusContinue:
				admitted++
				c.conn.Write([]byte(`{"artifacts": [{"source": "auth", "raw": "` + strings.Repeat("x", 2*mib)))
				held = append(held, c)
			case http.StatusServiceUnavailable:
				refused++
				if res.Header.Get("Retry-After") == "" || code(res) != vigil.EUNAVAILABLE {
					t.Fatalf("refusal without Retry-After or code unavailable")
				}
			default:
				t.Fatalf("body %d: status %d", i, res.StatusCode)
			}
		}
		if want := api.DefaultBodyBudget / (10 * mib); admitted != want || refused != 40-want {
			t.Fatalf("%d bodies admitted, %d refused; want %d admitted (%d MiB of budget), the rest refused",
				admitted, refused, want, api.DefaultBodyBudget/mib)
		}
		// Bodies given up free their budget.
		for _, c := range held {
			c.conn.Close()
		}
		tok := e.token("org-0", "signals:write")
		eventually(t, "a post once the unfinished bodies are gone", func() bool {
			return e.do("POST", "/v1/artifacts", tok, map[string]any{"artifacts": []any{map[string]any{"source": "auth", "raw": "x"}}}).Status == http.StatusAccepted
		})
	})
	t.Run("PerAddressAndPerOrg", func(t *testing.T) {
		e := newEnvWith(t, func(c *api.Config) {
			c.BodyBudget, c.ClientBodyBudget, c.BodyGrace = 8*mib, 2*mib, time.Minute
		})
		a, b, c := e.token("org-a", "signals:write"), e.token("org-b", "signals:write"), e.token("org-c", "signals:write")
		for _, local := range []string{"127.0.2.1", "127.0.2.2"} {
			if _, res := e.startPost(t, local, a, mib); res.StatusCode != http.StatusContinue {
				t.Fatalf("first bodies: status %d", res.StatusCode)
			}
		}
		// org-a holds its 2 MiB, from two addresses.
		_, res := e.startPost(t, "127.0.2.3", a, mib)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || code(res) != vigil.ERATELIMITED {
			t.Fatalf("org over its budget: status %d, want 429 with Retry-After", res.StatusCode)
		}
		// An address holding 2 MiB, of two orgs.
		for _, tok := range []string{b, c} {
			if _, res := e.startPost(t, "127.0.2.4", tok, mib); res.StatusCode != http.StatusContinue {
				t.Fatalf("status %d", res.StatusCode)
			}
		}
		if _, res := e.startPost(t, "127.0.2.4", e.token("org-d", "signals:write"), mib); res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("address over its budget: status %d, want 429", res.StatusCode)
		}
		// Others still get in.
		if _, res := e.startPost(t, "127.0.2.5", e.token("org-e", "signals:write"), mib); res.StatusCode != http.StatusContinue {
			t.Fatalf("another client: status %d, want 100 Continue", res.StatusCode)
		}
	})
	t.Run("ChunkedTakesBudgetAsItArrives", func(t *testing.T) {
		e := newEnvWith(t, func(c *api.Config) {
			c.BodyBudget, c.ClientBodyBudget, c.BodyGrace = 8*mib, 2*mib, time.Minute
		})
		c, res := e.startPost(t, "127.0.3.1", e.token("org-a", "signals:write"), -1)
		if res.StatusCode != http.StatusContinue {
			t.Fatalf("chunked: status %d, want 100 Continue", res.StatusCode)
		}
		go func() {
			cw := httputil.NewChunkedWriter(c.conn)
			cw.Write([]byte(`{"artifacts": [{"source": "auth", "raw": "`))
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for range 3 * mib / len(chunk) {
				if _, err := cw.Write(chunk); err != nil {
					return
				}
			}
		}()
		res = c.response()
		if res.StatusCode != http.StatusTooManyRequests || code(res) != vigil.ERATELIMITED {
			t.Fatalf("chunked body past the client's budget: status %d, want 429", res.StatusCode)
		}
	})
	t.Run("DeclaredTooLarge", func(t *testing.T) {
		e := newEnv(t)
		_, res := e.startPost(t, "127.0.4.1", e.token("org-a", "signals:write"), api.MaxBodyBytes+1)
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413 before the body", res.StatusCode)
		}
	})
}

// TestBodyDeadline: a body must arrive within a grace period plus its
// size at a minimum rate; one that stalls is answered 408 and its
// budget freed, instead of being held for the server's read timeout.
func TestBodyDeadline(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) {
		c.BodyBudget, c.ClientBodyBudget, c.BodyGrace, c.BodyMinRate = 64<<10, 64<<10, 300*time.Millisecond, 1<<20
	})
	tok := e.token("org-a", "signals:write")
	c, res := e.startPost(t, "127.0.5.1", tok, 64<<10)
	if res.StatusCode != http.StatusContinue {
		t.Fatalf("status %d, want 100 Continue", res.StatusCode)
	}
	c.conn.Write([]byte(`{"artifacts": [`))
	res = c.response()
	if res.StatusCode != http.StatusRequestTimeout || code(res) != vigil.ETIMEOUT {
		t.Fatalf("stalled body: status %d, want 408 request_timeout", res.StatusCode)
	}
	// Its budget (all of it) is free again.
	if _, res := e.startPost(t, "127.0.5.1", tok, 64<<10); res.StatusCode != http.StatusContinue {
		t.Fatalf("after the stalled body: status %d, want 100 Continue", res.StatusCode)
	}
}
