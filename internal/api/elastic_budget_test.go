package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
)

// smallDocsBulk is a bulk request of n documents of one short real line
// each (lines of at most 60 bytes of the auth and DNS datasets), the
// shape that costs a server most per byte of body.
func smallDocsBulk(t testing.TB, n int) []byte {
	t.Helper()
	var lines []string
	for _, f := range []string{"auth/loghub-Linux_2k.log", "dns/dnsmasq-hotspot.log"} {
		for _, l := range esDatasetLines(t, f) {
			if len(l) <= 60 {
				lines = append(lines, l)
			}
		}
	}
	var b bytes.Buffer
	for i := range n {
		b.WriteString(`{"create":{}}` + "\n")
		d, _ := json.Marshal(map[string]string{"message": lines[i%len(lines)]})
		b.Write(d)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// heldHeap is an ingester that takes every batch (and drops it), noting
// the most heap in use, after a collection, while a batch is being taken:
// what the request publishing it holds at that moment.
type heldHeap struct {
	mu    sync.Mutex
	most  uint64
	taken int
}

func (h *heldHeap) Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error {
	runtime.GC()
	runtime.GC() // the first keeps what sync.Pools hold
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.most, h.taken = max(h.most, m.HeapAlloc), h.taken+len(arts)
	return nil
}

// postBulk sends body (gzip-compressed when zipped) to /v1/ingest/elastic/_bulk
// of e from the local address local, as org, and returns the response
// with its body read.
func postBulk(t testing.TB, e *env, local, org string, body []byte, zipped bool, query string) (*http.Response, []byte, error) {
	hdr := http.Header{"Content-Type": {"application/x-ndjson"}}
	hdr.Set("Authorization", "Bearer "+e.token(org, "signals:write"))
	if zipped {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(body)
		zw.Close()
		body = z.Bytes()
		hdr.Set("Content-Encoding", "gzip")
	}
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/ingest/elastic/_bulk"+query, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = hdr
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	defer c.CloseIdleConnections()
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res, raw, err
}

// TestElasticBulkMemoryBounded: one request of 99,000 small documents
// (8 MB) raised the server's memory by ~265 MB: every document was an
// artifact and an item held at once, and the response built whole. The
// documents are now decoded a batch at a time, each published before the
// next is read: what the request holds while a batch is published is
// within the budget of one client (--client-body-budget), the bound it
// was admitted under (before: 46 MiB against 24).
func TestElasticBulkMemoryBounded(t *testing.T) {
	h := &heldHeap{}
	e := newEnvWith(t, func(c *api.Config) { c.Ingester = h })
	const n = 99000
	body := smallDocsBulk(t, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, raw, err := postBulk(t, e, "127.0.6.1", "org-a", body, false, "")
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %.300s", res.StatusCode, raw)
	}
	var r struct {
		Errors bool                        `json:"errors"`
		Items  []map[string]map[string]any `json:"items"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Errors || len(r.Items) != n || h.taken != n {
		t.Fatalf("errors %v, %d items, %d taken; want %d taken", r.Errors, len(r.Items), h.taken, n)
	}
	held := int64(h.most) - int64(before.HeapAlloc)
	t.Logf("body %d bytes: held %d MiB while publishing; %d MiB allocated (client and server)",
		len(body), held>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
	if held > api.DefaultClientBodyBudget {
		t.Fatalf("the request held %d MiB while publishing, more than the %d MiB budget of a client it was admitted under",
			held>>20, api.DefaultClientBodyBudget>>20)
	}
}

// gate is an ingester that holds every batch until opened, saying when
// one arrives.
type gate struct {
	arrived chan string // the org of each batch
	open    chan struct{}
	once    sync.Once
	taken   atomic.Int64
}

func newGate() *gate { return &gate{arrived: make(chan string, 1000), open: make(chan struct{})} }

func (g *gate) Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error {
	g.arrived <- org
	<-g.open
	g.taken.Add(int64(len(arts)))
	return nil
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// bulkResult is a bulk request's answer.
type bulkResult struct {
	org string
	res *http.Response
	raw []byte
	err error
}

// refusedWhole checks that r is a request refused whole with status, as
// Elasticsearch refuses one beyond its indexing pressure: Retry-After, the
// request's error and status, and no item taken (items is empty when the
// request was refused before all of it was read, else every item failed
// with the request's status).
func refusedWhole(t *testing.T, r bulkResult, status, items int) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", r.org, r.err)
	}
	var b struct {
		Errors bool `json:"errors"`
		Error  struct {
			Type string `json:"type"`
		} `json:"error"`
		Status int                               `json:"status"`
		Items  []map[string]struct{ Status int } `json:"items"`
	}
	if err := json.Unmarshal(r.raw, &b); err != nil {
		t.Fatalf("%s: status %d: %.300s", r.org, r.res.StatusCode, r.raw)
	}
	if r.res.StatusCode != status || r.res.Header.Get("Retry-After") == "" || r.res.Header.Get("X-Elastic-Product") != "Elasticsearch" ||
		b.Status != status || b.Error.Type != "es_rejected_execution_exception" || !b.Errors || (len(b.Items) != 0 && len(b.Items) != items) {
		t.Fatalf("%s: status %d (Retry-After %q), body %.300s; want %d refused whole, each of %d items",
			r.org, r.res.StatusCode, r.res.Header.Get("Retry-After"), r.raw, status, items)
	}
	for _, it := range b.Items {
		if it["create"].Status != status {
			t.Fatalf("%s: item %v, want %d", r.org, it, status)
		}
	}
}

// TestElasticBulkBudget: four requests of 99,000 small documents at once,
// from four orgs, peaked at 990 MB against a 384 MiB memory limit: a
// gzip-compressed body took a few hundred KiB of the budget of bodies and
// decoded to 40 times that. What a bulk request decodes is now taken from
// the budget before its documents are: beyond the server's budget the
// request is refused whole with 503, beyond its client's with 429, both
// with Retry-After and in Elasticsearch's shape, which Filebeat, Logstash,
// Vector, Fluent Bit and syslog-ng retry; once the budget is free again, a
// retry is taken.
func TestElasticBulkBudget(t *testing.T) {
	g := newGate()
	e := newEnvWith(t, func(c *api.Config) { c.Ingester = g })
	t.Cleanup(g.release) // before the server closes, which waits for its requests
	const n = 99000
	body := smallDocsBulk(t, n)
	results := make(chan bulkResult, 8)
	post := func(i int, org, query string) {
		res, raw, err := postBulk(t, e, fmt.Sprintf("127.0.7.%d", i+1), org, body, true, query)
		results <- bulkResult{org, res, raw, err}
	}
	// next waits for a request to reach the queue (""), or for an answer.
	next := func() (string, bulkResult) {
		select {
		case org := <-g.arrived:
			return org, bulkResult{}
		case r := <-results:
			return "", r
		}
	}

	for i := range 4 {
		go post(i, fmt.Sprint("org-", i), "")
	}
	admitted := map[string]bool{}
	var refused []bulkResult
	for len(admitted)+len(refused) < 4 {
		if org, r := next(); org != "" {
			admitted[org] = true
		} else {
			refusedWhole(t, r, http.StatusServiceUnavailable, n)
			refused = append(refused, r)
		}
	}
	t.Logf("of 4 requests at once, %d admitted, %d refused", len(admitted), len(refused))
	if len(admitted) == 0 || len(refused) == 0 {
		t.Fatalf("%d of 4 requests of %d documents admitted at once, %d refused: want the server's budget to admit some and refuse the rest",
			len(admitted), n, len(refused))
	}

	// A second request of an org whose first holds its budget: 429.
	var org string
	for org = range admitted {
		break
	}
	go post(7, org, "")
	if got, r := next(); got != "" {
		t.Fatalf("a second request of %s reached the queue while its first holds the budget", got)
	} else {
		refusedWhole(t, r, http.StatusTooManyRequests, n)
	}

	// The admitted are taken whole, and so is a refused request retried.
	g.release()
	for range admitted {
		r := <-results
		if r.err != nil || r.res.StatusCode != http.StatusOK {
			t.Fatalf("%s admitted: %v %.300s", r.org, r.err, r.raw)
		}
	}
	res, raw, err := postBulk(t, e, "127.0.7.9", refused[0].org, body, true, "")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("retry of %s: %v %.300s", refused[0].org, err, raw)
	}
	if got, want := g.taken.Load(), int64(n*(len(admitted)+1)); got != want {
		t.Fatalf("%d documents taken, want %d", got, want)
	}
}

// nullResponse is a ResponseWriter that keeps the status and drops the
// body: a benchmark's client holding a 19 MB response would be counted as
// the server's memory.
type nullResponse struct {
	h    http.Header
	code int
}

func (w *nullResponse) Header() http.Header         { return w.h }
func (w *nullResponse) Write(p []byte) (int, error) { return len(p), nil }
func (w *nullResponse) WriteHeader(code int)        { w.code = code }

// samplePeak samples the heap's live and not yet collected objects every
// 100 µs until the returned function is called, which returns the most
// seen.
func samplePeak() func() uint64 {
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				done <- peak
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}

// BenchmarkElasticBulkMemory: one op is one request of 99,000 small
// documents (8 MB, the shape that costs the most per byte of body), or
// four at once from four orgs at four addresses, through the server's
// handler with the default budgets (the Ingester drops what it is given).
// Reported: peak-heap-MiB, the most heap seen during the op above the
// heap before it (sampled every 100 µs; the default GOGC, no memory
// limit), refused/op, the requests answered 429 or 503, and the bytes
// allocated.
//
//	go test ./internal/api -run '^$' -bench ElasticBulkMemory -benchtime 5x
func BenchmarkElasticBulkMemory(b *testing.B) {
	body := smallDocsBulk(b, 99000)
	for _, at := range []int{1, 4} {
		b.Run(fmt.Sprintf("%d-at-once", at), func(b *testing.B) {
			e := newEnvWith(b, func(c *api.Config) { c.Ingester = &discard{} })
			h := e.srv.Config.Handler
			b.ReportAllocs()
			var peak float64
			var refused atomic.Int64
			for b.Loop() {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				stop := samplePeak()
				var wg sync.WaitGroup
				for i := range at {
					wg.Go(func() {
						req := httptest.NewRequest("POST", "/v1/ingest/elastic/_bulk", bytes.NewReader(body))
						req.RemoteAddr = fmt.Sprintf("192.0.2.%d:4321", i+1)
						req.Header.Set("Authorization", "Bearer "+e.token(fmt.Sprint("org-", i), "signals:write"))
						req.Header.Set("Content-Type", "application/x-ndjson")
						w := &nullResponse{h: http.Header{}, code: http.StatusOK}
						h.ServeHTTP(w, req)
						switch w.code {
						case http.StatusOK:
						case http.StatusTooManyRequests, http.StatusServiceUnavailable:
							refused.Add(1)
						default:
							b.Errorf("status %d", w.code)
						}
					})
				}
				wg.Wait()
				peak += float64(stop()) - float64(before.HeapAlloc)
			}
			b.ReportMetric(peak/float64(b.N)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(refused.Load())/float64(b.N), "refused/op")
		})
	}
}
