package api

import (
	"bytes"
	"compress/gzip"
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
			s.mux.Handle(pattern, elasticProduct(s.authorize(rt.perm, true, s.limitBody(rt.h))))
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
func (s *Server) elasticBulk(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := bulkBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	wait, err := bulkTimeout(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	org := principal(r.Context()).OrgID
	req, err := esbulk.Parse(body, org, r.PathValue("index"), s.now())
	body = nil
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var arts []*vigil.Artifact
	var at []int // the item of each artifact
	for i := range req.Items {
		if a := req.Items[i].Artifact; a != nil {
			a.OrgID = org
			arts, at = append(arts, a), append(at, i)
		}
	}
	s.rejected.Add(float64(len(req.Items) - len(arts)))
	if len(arts) > 0 {
		errs := make([]error, len(arts))
		s.ingestWaiting(r, org, arts, errs, wait)
		taken := 0
		var first error
		for i, err := range errs {
			if err == nil {
				taken++
				continue
			}
			first = cmpErr(first, err)
			it := &req.Items[at[i]]
			status := statusOf[vigil.ErrorCode(err)]
			typ := "es_rejected_execution_exception"
			if status == 0 || status >= 500 && status != http.StatusServiceUnavailable && status != http.StatusInsufficientStorage {
				status, typ = http.StatusInternalServerError, "exception"
			}
			it.Fail(status, typ, vigil.ErrorMessage(err))
		}
		if taken == 0 {
			// Nothing taken: the request's status, which every shipper
			// retries whole, with each item's, for those that read only
			// the body.
			status := statusOf[vigil.ErrorCode(first)]
			if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable && status != http.StatusInsufficientStorage {
				s.fail(w, r, first)
				return
			}
			w.Header().Set("Retry-After", "1")
			writeRaw(w, status, esbulk.Refused(req.Items, time.Since(start), status, "es_rejected_execution_exception", vigil.ErrorMessage(first)))
			return
		}
	}
	writeRaw(w, http.StatusOK, esbulk.Response(req.Items, time.Since(start)))
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

// bulkTimeout reads the bulk API's timeout parameter ("30s", "1m",
// "500ms"), Elasticsearch's time to wait for resources, which here is the
// time a request waits for the queue to take what it refused before
// answering 429; none: no wait. More than MaxBulkWait waits MaxBulkWait.
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

// ingestWaiting ingests arts as ingestAll does, then, for up to wait,
// tries again those the queue refused for want of room (a full or
// lagging queue, NATS out of reach), backing off from 20 ms to 1 s, until
// it takes them, the wait is over, or the client goes. errs holds each
// artifact's last error.
func (s *Server) ingestWaiting(r *http.Request, org string, arts []*vigil.Artifact, errs []error, wait time.Duration) {
	s.ingestAll(r, org, arts, errs)
	deadline := time.Now().Add(wait)
	backoff := 20 * time.Millisecond
	for {
		var again []int
		for i, err := range errs {
			if c := vigil.ErrorCode(err); c == vigil.ERATELIMITED || c == vigil.EUNAVAILABLE {
				again = append(again, i)
			}
		}
		if len(again) == 0 || time.Until(deadline) < backoff {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
		retry := make([]*vigil.Artifact, len(again))
		rerrs := make([]error, len(again))
		for j, i := range again {
			retry[j] = arts[i]
		}
		s.ingestAll(r, org, retry, rerrs)
		for j, i := range again {
			errs[i] = rerrs[j]
		}
	}
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

// bulkBody reads a bulk request's body, gzip-compressed or not (Filebeat
// and Logstash compress by default), at most MaxBodyBytes either way.
func bulkBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, jsonError(err)
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, vigil.InvalidField("body", "malformed gzip: "+err.Error())
		}
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(zr, MaxBodyBytes+1))
		switch {
		case n > MaxBodyBytes:
			return nil, &vigil.Error{Code: vigil.ETOOLARGE, Message: "request body exceeds 10 MiB once decompressed"}
		case err != nil && !errors.Is(err, io.EOF):
			return nil, vigil.InvalidField("body", "malformed gzip: "+err.Error())
		}
		return buf.Bytes(), nil
	default:
		return nil, vigil.Errorf(vigil.EUNSUPPORTED, "Content-Encoding %.32q: only gzip is taken", enc)
	}
}
