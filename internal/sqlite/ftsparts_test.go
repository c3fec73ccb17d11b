package sqlite_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// openParts opens a store whose full-text parts hold rows artifacts each.
func openParts(t testing.TB, rows int) *sqlite.Store {
	return openWith(t, sqlite.Options{FTSPartRows: rows})
}

// TestSearchParts runs the artifact conformance tests on a store whose
// full-text indexes are split every few artifacts, in each way
// SearchArtifacts has of listing and counting matches.
func TestSearchParts(t *testing.T) {
	for _, p := range []struct{ dense, window int }{{0, 0}, {1 << 30, 1 << 30}, {1, 1}, {1, 100}} {
		t.Run(fmt.Sprintf("dense=%d,window=%d", p.dense, p.window), func(t *testing.T) {
			storetest.RunArtifacts(t, func(t *testing.T) storetest.Store {
				s := openParts(t, 3)
				if p.dense > 0 {
					sqlite.SetSearchPlan(s, p.dense, p.window)
				}
				return s
			})
		})
	}
}

// TestPartsSearchAlike stores the same real lines, a batch at a time, in
// a store of one full-text part and in one of many, and asks both every
// class of query an analyst types, with and without a source and a time
// window, pages and exclusions: the pages and totals are the same.
func TestPartsSearchAlike(t *testing.T) {
	ctx := context.Background()
	one, many := open(t), openParts(t, 150)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	arts := datasetLines(t, one, "org", t0)
	for i := 0; i < len(arts); i += 100 {
		if err := many.InsertArtifacts(ctx, "org", arts[i:min(i+100, len(arts))]); err != nil {
			t.Fatal(err)
		}
	}
	if n := sqlite.FTSParts(t, many); n < 10 {
		t.Fatalf("%d parts of 150 rows for %d artifacts", n, len(arts))
	}
	queries := []string{
		"", "sshd", "Failed password", `"Failed password"`, "fail*", "invalid user", "-sshd", "sshd -Failed",
		"root OR admin", "error", "from", "DHCPACK", "dnsmasq*", "BLOCK OR DHCPREQUEST", "nothingsuchword", "-nothingsuchword",
	}
	var filters []vigil.ArtifactFilter
	mid := arts[len(arts)/2].Timestamp
	ranges := []vigil.TimeRange{{}, {Start: mid}, {Start: mid.Add(-3 * time.Hour), End: mid.Add(time.Hour)}}
	for _, q := range queries {
		for _, src := range []string{"", "auth", "firewall", "dns"} {
			for _, r := range ranges {
				filters = append(filters, vigil.ArtifactFilter{Query: q, Source: src, Range: r})
			}
		}
	}
	filters = append(filters, addressFilters(arts)...)
	asked := 0
	alike := func() {
		t.Helper()
		for _, f := range filters {
			for _, p := range []vigil.Page{{Limit: 25, Offset: 40}} {
				f.Page = p
				for _, exact := range []int{0, 50} {
					a, na, ea, err := one.SearchArtifactsEstimated(ctx, "org", f, exact)
					if err != nil {
						t.Fatalf("%+v: %v", f, err)
					}
					b, nb, eb, err := many.SearchArtifactsEstimated(ctx, "org", f, exact)
					if err != nil {
						t.Fatalf("%+v on parts: %v", f, err)
					}
					asked++
					if ea != eb || !ea && na != nb || !slices.Equal(storetest.ArtifactIDs(a), storetest.ArtifactIDs(b)) {
						t.Errorf("%+v exact up to %d: one part %d (estimated %v), %v; many parts %d (%v), %v",
							f, exact, na, ea, storetest.ArtifactIDs(a), nb, eb, storetest.ArtifactIDs(b))
					}
				}
			}
		}
	}
	alike()
	// Retention deletes each artifact's entries from the part it is in
	// (FTS5 needs the text as indexed): the rest is found alike.
	drop := arts[len(arts)/3].Timestamp
	for _, s := range []*sqlite.Store{one, many} {
		n, err := s.DropArtifactsBefore(ctx, drop)
		if err != nil || n == 0 {
			t.Fatalf("DropArtifactsBefore: %d, %v", n, err)
		}
	}
	alike()
	if n := sqlite.DroppedFTSParts(t, many); n == 0 {
		t.Errorf("retention before %v emptied no part of 150 rows", drop)
	}
	// Everything expires: every part but the newest is emptied, and new
	// artifacts take rowids from 1 again, in part 0, which is revived.
	for _, s := range []*sqlite.Store{one, many} {
		if _, err := s.DropArtifactsBefore(ctx, arts[len(arts)-1].Timestamp.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if n, all := sqlite.DroppedFTSParts(t, many), sqlite.FTSParts(t, many); n != all-1 {
		t.Errorf("retention of everything emptied %d of %d parts, want all but the newest", n, all)
	}
	later := make([]*vigil.Artifact, 0, 1000)
	for _, a := range arts[:1000] {
		b := *a
		b.ID = vigil.NewID()
		b.Timestamp = b.Timestamp.Add(24 * time.Hour)
		later = append(later, &b)
	}
	for _, s := range []*sqlite.Store{one, many} {
		for i := 0; i < len(later); i += 100 {
			if err := s.InsertArtifacts(ctx, "org", later[i:i+100]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := sqlite.DroppedFTSParts(t, many); n == sqlite.FTSParts(t, many)-1 {
		t.Errorf("artifacts stored in emptied parts revived none")
	}
	alike()
	t.Logf("%d searches alike over %d parts (%d emptied)", asked, sqlite.FTSParts(t, many), sqlite.DroppedFTSParts(t, many))
}

// TestPartsPlans: on a store of several full-text parts, each part a
// search reads is read through its index by the expression and the
// span's rowids (FTS5's plan "M" with bounds), never scanned whole, and
// the newest matches are read newest first from each part's index, not
// sorted; the vocabulary of each is sought by its term.
func TestPartsPlans(t *testing.T) {
	s := openParts(t, 300)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 600, t0)
	if n := sqlite.FTSParts(t, s); n != 4 {
		t.Fatalf("%d parts of 300 for %d artifacts, want 4", n, len(arts))
	}
	for _, f := range []vigil.ArtifactFilter{
		{Query: "failed"}, {Query: `"failed password"`, Range: vigil.TimeRange{Start: t0.Add(10 * time.Hour)}},
		{Query: "fail*", Source: "auth"}, {Query: "10.0.0.7"}, {Query: "udp -10.0.0.7", Range: vigil.TimeRange{End: t0.Add(time.Hour)}},
	} {
		ran, _, _ := searchStatements(t, s, "o1", f, 50)
		read := 0
		for _, st := range ran {
			if strings.Contains(st.query, "ORDER BY r DESC") && strings.Contains(st.plan, "TEMP B-TREE FOR ORDER BY") {
				// Joined to its arguments, each part's matches were all
				// read and sorted for the newest few (10 M: sshd -failed
				// 37 → 407 ms).
				t.Errorf("%+v: the newest matches sorted, not read newest first:\n%s\n%s", f, st.query, st.plan)
			}
			for _, line := range strings.Split(st.plan, "\n") {
				if !strings.Contains(line, "VIRTUAL TABLE") {
					continue
				}
				read++
				vocab := strings.Contains(line, "vocab")
				if vocab && strings.Contains(line, "INDEX 0:") || !vocab && !strings.Contains(line, ":M") {
					t.Errorf("%+v: a part read without its index:\n%s\n%s", f, st.query, st.plan)
				}
			}
		}
		if read == 0 {
			t.Errorf("%+v: no part of the index read", f)
		}
	}
}
