package bench

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/parse"
)

// TestSyntheticLines checks that the generated mix is realistic: every
// source is present and the parsers understand its lines.
func TestSyntheticLines(t *testing.T) {
	lines := syntheticLines(5000, time.Now())
	bySource := map[string]int{}
	parsed := map[string]int{}
	for _, l := range lines {
		bySource[l.Source]++
		if parse.Parse(l.Source, []byte(l.Raw), time.Now()).Parsed {
			parsed[l.Source]++
		}
	}
	for _, s := range sources {
		if bySource[s] < 300 {
			t.Errorf("%s: %d lines", s, bySource[s])
		}
		if parsed[s] != bySource[s] {
			t.Errorf("%s: %d of %d lines parsed", s, parsed[s], bySource[s])
		}
	}
}

// TestInternetLines checks the internet mixes: the parsers understand
// every line, the unique mix never repeats a source address, and the
// Zipf mix has heavy hitters and a long tail of addresses seen once.
func TestInternetLines(t *testing.T) {
	for _, unique := range []bool{true, false} {
		lines := internetLines(20000, time.Now(), unique)
		bySource := map[string]int{}
		seen := map[string]int{}
		for _, l := range lines {
			bySource[l.Source]++
			res := parse.Parse(l.Source, []byte(l.Raw), time.Now())
			if !res.Parsed {
				t.Fatalf("unique=%v: not parsed: %s", unique, l.Raw)
			}
			if l.Source == "dns" {
				continue
			}
			src, _ := res.Event["source.ip"].(string)
			if src == "" {
				t.Fatalf("unique=%v: no source.ip in %s", unique, l.Raw)
			}
			seen[src]++
		}
		for src, want := range map[string]float64{"firewall": 0.46, "dns": 0.36, "auth": 0.18} {
			if got := float64(bySource[src]) / float64(len(lines)); got < want-0.02 || got > want+0.02 {
				t.Errorf("unique=%v: %s is %.3f of the lines, want %.2f", unique, src, got, want)
			}
		}
		once, top := 0, 0
		for _, n := range seen {
			if n == 1 {
				once++
			}
			top = max(top, n)
		}
		if unique && once != len(seen) {
			t.Errorf("unique: %d of %d addresses seen once", once, len(seen))
		}
		if !unique && (top < 200 || once < len(seen)/2) {
			t.Errorf("zipf: top address %d lines, %d of %d addresses seen once", top, once, len(seen))
		}
	}
}
