package parse

import (
	"bytes"
	"testing"
)

// TestParseLeavesRawAlone: no parser writes into the line it reads, which
// the pipeline passes as the bytes of the artifact's string, uncopied:
// every parser over the seed lines of every source and the Windows
// recordings.
func TestParseLeavesRawAlone(t *testing.T) {
	lines := append(seedLines(t), windowsRecordings(t)...)
	for source := range parsers {
		for _, line := range lines {
			before := bytes.Clone(line)
			Parse(source, line, goldenRef)
			if !bytes.Equal(line, before) {
				t.Fatalf("%s parser changed %q into %q", source, before, line)
			}
		}
	}
}
