package parse

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// update rewrites the testdata/*.golden files from the parsers' output:
// go test ./internal/parse/ -run Golden -update. Review the diff by eye: a
// golden that records a wrong parse is a bug.
var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

// goldenRef is the artifact time the golden tests parse with, so that
// year-less dates resolve the same way every year.
var goldenRef = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// checkGolden parses every line of testdata/<name>.input as source and
// compares the Results, as an indented JSON array in input order, with
// testdata/<name>.golden.
func checkGolden(t *testing.T, source, name string) {
	t.Helper()
	lines := readLines(t, filepath.Join("testdata", name+".input"))
	results := make([]Result, 0, len(lines))
	for _, line := range lines {
		r := Parse(source, line, goldenRef)
		checkEventValues(t, r.Event)
		results = append(results, r)
	}
	got, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		var w []Result
		if err := json.Unmarshal(want, &w); err != nil || len(w) != len(results) {
			t.Fatalf("%s: output differs from golden (%d results, golden unreadable or of another length); run with -update and review the diff", path, len(results))
		}
		for i := range results {
			g, _ := json.Marshal(results[i])
			x, _ := json.Marshal(w[i])
			if !bytes.Equal(g, x) {
				t.Errorf("%s line %d: %s\n got  %s\n want %s", path, i+1, lines[i], g, x)
			}
		}
	}
}

// checkEventValues fails unless every value of ev is of a type Event
// allows: string, int64, float64, bool or []string.
func checkEventValues(tb testing.TB, ev Event) {
	tb.Helper()
	for k, v := range ev {
		switch v.(type) {
		case string, int64, float64, bool, []string:
		default:
			tb.Errorf("field %q has type %T", k, v)
		}
	}
}
