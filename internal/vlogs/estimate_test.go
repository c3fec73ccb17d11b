package vlogs

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// TestEstimatedTotals: a query matching more than twice the bound gets
// an estimated total, flagged, with its page; a rarer one, a bound of 0
// or one above the matches get the exact count, unflagged; the same
// search twice gives the same total.
func TestEstimatedTotals(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	arts := batch(200, time.Now().Add(-3*time.Hour).Truncate(time.Second))
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query     string
		exactUpTo int
		want      int
		estimated bool
	}{
		{"failed password", 10, 200, true}, // the sample is all of them: the estimate is exact here
		{"failed password", 0, 200, false},
		{"failed password", 1000, 200, false},
		{"u7", 10, 1, false},
		{"failed -u7", 10, 199, true},
	} {
		for range 2 {
			page, total, est, err := s.SearchArtifactsEstimated(t.Context(), org, vigil.ArtifactFilter{Query: tc.query, Page: vigil.Page{Limit: 5}}, tc.exactUpTo)
			if err != nil || total != tc.want || est != tc.estimated || len(page) != min(5, tc.want) {
				t.Fatalf("%q up to %d: total %d estimated %v, %d on the page, %v; want %d estimated %v",
					tc.query, tc.exactUpTo, total, est, len(page), err, tc.want, tc.estimated)
			}
		}
	}
}

// TestEstimateSkipsShortRanges: a search within a day is counted
// exactly, however many it matches.
func TestEstimateSkipsShortRanges(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	from := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	if err := s.InsertArtifacts(t.Context(), org, batch(200, from)); err != nil {
		t.Fatal(err)
	}
	f := vigil.ArtifactFilter{Query: "failed password", Range: vigil.TimeRange{Start: from.Add(-time.Hour), End: from.Add(time.Hour)}}
	if _, total, est, err := s.SearchArtifactsEstimated(t.Context(), org, f, 10); err != nil || total != 200 || est {
		t.Fatalf("within two hours: total %d estimated %v, %v; want 200 exactly", total, est, err)
	}
}
