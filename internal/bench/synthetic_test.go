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
