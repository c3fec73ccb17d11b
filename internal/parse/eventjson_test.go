package parse

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestEventJSONStable: the event the API shows, parsed again from the
// stored line with the stored timestamp, is byte for byte the event the
// pipeline parsed at ingest, for every line of the datasets. The stored
// timestamp is the parsed time when the request gave none (as the
// pipeline sets it), else the time of receipt; receipt times include a
// New Year's morning, where year-less syslog dates fall in the year before.
// (Today no event field depends on the reference time, which only dates
// the artifact; this guards the day one does.)
func TestEventJSONStable(t *testing.T) {
	refs := []time.Time{
		time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC),
	}
	lines := 0
	for _, src := range []string{"auth", "dns", "firewall", "suricata"} {
		files, err := filepath.Glob(filepath.Join(datasetDir, src, "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s files under %s (../shared/datasets must be beside the checkout): %v", src, datasetDir, err)
		}
		for _, f := range files {
			if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
				continue
			}
			bad := 0
			for _, line := range readLines(t, f) {
				lines++
				for _, ref := range refs {
					r := Parse(src, line, ref)
					ts := ref
					if vigil.ValidTimestamp(r.Time) {
						ts = r.Time.UTC()
					}
					want, err := json.Marshal(r.Event)
					if err != nil {
						t.Fatal(err)
					}
					if got := EventJSON(src, string(line), ts); !bytes.Equal(got, want) {
						if bad++; bad <= 3 {
							t.Errorf("%s, received %s:\n%s\nat ingest: %s\nshown:     %s", filepath.Base(f), ref.Format(time.RFC3339), line, want, got)
						}
					}
				}
			}
			if bad > 3 {
				t.Errorf("%s: %d lines in all differ", filepath.Base(f), bad)
			}
		}
	}
	t.Logf("%d lines, each at %d receipt times", lines, len(refs))
}

func TestEventJSONPanicFree(t *testing.T) {
	if ev := EventJSON("suricata", "{", time.Now()); ev == nil {
		t.Fatal("a line no parser understands still has an event (the generic one), got nil")
	}
}
