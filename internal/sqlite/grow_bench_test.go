package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// BenchmarkDetectGrowingBursts is a sustained attack from a few sources:
// every batch brings each of 50 sources 20 more packets to 30 ports, so
// that after the first batch every batch grows 50 bursts. An op is one
// signal; cpu-ns/op is the process's CPU time per signal.
func BenchmarkDetectGrowingBursts(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "v.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := correlate.NewEngine(s, nil, vigil.DefaultCorrelationPolicy())
	const sources, perBatch = 50, 20
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	n := 0
	for batch := 0; n < b.N; batch++ {
		// One batch a second: every burst is still under way at the next.
		at := tallyBase.Add(time.Duration(batch) * time.Second)
		ds := make([]*vigil.Detection, 0, sources)
		for src := range sources {
			key := fmt.Sprintf("198.51.100.%d", src+1)
			sigs := make([]vigil.Signal, 0, perBatch)
			for range perBatch {
				n++
				port := fmt.Sprint(1 + n%30)
				sigs = append(sigs, vigil.Signal{Key: key, ArtifactID: fmt.Sprintf("0190a000-0000-7000-8000-%012d", n),
					At: at.Add(time.Duration(n%1000) * time.Millisecond), Member: port,
					Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}, {Type: vigil.NodeHost, Value: "edge-01"}}})
			}
			ds = append(ds, scanDetection(key, sigs))
		}
		if _, err := e.Detect(b.Context(), "org", ds); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(n), "cpu-ns/op")
}
