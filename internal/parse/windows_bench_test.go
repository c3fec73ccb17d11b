package parse

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/evtx"
)

// BenchmarkParseWindows parses every record of the 167 real Windows
// recordings (../shared/datasets/windows/evtx) as vigil import sends them:
// the Windows mix of vigil bench.
func BenchmarkParseWindows(b *testing.B) {
	root := filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.evtx"))
	files = append(files, deeper...)
	if len(files) == 0 {
		b.Skipf("no recordings under %s", root)
	}
	var docs [][]byte
	var size int64
	for _, f := range files {
		ds, err := evtx.Documents(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range ds {
			docs = append(docs, d)
			size += int64(len(d))
		}
	}
	ref := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b.SetBytes(size / int64(len(docs)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		Parse("windows", docs[n%len(docs)], ref)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}
