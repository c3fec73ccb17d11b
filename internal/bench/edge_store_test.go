package bench

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// BenchmarkStoreInternetEdge is the store stage alone of
// BenchmarkDetectInternetEdge: sqlite's InsertArtifacts (the artifact
// rows, their full-text and address-key rows, spans and counts) of
// 1000-line batches of the internet-edge mix, stamped live and
// renumbered as the bench sends them, into a fresh store; the first
// edgeWarmup batches before the clock. cpu-ms/op is the process's CPU per
// batch, goroutines/op the goroutines started per batch.
//
//	go test -run '^$' -bench StoreInternetEdge -benchtime 100x -count 6 ./internal/bench/
func BenchmarkStoreInternetEdge(b *testing.B) {
	lines, _, err := linesOf("internet-edge", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	shuffleLines(lines)
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "vigil.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	next := 0
	insert := func() {
		now := vigil.Now()
		arts := make([]*vigil.Artifact, edgeBatch)
		for i := range arts {
			l := lines[next%len(lines)]
			arts[i] = &vigil.Artifact{ID: vigil.NewID(), OrgID: "bench", Source: l.Source, Raw: renumberLine(l.Raw, next/len(lines)),
				Timestamp: now, CreatedAt: now, Metadata: []byte(`{}`)}
			next++
		}
		if err := s.InsertArtifacts(b.Context(), "bench", arts); err != nil {
			b.Fatal(err)
		}
	}
	for range edgeWarmup {
		insert()
	}
	b.ReportAllocs()
	cpu0, g0 := storetest.ProcessCPU(b), goroutinesCreated()
	for b.Loop() {
		insert()
	}
	b.ReportMetric(float64(storetest.ProcessCPU(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(goroutinesCreated()-g0)/float64(b.N), "goroutines/op")
}
