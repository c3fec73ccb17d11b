package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/esbulk"
)

// ElasticPath is where the Elasticsearch-compatible ingest endpoint is
// served, under /v1 and /api/v1: Elasticsearch clients are given
// http://vigil:8080/v1/ingest/elastic as their host.
const ElasticPath = "/ingest/elastic"

// ElasticVersion is the Elasticsearch version the endpoint reports: Beats
// refuse an Elasticsearch older than themselves, Logstash and Vector pick
// their protocol by its major version.
const ElasticVersion = "8.19.0"

// elasticRoutes registers the endpoint's routes (elasticTable) under /v1
// and /api/v1, each marked as Elasticsearch's and open to API keys.
func (s *Server) elasticRoutes() {
	for _, prefix := range []string{"/v1", "/api/v1"} {
		for _, rt := range s.elasticTable() {
			pattern := strings.TrimSpace(rt.method + " " + prefix + rt.path)
			h := s.limitBody(s.elasticFail, rt.h)
			if strings.HasSuffix(rt.path, "/_bulk") {
				// A bulk request waits for budget room (?timeout=) before
				// its body is read.
				h = s.bulkWait(h)
			}
			s.mux.Handle(pattern, elasticProduct(s.authorize(rt.perm, true, h)))
		}
	}
}

// elasticTable is the endpoint: the bulk API, and what shippers read
// before they send (GET /, /_license); every other path under it
// (template, ILM, pipeline and node set-up), whatever the method (""),
// answers {}, so that a shipper's set-up steps succeed without doing
// anything. Every route takes what ingest takes: signals:write.
func (s *Server) elasticTable() []route {
	p := ElasticPath
	return []route{
		{"POST", p + "/_bulk", vigil.PermSignalsWrite, s.elasticBulk},
		{"PUT", p + "/_bulk", vigil.PermSignalsWrite, s.elasticBulk},
		{"POST", p + "/{index}/_bulk", vigil.PermSignalsWrite, s.elasticBulk},
		{"PUT", p + "/{index}/_bulk", vigil.PermSignalsWrite, s.elasticBulk},
		{"GET", p + "/{$}", vigil.PermSignalsWrite, s.elasticInfo},
		{"GET", p, vigil.PermSignalsWrite, s.elasticInfo},
		{"GET", p + "/_license", vigil.PermSignalsWrite, s.elasticLicense},
		{"", p + "/", vigil.PermSignalsWrite, s.elasticEmpty},
	}
}

// elasticProduct marks every response of the endpoint as Elasticsearch's:
// the official clients and Logstash refuse a server without the header.
func elasticProduct(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		next.ServeHTTP(w, r)
	})
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func (s *Server) elasticInfo(w http.ResponseWriter, r *http.Request) {
	b, _ := json.Marshal(map[string]any{
		"name": "vigil", "cluster_name": "vigil", "cluster_uuid": "vigil",
		"version": map[string]any{
			"number": ElasticVersion, "build_flavor": "default", "build_type": "vigil", "build_snapshot": false,
			"lucene_version": "9.12.0", "minimum_wire_compatibility_version": "7.17.0", "minimum_index_compatibility_version": "7.0.0",
		},
		"tagline": "You Know, for Search",
	})
	writeRaw(w, http.StatusOK, b)
}

// elasticLicense answers an active licence: Filebeat refuses a server
// without one ("requires the default distribution").
func (s *Server) elasticLicense(w http.ResponseWriter, r *http.Request) {
	b, _ := json.Marshal(map[string]any{"license": map[string]any{
		"status": "active", "uid": "vigil", "type": "basic", "issuer": "vigil", "issued_to": "vigil",
		"issue_date_in_millis": 0, "start_date_in_millis": -1, "max_nodes": 1000,
	}})
	writeRaw(w, http.StatusOK, b)
}

func (s *Server) elasticEmpty(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	writeRaw(w, http.StatusOK, []byte("{}\n"))
}

