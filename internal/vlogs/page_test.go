package vlogs

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// TestPagesWithTiedTimes: pages read in two queries (page.go) are the
// slices of the one order (_time, ts, id, newest first) when many entries
// share a time to the nanosecond: every entry on exactly one page, in
// order, for a page size that cuts through the ties.
func TestPagesWithTiedTimes(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	arts := batch(130, base)
	for i, a := range arts {
		a.Timestamp = base.Add(time.Duration(i%5) * (time.Second + 123456789)) // 5 times, 26 entries each
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	tn, err := s.Tenant(t.Context(), org)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.read(t.Context(), org, tn, "*"+orderPage(vigil.Page{Limit: 1000}), false)
	if err != nil || len(want) != len(arts) {
		t.Fatalf("the whole order: %d, %v", len(want), err)
	}
	for _, limit := range []int{7, 26, 50} {
		var got []string
		for off := 0; off < len(arts); off += limit {
			page, total, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Page: vigil.Page{Limit: limit, Offset: off}})
			if err != nil || total != len(arts) {
				t.Fatalf("limit %d offset %d: total %d, %v", limit, off, total, err)
			}
			for _, a := range page {
				got = append(got, a.ID)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d entries over the pages, want %d", limit, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i].ID {
				t.Fatalf("limit %d: entry %d is %s, want %s (the one order)", limit, i, got[i], want[i].ID)
			}
		}
	}
}
