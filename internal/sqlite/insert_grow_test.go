package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// BenchmarkInsertGrowing is the store stage alone on a growing store, as
// on an internet edge: InsertArtifacts of batches of 1000 real lines, each
// given a new source address, b.N batches into one store, so that the
// full-text index's merges climb the levels they do as the store grows.
// cpu-ns/artifact is the process's CPU time per artifact over them all.
//
//	go test -run '^$' -bench BenchmarkInsertGrowing -benchtime 2000x ./internal/sqlite/
func BenchmarkInsertGrowing(b *testing.B) {
	lines := datasetLines(b)
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
			l := lines[next%len(lines)]
			raw := fmt.Sprintf("%s from %d.%d.%d.%d", l[1], 1+next>>24&0xff, next>>16&0xff, next>>8&0xff, next&0xff)
			arts[i] = &vigil.Artifact{ID: vigil.NewID(), OrgID: "org", Source: l[0], Raw: raw, Timestamp: now, CreatedAt: now}
			next++
		}
		if err := s.InsertArtifacts(b.Context(), "org", arts); err != nil {
			b.Fatal(err)
		}
	}
	for range 5 {
		insert() // the sources' compression dictionaries
	}
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		insert()
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*1000), "cpu-ns/artifact")
}
