package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/evtx"
)

// discard is the Ingester of the API's benchmarks: it counts and drops,
// so that only the API's own work is measured.
type discard struct{ n atomic.Int64 }

func (d *discard) Ingest(_ context.Context, _ string, arts []*vigil.Artifact) error {
	d.n.Add(int64(len(arts)))
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
	benchPost(b, items)
}

// BenchmarkPostArtifactsWindows is BenchmarkPostArtifacts for 1000 records
// of the real Windows recordings (../shared/datasets/windows/evtx) as vigil
// bench --files windows posts them (1.1 MiB).
func BenchmarkPostArtifactsWindows(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx", "*", "*.evtx"))
	var items []map[string]string
	for _, f := range files {
		docs, err := evtx.Documents(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range docs {
			if len(items) < 1000 {
				items = append(items, map[string]string{"source": "windows", "raw": string(d)})
			}
		}
	}
	if len(items) < 1000 {
		b.Fatalf("%d records (../shared/datasets beside the checkout)", len(items))
	}
	benchPost(b, items)
}

// benchPost posts items as one batch, b.N times; cpu-ns/artifact is the
// process's CPU time per item, steadier than the wall clock on a shared
// machine.
func benchPost(b *testing.B, items []map[string]string) {
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
	cpu0 := cpuTime(b)
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
	if n := sink.n.Load(); n != int64(b.N*len(items)) {
		b.Fatalf("ingested %d, want %d", n, b.N*len(items))
	}
	b.ReportMetric(float64(b.N*len(items))/b.Elapsed().Seconds(), "artifacts/s")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*len(items)), "cpu-ns/artifact")
}

// unaudited is a store whose writes see no audit trail: what the API's
// writes cost without the audit log, for BenchmarkAuditedWrite.
type unaudited struct{ api.Store }

func strip(ctx context.Context) context.Context { return vigil.WithAuditTrail(ctx, nil) }

func (s unaudited) UpdateRole(ctx context.Context, org, id string, u vigil.RoleUpdate, now time.Time) (*vigil.Role, error) {
	return s.Store.UpdateRole(strip(ctx), org, id, u, now)
}

func (s unaudited) UpdateIncidentCase(ctx context.Context, org, id string, u vigil.CaseUpdate, actor string, now time.Time) (*vigil.Incident, error) {
	return s.Store.UpdateIncidentCase(strip(ctx), org, id, u, actor, now)
}

// BenchmarkAuditedWrite times two write endpoints through the whole
// handler, with the audit log (as served) and without it (the store
// never sees the trail): PUT /v1/roles/{id} renaming a role (the audit
// entry is the only extra row), and PUT /v1/incidents/{id} changing the
// tags (an incident event as before, plus the audit entry).
func BenchmarkAuditedWrite(b *testing.B) {
	for _, audited := range []bool{true, false} {
		name := map[bool]string{true: "audited", false: "unaudited"}[audited]
		e := newEnv(b)
		admin := e.token("bench", "admin")
		v, err := auth.NewVerifier(b.Context(), auth.Config{HS256Secret: testSecret})
		if err != nil {
			b.Fatal(err)
		}
		var store api.Store = e.store
		if !audited {
			store = unaudited{e.store}
		}
		h := api.New(api.Config{Store: store, Verifier: v, Ingester: &discard{}})
		role := createRole(b, e, admin, "bench")["id"].(string)
		entries := func() int {
			return total(b, must(b, call(b, e, "GET", "/v1/audit?limit=1", admin, nil), http.StatusOK))
		}
		before, ran := entries(), 0
		for _, ep := range []struct {
			name string
			path func() string
			body func(i int) string
		}{
			{"role", func() string { return "/v1/roles/" + role }, func(i int) string { return fmt.Sprintf(`{"name":"role-%d"}`, i) }},
			// A new incident each run: its history grows with every change.
			{"incident-tags", func() string { return "/v1/incidents/" + newIncident(b, e, admin, "low") },
				func(i int) string { return fmt.Sprintf(`{"tags":["t%d"]}`, i) }},
		} {
			b.Run(ep.name+"/"+name, func(b *testing.B) {
				ran++
				path := ep.path()
				b.ReportAllocs()
				i := 0
				cpu0 := cpuTime(b)
				for b.Loop() {
					i++
					req := httptest.NewRequest(http.MethodPut, path, strings.NewReader(ep.body(i)))
					req.Header.Set("Authorization", "Bearer "+admin)
					req.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("status %d: %s", w.Code, w.Body)
					}
				}
				// CPU time of the process (the embedded database's work
				// included), which other load on the machine does not inflate
				// as it does the elapsed time.
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
		// (A -bench filter may have left this side's writes out.)
		if n := entries() - before; ran > 0 && audited != (n > 0) {
			b.Fatalf("%s: %d audit entries recorded", name, n)
		}
	}
}

// cpuTime returns the user and system CPU time of this process.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