// elasticBulk takes a bulk request: each index or create action's
// document becomes an artifact of the caller's org, acknowledged (status
// 201) only once the queue holds it, as POST /v1/artifacts. A document
// that cannot be taken is its item's 400; a queue that refuses the whole
// request is the request's 429 (or 503), and one that refuses part of it
// (a request split to fit the queue) those items' 429, so that the
// shipper retries exactly what was not taken. With ?timeout= a refusal is
// first waited out for up to that long (ingestWaiting).
//
// The body is read twice, a line at a time (decompressed as it is read):
// once to pair actions with their documents, so that a malformed request
// is refused before any of it is taken, and once to decode the documents
// a batch at a time, each published before the next is decoded. What that
// holds beyond the body (the items, the largest batch) is taken from the
// budget of request bodies as the first reading finds it, before it is
// allocated: a request beyond it is refused whole (429, or 503 when the
// server as a whole holds as much as it may), as Elasticsearch refuses a
// bulk request beyond its indexing pressure limit.
func (s *Server) elasticBulk(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	deadline := waitDeadline(r.Context())
	body, err := readBulkBody(w, r)
	if err != nil {
		s.elasticFail(w, r, err)
		return
	}
	req, err := esbulk.Scan(body.open(), r.PathValue("index"), func(n int64) error {
		return holdBody(r.Context(), n, deadline)
	})
	if err != nil {
		s.elasticFail(w, r, err)
		return
	}
	org := principal(r.Context()).OrgID
	var first, last error
	var status int
	var itemErr *esbulk.ItemError
	taken := 0
	err = req.Decode(body.open(), org, s.now(), func(arts []*vigil.Artifact, at []int) {
		for _, a := range arts {
			a.OrgID = org
		}
		errs := make([]error, len(arts))
		s.ingestWaiting(r, org, arts, errs, deadline)
		for i, err := range errs {
			if err == nil {
				taken++
				continue
			}
			first = cmpErr(first, err)
			if err != last { // one error for the items of one refusal
				last = err
				status, itemErr = itemRefusal(err)
			}
			req.Item(at[i]).Fail(status, itemErr)
		}
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	bad := 0
	for i := range req.Len() {
		if req.Item(i).Status == http.StatusBadRequest {
			bad++
		}
	}
	s.rejected.Add(float64(bad))
	if taken == 0 && first != nil {
		// Nothing taken: the request's status, which every shipper
		// retries whole, with each item's, for those that read only the
		// body.
		if !refuseBulk(w, req, start, first) {
			s.fail(w, r, first)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	esbulk.WriteResponse(w, req, time.Since(start))
}

// itemRefusal is the status and error of an item the queue did not take:
// Elasticsearch's es_rejected_execution_exception for a refusal the
// client may retry, an exception (500) for any other.
func itemRefusal(err error) (int, *esbulk.ItemError) {
	status, typ := statusOf[vigil.ErrorCode(err)], "es_rejected_execution_exception"
	if status == 0 || status >= 500 && status != http.StatusServiceUnavailable && status != http.StatusInsufficientStorage {
		status, typ = http.StatusInternalServerError, "exception"
	}
	return status, &esbulk.ItemError{Type: typ, Reason: vigil.ErrorMessage(err)}
}

// refuseBulk answers a request refused whole for want of room (the
// queue's, the budget of bodies': 429, 503 or 507) in Elasticsearch's
// shape, with Retry-After and each item of req (none when the body was
// not read whole) failed; false, answering nothing, for any other error.
func refuseBulk(w http.ResponseWriter, req *esbulk.Request, start time.Time, err error) bool {
	status := statusOf[vigil.ErrorCode(err)]
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable && status != http.StatusInsufficientStorage {
		return false
	}
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	esbulk.WriteRefused(w, req, time.Since(start), status, &esbulk.ItemError{Type: "es_rejected_execution_exception", Reason: vigil.ErrorMessage(err)})
	return true
}

// elasticFail answers an error of the bulk endpoint before its body is
// read whole: a refusal for want of room in Elasticsearch's shape, which
// shippers retry; any other in the API's envelope.
func (s *Server) elasticFail(w http.ResponseWriter, r *http.Request, err error) {
	if !refuseBulk(w, nil, time.Now(), err) {
		s.fail(w, r, err)
	}
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// MaxBulkWait bounds a bulk request's timeout parameter: how long it may
// wait for room in the queue (Elasticsearch's own default timeout).
const MaxBulkWait = time.Minute

// waitKey is the key in a request's context of the time until which it
// may wait for room (the bulk API's timeout).
type waitKey struct{}

// bulkWait reads the bulk API's timeout parameter into the request's
// context, before its body takes budget (limitBody): the time until which
// it waits for room; a bad value is the request's 400.
func (s *Server) bulkWait(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wait, err := bulkTimeout(r.URL.Query())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), waitKey{}, time.Now().Add(wait))))
	}
}

// waitDeadline is the time until which the request of ctx may wait for
// room: zero (no wait) unless bulkWait gave one.
func waitDeadline(ctx context.Context) time.Time {
	t, _ := ctx.Value(waitKey{}).(time.Time)
	return t
}

