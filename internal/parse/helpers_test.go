package parse

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seedLines returns every line of every testdata/*.input file, for fuzz
// seeds.
func seedLines(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.input"))
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		out = append(out, readLines(tb, f)...)
	}
	return out
}

// readLines returns the non-empty lines of a file.
func readLines(tb testing.TB, path string) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 2<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// datasetDir holds the shared developer datasets (see
// shared/datasets/SOURCES.md); loghub files are read from there, never
// copied into testdata.
const datasetDir = "../../../shared/datasets"

// datasetCoverage parses every line of every file of one dataset
// directory with source, logs per file the share of lines parsed and the
// share with the right ECS fields (as judged by right), and fails when the
// aggregate of either is below 95 %.
func datasetCoverage(t *testing.T, source string, right func(Event) bool) {
	t.Helper()
	dir := filepath.Join(datasetDir, source)
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		t.Skipf("%s absent", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	ref := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var total, parsed, good int
	for _, f := range files {
		var n, p, g int
		for _, line := range readLines(t, f) {
			r := Parse(source, line, ref)
			n++
			if r.Parsed {
				p++
				if right(r.Event) {
					g++
				} else if testing.Verbose() && os.Getenv("VIGIL_SHOW_MISSES") != "" {
					t.Logf("  miss: %s", line)
				}
			} else if testing.Verbose() && os.Getenv("VIGIL_SHOW_MISSES") != "" {
				t.Logf("  unparsed: %s", line)
			}
		}
		t.Logf("%-45s lines %5d  parsed %6.2f%%  ecs %6.2f%%", filepath.Base(f), n, pct(p, n), pct(g, n))
		total, parsed, good = total+n, parsed+p, good+g
	}
	t.Logf("%-45s lines %5d  parsed %6.2f%%  ecs %6.2f%%", "ALL "+source, total, pct(parsed, total), pct(good, total))
	if pct(parsed, total) < 95 || pct(good, total) < 95 {
		t.Errorf("%s: parsed %.2f%%, right ECS fields %.2f%%; want ≥ 95%%", source, pct(parsed, total), pct(good, total))
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// benchmarkParse parses every line of testdata/<source>.input per
// iteration and reports lines per second.
func benchmarkParse(b *testing.B, source string) {
	lines := readLines(b, filepath.Join("testdata", source+".input"))
	var bytesIn int64
	for _, l := range lines {
		bytesIn += int64(len(l))
	}
	b.SetBytes(bytesIn)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, l := range lines {
			Parse(source, l, goldenRef)
		}
		n++
	}
	b.ReportMetric(float64(n*len(lines))/b.Elapsed().Seconds(), "lines/s")
}
