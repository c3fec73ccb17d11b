package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// BenchmarkInsertWindows is the store stage alone for the Windows mix of
// vigil bench: InsertArtifacts (row, compressed raw line, full-text
// index, address keys) of every record of the real recordings
// (../shared/datasets/windows/evtx), batches of 1000 with new ids and
// times. cpu-ns/artifact is the process's CPU time per artifact, after
// the first 3,000 (which train the source's compression dictionary).
func BenchmarkInsertWindows(b *testing.B) {
	mix := windowsMix(b)
	raws := make([]string, len(mix))
	for i, a := range mix {
		raws[i] = a.Raw
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