// bulkTimeout reads the bulk API's timeout parameter ("30s", "1m",
// "500ms"), Elasticsearch's time to wait for resources, which here is the
// time a request waits for the queue to take what it refused, or for room
// in the budget of bodies, before answering 429; none: no wait. More than
// MaxBulkWait waits MaxBulkWait.
func bulkTimeout(q url.Values) (time.Duration, error) {
	v := q.Get("timeout")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, vigil.InvalidField("timeout", "a duration such as 30s, 1m or 500ms")
	}
	return min(d, MaxBulkWait), nil
}

// ingestWaiting ingests arts as ingestAll does, then, until deadline,
// tries again those the queue refused for want of room (a full or lagging
// queue, NATS out of reach), until it takes them, the time is up, or the
// client goes. errs holds each artifact's last error.
func (s *Server) ingestWaiting(r *http.Request, org string, arts []*vigil.Artifact, errs []error, deadline time.Time) {
	pending := make([]int, len(arts))
	for i := range pending {
		pending[i] = i
	}
	retryUntil(r.Context(), deadline, func() bool {
		batch, berrs := make([]*vigil.Artifact, len(pending)), make([]error, len(pending))
		for j, i := range pending {
			batch[j] = arts[i]
		}
		s.ingestAll(r, org, batch, berrs)
		still := pending[:0]
		for j, i := range pending {
			errs[i] = berrs[j]
			if c := vigil.ErrorCode(berrs[j]); c == vigil.ERATELIMITED || c == vigil.EUNAVAILABLE {
				still = append(still, i)
			}
		}
		pending = still
		return len(pending) == 0
	})
}

// ingestAll ingests arts in batches of at most vigil.MaxBatchItems,
// splitting a batch larger than the queue takes, and records each
// artifact's error.
func (s *Server) ingestAll(r *http.Request, org string, arts []*vigil.Artifact, errs []error) {
	for lo := 0; lo < len(arts); lo += vigil.MaxBatchItems {
		hi := min(lo+vigil.MaxBatchItems, len(arts))
		s.ingestSplit(r, org, arts[lo:hi], errs[lo:hi])
	}
}

func (s *Server) ingestSplit(r *http.Request, org string, arts []*vigil.Artifact, errs []error) {
	err := s.ingest.Ingest(r.Context(), org, arts)
	if vigil.ErrorCode(err) == vigil.ETOOLARGE && len(arts) > 1 {
		h := len(arts) / 2
		s.ingestSplit(r, org, arts[:h], errs[:h])
		s.ingestSplit(r, org, arts[h:], errs[h:])
		return
	}
	for i := range errs {
		errs[i] = err
	}
}

// bulkBody is a bulk request's body as sent (Filebeat and Logstash
// compress it with gzip by default), read again for each pass over it.
type bulkBody struct {
	raw  []byte
	gzip bool
}

// readBulkBody reads a bulk request's body, at most MaxBodyBytes.
func readBulkBody(w http.ResponseWriter, r *http.Request) (*bulkBody, error) {
	raw, err := readBody(w, r)
	if err != nil {
		return nil, jsonError(err)
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return &bulkBody{raw: raw}, nil
	case "gzip", "x-gzip":
		return &bulkBody{raw: raw, gzip: true}, nil
	default:
		return nil, vigil.Errorf(vigil.EUNSUPPORTED, "Content-Encoding %.32q: only gzip is taken", enc)
	}
}

// open returns a reader of the body, decompressed as it is read: at most
// MaxBodyBytes once decompressed (else ETOOLARGE), and malformed gzip the
// request's EINVALID.
func (b *bulkBody) open() io.Reader {
	if !b.gzip {
		return bytes.NewReader(b.raw)
	}
	return &gunzip{in: bytes.NewReader(b.raw)}
}

// gunzip decompresses a body as it is read.
type gunzip struct {
	in io.Reader
	zr *gzip.Reader
	n  int64 // bytes decompressed
}

func (g *gunzip) Read(p []byte) (int, error) {
	if g.zr == nil {
		zr, err := gzip.NewReader(g.in)
		if err != nil {
			return 0, vigil.InvalidField("body", "malformed gzip: "+err.Error())
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	g.n += int64(n)
	switch {
	case g.n > MaxBodyBytes:
		return 0, &vigil.Error{Code: vigil.ETOOLARGE, Message: "request body exceeds 10 MiB once decompressed"}
	case err != nil && !errors.Is(err, io.EOF):
		return n, vigil.InvalidField("body", "malformed gzip: "+err.Error())
	}
	return n, err
}
