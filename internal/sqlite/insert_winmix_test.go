package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/evtx"
)

// BenchmarkInsertWindows is the store stage alone for the Windows mix of
// vigil bench: InsertArtifacts (row, compressed raw line, full-text
// index, address keys) of every record of the real recordings
// (../shared/datasets/windows/evtx), batches of 1000 with new ids and
// times. cpu-ns/artifact is the process's CPU time per artifact, after
// the first 3,000 (which train the source's compression dictionary).
func BenchmarkInsertWindows(b *testing.B) {
	root := filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.evtx"))
	var raws []string
	for _, f := range append(files, deeper...) {
		docs, err := evtx.Documents(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range docs {
			raws = append(raws, string(d))
		}
	}
	if len(raws) == 0 {
		b.Fatalf("no recordings under %s (../shared/datasets beside the checkout)", root)
	}
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "v.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	next := 0
	insert := func() {
		arts := make([]*vigil.Artifact, 1000)
		now := time.Now()
		for i := range arts {
			arts[i] = &vigil.Artifact{ID: vigil.NewID(), OrgID: "org", Source: "windows", Raw: raws[next%len(raws)], Timestamp: now, CreatedAt: now}
			next++
		}
		if err := s.InsertArtifacts(b.Context(), "org", arts); err != nil {
			b.Fatal(err)
		}
	}
	for range 3 {
		insert()
	}
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		insert()
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*1000), "cpu-ns/artifact")
}
