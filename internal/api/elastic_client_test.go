package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esutil"
)

// TestElasticGoClient: the official Go client's BulkIndexer (which checks
// the X-Elastic-Product header and reads the bulk response item by item,
// as Beats and Logstash do) ships every line of the auth datasets with an
// API key, through a queue that refuses its first three batches (429); the
// client's own retry (RetryOnStatus 429, as its documentation advises for
// bulk indexing) resends them, and every line is stored exactly once.
func TestElasticGoClient(t *testing.T) {
	e, ref := newRefusingEnv(t, 3)
	k := createKey(t, e, e.token("org-a", "admin"), "go-elasticsearch")
	var retries atomic.Int64
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:     []string{e.srv.URL + "/v1/ingest/elastic"},
		APIKey:        k["encoded"].(string),
		RetryOnStatus: []int{429, 502, 503, 504},
		MaxRetries:    10,
		RetryBackoff: func(i int) time.Duration {
			retries.Add(1)
			return time.Duration(i) * 20 * time.Millisecond
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := es.Info()
	if err != nil || info.IsError() {
		t.Fatalf("Info: %v %v", info, err)
	}
	info.Body.Close()

	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", "auth", "*.log"))
	var lines []string
	for _, p := range paths {
		rel, _ := filepath.Rel(filepath.Join("..", "..", "..", "shared", "datasets"), p)
		lines = append(lines, esDatasetLines(t, rel)...)
	}
	if len(lines) < 500 {
		t.Fatalf("%d lines in the auth datasets", len(lines))
	}
	var failed atomic.Int64
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client: es, Index: "auth", NumWorkers: 2, FlushBytes: 32 << 10, FlushInterval: time.Second,
		OnError: func(_ context.Context, err error) { t.Errorf("bulk indexer: %v", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		doc, _ := json.Marshal(map[string]any{"message": l, "@timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
		if err := bi.Add(context.Background(), esutil.BulkIndexerItem{
			Action: "create", Body: bytes.NewReader(doc),
			OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
				failed.Add(1)
				t.Errorf("item failed: %v %d %+v", err, res.Status, res.Error)
			},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bi.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := bi.Stats()
	t.Logf("%d lines: %d requests, %d created, %d failed; the queue refused %d batches, the client retried %d times",
		len(lines), st.NumRequests, st.NumCreated, st.NumFailed, ref.refused.Load(), retries.Load())
	if st.NumCreated != uint64(len(lines)) || st.NumFailed != 0 || failed.Load() != 0 {
		t.Fatalf("created %d, failed %d, of %d lines", st.NumCreated, st.NumFailed, len(lines))
	}
	if ref.refused.Load() != 3 || retries.Load() < 3 {
		t.Fatalf("the queue refused %d batches and the client retried %d times: want 3 refusals, each retried", ref.refused.Load(), retries.Load())
	}
	if n := artifactTotal(t, e, "org-a", ""); n != len(lines) {
		t.Fatalf("org-a holds %d artifacts, want every line once: %d", n, len(lines))
	}
	if n := artifactTotal(t, e, "org-a", "auth"); n != len(lines) {
		t.Errorf("%d artifacts of source auth (the index), want %d", n, len(lines))
	}
}
