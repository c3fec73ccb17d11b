package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// spanArtifacts are n artifacts of org, every third one saying "beta",
// all "alpha", their timestamps an hour apart from t0 but in an order
// that is not their insertion order.
func spanArtifacts(org string, n int, t0 time.Time) []*vigil.Artifact {
	out := make([]*vigil.Artifact, n)
	for i := range out {
		raw := fmt.Sprintf("alpha line %d", i)
		if i%3 == 0 {
			raw += " beta"
		}
		at := t0.Add(time.Duration((i*7)%n) * time.Hour)
		out[i] = &vigil.Artifact{ID: vigil.NewID(), OrgID: org, Source: "auth", Raw: raw, Timestamp: at, CreatedAt: at}
	}
	return out
}

// span is a row of artifact_spans.
type span struct {
	org            string
	bucket, lo, hi int64
}

func spans(t *testing.T, path string) []span {
	t.Helper()
	db := sqlite.OpenDB(path)
	defer db.Close()
	rows, err := db.Query(`SELECT org_id, bucket, min_rowid, max_rowid FROM artifact_spans ORDER BY org_id, bucket`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []span
	for rows.Next() {
		var r span
		if err := rows.Scan(&r.org, &r.bucket, &r.lo, &r.hi); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestSpansMigration: a store whose artifacts were stored before
// artifact_spans existed gets the same spans from the migration as
// InsertArtifacts keeps, and its time-filtered searches find the same.
func TestSpansMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vigil.db")
	s := openAt(t, path)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, org := range []string{"o1", "o2"} {
		arts := spanArtifacts(org, 120, t0)
		for i := 0; i < len(arts); i += 25 {
			if err := s.InsertArtifacts(ctx, org, arts[i:min(i+25, len(arts))]); err != nil {
				t.Fatal(err)
			}
		}
	}
	window := vigil.ArtifactFilter{Query: "beta", Range: vigil.TimeRange{Start: t0.Add(30 * time.Hour), End: t0.Add(55 * time.Hour)}, Page: vigil.Page{Limit: 100}}
	before, beforeTotal, err := s.SearchArtifacts(ctx, "o1", window)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	kept := spans(t, path)
	db := sqlite.OpenDB(path)
	if _, err := db.Exec(`DROP TABLE artifact_spans; DELETE FROM schema_migrations WHERE name LIKE '0019_artifact_spans%'`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s = openAt(t, path)
	defer s.Close()
	if got := spans(t, path); !reflect.DeepEqual(got, kept) || len(got) == 0 {
		t.Fatalf("spans after the migration:\n%v\nkept by InsertArtifacts:\n%v", got, kept)
	}
	after, afterTotal, err := s.SearchArtifacts(ctx, "o1", window)
	if err != nil {
		t.Fatal(err)
	}
	if afterTotal != beforeTotal || len(after) != len(before) || beforeTotal != 9 {
		t.Fatalf("window search: %d (%d listed) after the migration, %d (%d) before; want 9", afterTotal, len(after), beforeTotal, len(before))
	}
	for i := range after {
		if after[i].ID != before[i].ID {
			t.Fatalf("window search, item %d: %s after, %s before", i, after[i].ID, before[i].ID)
		}
	}
}

// TestEstimateSamplesOlderMatches: a term frequent in old artifacts and
// absent from the newest is estimated by its frequency throughout, not
// by that of the newest matches.
func TestEstimateSamplesOlderMatches(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var arts []*vigil.Artifact
	for i := range 400 {
		raw := "delta"
		if i < 300 && i%2 == 0 || i >= 300 && i%20 == 0 {
			raw += " gamma" // 150 in the first 300, 5 in the last 100
		}
		at := t0.Add(time.Duration(i) * time.Minute)
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), OrgID: "o1", Source: "auth", Raw: raw, Timestamp: at, CreatedAt: at})
	}
	if err := s.InsertArtifacts(ctx, "o1", arts); err != nil {
		t.Fatal(err)
	}
	_, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", vigil.ArtifactFilter{Query: "gamma"}, 20)
	if err != nil || !estimated || total < 140 || total > 170 {
		t.Fatalf("estimate %d (estimated %v, %v), want about 155", total, estimated, err)
	}
}

