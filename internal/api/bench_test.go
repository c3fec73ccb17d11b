package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
)

// discard is the Ingester of BenchmarkPostArtifacts: it counts and drops,
// so that only the API's own work is timed.
type discard struct{ n int }

func (d *discard) Ingest(_ context.Context, _ string, arts []*vigil.Artifact) error {
	d.n += len(arts)
	return nil
}

// BenchmarkPostArtifacts times POST /v1/artifacts of 1000 real dataset
// lines (246 KiB), from the request through authentication, JSON decoding
// and per-item validation to the Ingester: the API's share of ingest.
func BenchmarkPostArtifacts(b *testing.B) {
	var items []map[string]string
	for _, p := range []string{"auth/loghub-Linux_2k.log", "dns/wrccdc2018-zeek-dns.log", "firewall/iptablogs-netfilter.log", "suricata/surevego-eve.json"} {
		f, err := os.Open(filepath.Join("..", "..", "..", "shared", "datasets", p))
		if err != nil {
			b.Fatalf("datasets (../shared/datasets beside the checkout): %v", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), vigil.MaxRawBytes)
		for n := 0; sc.Scan() && n < 250; n++ {
			items = append(items, map[string]string{"source": filepath.Dir(p), "raw": sc.Text()})
		}
		f.Close()
	}
	body, err := json.Marshal(map[string]any{"artifacts": items})
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b)
	v, err := auth.NewVerifier(b.Context(), auth.Config{HS256Secret: testSecret})
	if err != nil {
		b.Fatal(err)
	}
	sink := &discard{}
	h := api.New(api.Config{Store: e.store, Verifier: v, Ingester: sink})
	tok := e.token("bench", "signals:write")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/artifacts", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusAccepted {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	if sink.n != b.N*len(items) {
		b.Fatalf("ingested %d, want %d", sink.n, b.N*len(items))
	}
	b.ReportMetric(float64(b.N*len(items))/b.Elapsed().Seconds(), "artifacts/s")
}
