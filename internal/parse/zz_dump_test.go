package parse

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestZZDump(t *testing.T) {
	src := os.Getenv("DUMP")
	if src == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(os.Getenv("DUMPFILES"))
	ref := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range files {
		for _, l := range readLines(t, f) {
			r := Parse(src, l, ref)
			b, _ := json.Marshal(r)
			fmt.Printf("%s\n  %s\n", l, b)
		}
	}
}