// TestSearchEstimated: beyond exactUpTo matches, the total of a search
// without filters, or within a source (its own words in the full-text index),
// is an estimate above exactUpTo, flagged; up to it the exact count; the
// page is the same either way.
func TestSearchEstimated(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	arts := spanArtifacts("o1", 300, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	for i := 0; i < len(arts); i += 50 {
		if err := s.InsertArtifacts(ctx, "o1", arts[i:i+50]); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		query, source string
		exactUpTo     int
		exact         int
		estimated     bool
	}{
		{"alpha", "", 0, 300, false},
		{"alpha", "", 300, 300, false},
		{"alpha", "", 50, 300, true},
		{"beta", "", 50, 100, true},
		{"beta", "", 100, 100, false},
		{"alpha", "auth", 50, 300, true},
	} {
		f := vigil.ArtifactFilter{Query: c.query, Source: c.source, Page: vigil.Page{Limit: 20, Offset: 10}}
		page, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", f, c.exactUpTo)
		if err != nil {
			t.Fatal(err)
		}
		want, exact, err := s.SearchArtifacts(ctx, "o1", f)
		if err != nil {
			t.Fatal(err)
		}
		if exact != c.exact || estimated != c.estimated {
			t.Errorf("%q source %q up to %d: exact total %d, estimated %v; want %d, %v", c.query, c.source, c.exactUpTo, exact, estimated, c.exact, c.estimated)
		}
		switch {
		case estimated && (total <= c.exactUpTo || total < c.exact*8/10 || total > c.exact*12/10):
			t.Errorf("%q up to %d: estimate %d of %d matches", c.query, c.exactUpTo, total, c.exact)
		case !estimated && total != c.exact:
			t.Errorf("%q up to %d: total %d, want %d", c.query, c.exactUpTo, total, c.exact)
		}
		if len(page) != len(want) || len(page) != 20 {
			t.Fatalf("%q: %d listed, want %d (20)", c.query, len(page), len(want))
		}
		for i := range page {
			if page[i].ID != want[i].ID {
				t.Fatalf("%q item %d: %s, want %s", c.query, i, page[i].ID, want[i].ID)
			}
		}
	}
}

// TestInteriorCount: a time window's total counted from the full-text
// index over the rowids of its whole 10-minute buckets, plus the matches
// of its partial buckets read, equals the count of the matching
// artifacts in the window, for windows cut anywhere; and after a backfill
// of old artifacts into the window's rowids it still does (by reading).
func TestInteriorCount(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	sqlite.SetSearchPlan(s, 1<<30, 1<<30) // never walk, never skip to reading
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var all []*vigil.Artifact
	add := func(arts []*vigil.Artifact) {
		t.Helper()
		if err := s.InsertArtifacts(ctx, "o1", arts); err != nil {
			t.Fatal(err)
		}
		all = append(all, arts...)
	}
	batch := func(from, n int, every time.Duration) []*vigil.Artifact {
		var out []*vigil.Artifact
		for i := from; i < from+n; i++ {
			raw := "epsilon"
			if i%3 != 0 {
				raw += " zeta"
			}
			at := t0.Add(time.Duration(i) * every)
			out = append(out, &vigil.Artifact{ID: vigil.NewID(), OrgID: "o1", Source: "auth", Raw: raw, Timestamp: at, CreatedAt: at})
		}
		return out
	}
	for i := 0; i < 600; i += 50 {
		add(batch(i, 50, 37*time.Second)) // in time order: 6 hours
	}
	check := func(name string) {
		t.Helper()
		for _, w := range [][2]time.Duration{{0, 6 * time.Hour}, {17 * time.Minute, 3 * time.Hour}, {time.Hour, time.Hour + 10*time.Minute},
			{25 * time.Minute, 31 * time.Minute}, {2*time.Hour + 3*time.Second, 5*time.Hour + 59*time.Minute}} {
			r := vigil.TimeRange{Start: t0.Add(w[0]), End: t0.Add(w[1])}
			want := 0
			for _, a := range all {
				if strings.Contains(a.Raw, "zeta") && !a.Timestamp.Before(r.Start) && a.Timestamp.Before(r.End) {
					want++
				}
			}
			_, got, err := s.SearchArtifacts(ctx, "o1", vigil.ArtifactFilter{Query: "zeta", Range: r})
			if err != nil || got != want {
				t.Errorf("%s, window %v–%v: total %d (%v), want %d", name, w[0], w[1], got, err, want)
			}
		}
	}
	check("in time order")
	add(batch(100, 60, 61*time.Second)) // a backfill into the same hours
	check("after a backfill")
}

// TestInteriorCountOutOfOrder: artifacts stored a little out of time
// order, as from sensors whose clocks are seconds apart, make the spans of
// neighbouring buckets overlap at their ends. A window's total is still
// counted from the full-text index for all but those overlaps: only the
// rowids where another bucket reaches in, and the window's two partial
// buckets, are read to test their time.
func TestInteriorCountOutOfOrder(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	sqlite.SetSearchPlan(s, 1<<30, 1) // never skip to walking the filter to count
	var read int64
	sqlite.SetDrivenHook(s, func(lo, hi int64) { read += hi - lo + 1 })
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var all []*vigil.Artifact
	const every, n = 7 * time.Second, 3000 // about 5 h 50 min
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i += 40 {
		var batch []*vigil.Artifact
		for k := i; k < min(i+40, n); k++ {
			raw := "epsilon"
			if k%3 != 0 {
				raw += " zeta"
			}
			skew := time.Duration(rng.IntN(41)-20) * time.Second // ±20 s
			at := t0.Add(time.Duration(k)*every + skew)
			batch = append(batch, &vigil.Artifact{ID: vigil.NewID(), OrgID: "o1", Source: "auth", Raw: raw, Timestamp: at, CreatedAt: at})
		}
		if err := s.InsertArtifacts(ctx, "o1", batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	for _, w := range [][2]time.Duration{{time.Hour + 3*time.Second, 5 * time.Hour}, {17 * time.Minute, 3*time.Hour + 31*time.Minute}} {
		r := vigil.TimeRange{Start: t0.Add(w[0]), End: t0.Add(w[1])}
		want, in := 0, 0
		for _, a := range all {
			if !a.Timestamp.Before(r.Start) && a.Timestamp.Before(r.End) {
				in++
				if strings.Contains(a.Raw, "zeta") {
					want++
				}
			}
		}
		read = 0
		_, got, err := s.SearchArtifacts(ctx, "o1", vigil.ArtifactFilter{Query: "zeta", Range: r})
		if err != nil || got != want {
			t.Errorf("window %v–%v: total %d (%v), want %d", w[0], w[1], got, err, want)
		}

		// Each of the window's bucket boundaries mixes about 40 s of
		// artifacts (6 rowids); its two partial buckets are at most
		// 2 × 86 rowids.
		if read == 0 || read > int64(in)/4 {
			t.Errorf("window %v–%v: the count read the matches among %d rowids, of the window's %d artifacts", w[0], w[1], read, in)
		}
	}
}

// TestInteriorCountWholeEdgeBuckets: a window that cuts a bucket holding
// nothing outside the window — "the last 24 hours" ends after the newest
// artifact, within its bucket — counts that bucket from the full-text index too: only the
// matches of a bucket it cuts with artifacts on both sides are read.
func TestInteriorCountWholeEdgeBuckets(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	sqlite.SetSearchPlan(s, 1<<30, 1)
	var read int64
	sqlite.SetDrivenHook(s, func(lo, hi int64) { read += hi - lo + 1 })
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var all []*vigil.Artifact
	for i := 0; i < 3000; i += 100 {
		var batch []*vigil.Artifact
		for k := i; k < i+100; k++ {
			raw := "epsilon"
			if k%3 != 0 {
				raw += " zeta"
			}
			at := t0.Add(time.Duration(k) * 7 * time.Second)
			batch = append(batch, &vigil.Artifact{ID: vigil.NewID(), OrgID: "o1", Source: "auth", Raw: raw, Timestamp: at, CreatedAt: at})
		}
		if err := s.InsertArtifacts(ctx, "o1", batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	newest := all[len(all)-1].Timestamp
	for _, c := range []struct {
		name     string
		r        vigil.TimeRange
		readUpTo int64 // rowids
	}{
		{"all of it, both ends cut", vigil.TimeRange{Start: t0.Add(-3 * time.Minute), End: newest.Add(2 * time.Second)}, 0},
		{"to just after the newest", vigil.TimeRange{Start: t0.Add(time.Hour + 3*time.Second), End: newest.Add(2 * time.Second)}, 86},
		{"from the oldest to mid-bucket", vigil.TimeRange{Start: t0, End: t0.Add(2*time.Hour + 5*time.Minute)}, 86},
	} {
		want := 0
		for _, a := range all {
			if strings.Contains(a.Raw, "zeta") && !a.Timestamp.Before(c.r.Start) && a.Timestamp.Before(c.r.End) {
				want++
			}
		}
		read = 0
		_, got, err := s.SearchArtifacts(ctx, "o1", vigil.ArtifactFilter{Query: "zeta", Range: c.r})
		if err != nil || got != want {
			t.Errorf("%s: total %d (%v), want %d", c.name, got, err, want)
		}
		if read > c.readUpTo {
			t.Errorf("%s: the count read the matches among %d rowids, want at most %d (one bucket it cuts)", c.name, read, c.readUpTo)
		}
	}
}
