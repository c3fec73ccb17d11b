package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// testDetectOrdered: a detection with an Order (a temporal_ordered Sigma
// correlation over rules a, b, c) fires when the members appear in that
// order within Span, whichever batch (worker) records each signal, and a
// redelivered batch or later signals grow the same observation.
func testDetectOrdered(t *testing.T, s Store) {
	// Each batch is a list of "member@minute"; the same member@minute in
	// two batches is the same artifact (a redelivery).
	tests := []struct {
		name      string
		batches   []string
		fired     int // observations recorded
		artifacts int // artifacts of the observation, when fired
	}{
		{"in order", []string{"a@0 b@1 c@2"}, 1, 3},
		{"in order, each link from another worker, the last delivered first", []string{"c@2", "b@1", "a@0"}, 1, 3},
		{"out of order", []string{"b@0 a@1 c@2"}, 0, 0},
		{"out of order, across batches", []string{"a@1", "c@2", "b@3"}, 0, 0},
		{"across the timespan", []string{"a@0 b@3", "c@6"}, 0, 0},
		{"redelivered", []string{"a@0 b@1 c@2", "a@0 b@1 c@2"}, 1, 3},
		{"a burst is one growing observation", []string{"a@0 b@1 c@2", "c@3 b@4"}, 1, 5},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("198.51.100.%d", i+1)
			arts := map[string]*vigil.Artifact{}
			var ids []string
			for _, batch := range tc.batches {
				d := &vigil.Detection{Detector: "ordered", Key: key, Span: 5 * time.Minute, MinCount: 1, MinDistinct: 3,
					Order: []string{"a", "b", "c"},
					Describe: func(key string, w vigil.WindowState) vigil.Finding {
						return vigil.Finding{Type: "intrusion", Severity: vigil.SeverityHigh, Title: "a, b, c from " + key,
							Description: fmt.Sprintf("%d signals from %s", w.Count, key)}
					}}
				for _, sg := range strings.Fields(batch) {
					m, minute, _ := strings.Cut(sg, "@")
					var n int
					fmt.Sscan(minute, &n)
					ts := base.Add(time.Duration(n) * time.Minute)
					a := arts[sg]
					if a == nil {
						a = newArtifact("auth", "ordered test signal "+sg+" from "+key, ts)
						mustInsertArtifacts(t, s, "org-a", a)
						arts[sg] = a
					}
					d.Signals = append(d.Signals, vigil.Signal{ArtifactID: a.ID, At: ts, Member: m,
						Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}}})
				}
				for _, id := range mustDetect(t, s, "org-a", d) {
					if !slices.Contains(ids, id) {
						ids = append(ids, id)
					}
				}
			}
			if len(ids) != tc.fired {
				t.Fatalf("observations %v, want %d", ids, tc.fired)
			}
			if tc.fired == 1 {
				if o := mustObservation(t, s, "org-a", ids[0]); len(o.ArtifactIDs) != tc.artifacts {
					t.Errorf("observation of %d artifacts, want %d", len(o.ArtifactIDs), tc.artifacts)
				}
			}
		})
	}
}
