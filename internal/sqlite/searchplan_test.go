package sqlite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// statement is one statement a search ran, with its plan.
type statement struct {
	query string
	args  []any
	plan  string
}

// searchStatements runs f as a search of org (its total exact up to
// exactUpTo) and returns the statements it ran, each with its plan, and
// the total it answered.
func searchStatements(t *testing.T, s *sqlite.Store, org string, f vigil.ArtifactFilter, exactUpTo int) ([]statement, int, bool) {
	t.Helper()
	var ran []statement
	sqlite.SetStatementHook(s, func(q string, args []any) { ran = append(ran, statement{query: q, args: args}) })
	_, total, estimated, err := s.SearchArtifactsEstimated(context.Background(), org, f, exactUpTo)
	sqlite.SetStatementHook(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ran {
		if ran[i].plan, err = sqlite.QueryPlan(context.Background(), s, ran[i].query, ran[i].args...); err != nil {
			t.Fatalf("plan of %s: %v", ran[i].query, err)
		}
	}
	return ran, total, estimated
}

// twoSources stores n artifacts of each of two sources of org, one a
// minute from t0 in turns: auth lines all say "sshd" (every third
// "failed"), firewall lines "udp" and never "sshd".
func twoSources(t *testing.T, s *sqlite.Store, org string, n int, t0 time.Time) []*vigil.Artifact {
	t.Helper()
	var arts []*vigil.Artifact
	for i := range 2 * n {
		at := t0.Add(time.Duration(i) * time.Minute)
		a := &vigil.Artifact{ID: vigil.NewID(), OrgID: org, Source: "auth", Raw: fmt.Sprintf("sshd[%d]: accepted publickey for root", i), Timestamp: at, CreatedAt: at}
		if i%3 == 0 {
			a.Raw = fmt.Sprintf("sshd[%d]: failed password for root", i)
		}
		if i%2 == 1 {
			a.Source, a.Raw = "firewall", fmt.Sprintf("drop udp 10.0.0.%d:53 -> 10.0.1.1:%d", i%250, 1000+i)
		}
		arts = append(arts, a)
	}
	for i := 0; i < len(arts); i += 100 {
		if err := s.InsertArtifacts(context.Background(), org, arts[i:min(i+100, len(arts))]); err != nil {
			t.Fatal(err)
		}
	}
	return arts
}

// TestListTotalPlans: the total of a list without a query (of a source,
// of a time window) is summed from the per-bucket counts and at most one
// bucket (10 minutes) of a time index at each edge of the window, never
// counted over the whole filter in a time index (1-2 s at 11 M).
func TestListTotalPlans(t *testing.T) {
	s := open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 300, t0)
	twoSources(t, s, "o2", 50, t0)
	window := vigil.TimeRange{Start: t0.Add(97*time.Minute + 30*time.Second), End: t0.Add(412*time.Minute + 10*time.Second)}
	for _, f := range []vigil.ArtifactFilter{{}, {Source: "firewall"}, {Range: window}, {Source: "auth", Range: window},
		{Range: vigil.TimeRange{Start: window.Start}}, {Source: "auth", Range: vigil.TimeRange{End: window.End}}} {
		want := 0
		for _, a := range arts {
			if (f.Source == "" || a.Source == f.Source) && storetest.InRange(f.Range, a.Timestamp) {
				want++
			}
		}
		ran, total, estimated := searchStatements(t, s, "o1", f, 10000)
		if total != want || estimated {
			t.Errorf("source %q, window %v: total %d (estimated %v), want %d", f.Source, f.Range, total, estimated, want)
		}
		for _, st := range ran {
			if !strings.Contains(st.query, "COUNT(") && !strings.Contains(st.query, "SUM(") {
				continue // the page
			}
			if !strings.Contains(st.plan, "_ts") {
				continue
			}
			from, to := lastInts(st.args)
			if !strings.Contains(st.plan, "ts>?") || !strings.Contains(st.plan, "ts<?") || to-from > int64(10*time.Minute) {
				t.Errorf("source %q, window %v: the total counts a time index beyond a bucket:\n%s\n%s\nargs %v", f.Source, f.Range, st.query, st.plan, st.args)
			}
		}
	}
}

// lastInts returns the last two integer arguments of a statement.
func lastInts(args []any) (a, b int64) {
	var ints []int64
	for _, v := range args {
		if n, ok := v.(int64); ok {
			ints = append(ints, n)
		}
	}
	if len(ints) < 2 {
		return 0, 1 << 62
	}
	return ints[len(ints)-2], ints[len(ints)-1]
}

// TestSourceFilterPlans: a term that matches many artifacts of another
// source, searched within a large source that holds none of them, is
// counted from the source's own time index (each entry tested against the
// matches among its stretch of rowids), not by reading every match's row
// to test its source, which took 6 s at 11 M artifacts.
func TestSourceFilterPlans(t *testing.T) {
	s := open(t)
	sqlite.SetSearchPlan(s, 1, 100) // "large" is 100 artifacts here
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	twoSources(t, s, "o1", 600, t0)
	for _, exactUpTo := range []int{0, 50} {
		ran, total, estimated := searchStatements(t, s, "o1", vigil.ArtifactFilter{Query: "sshd", Source: "firewall"}, exactUpTo)
		if total != 0 || estimated {
			t.Errorf("exact up to %d: total %d (estimated %v), want 0", exactUpTo, total, estimated)
		}
		for _, st := range ran {
			if strings.Contains(st.plan, "INTEGER PRIMARY KEY") {
				t.Errorf("exact up to %d: a statement reads the matches' rows:\n%s\n%s", exactUpTo, st.query, st.plan)
			}
		}
	}
}

// TestSourceFilterTotals: a term within a source, with or without a time
// window, under every way of counting, is counted exactly when asked (or
// up to exactUpTo), and beyond exactUpTo estimated above it and near the
// exact count; the page is the same either way.
func TestSourceFilterTotals(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	window := vigil.TimeRange{Start: t0.Add(200*time.Minute + 30*time.Second), End: t0.Add(1500 * time.Minute)}
	for _, p := range []struct{ dense, window int }{{1 << 30, 1 << 30}, {1, 1}, {1, 100}, {200, 100}} {
		s := open(t)
		sqlite.SetSearchPlan(s, p.dense, p.window)
		arts := twoSources(t, s, "o1", 1000, t0)
		twoSources(t, s, "o2", 100, t0)
		for _, c := range []struct {
			query, source string
			r             vigil.TimeRange
		}{
			{"udp", "firewall", vigil.TimeRange{}},
			{"udp", "firewall", window},
			{"failed", "auth", vigil.TimeRange{}},
			{"failed", "auth", window},
			{"root", "auth", window},
			{"sshd", "firewall", window},
			{"root -failed", "auth", vigil.TimeRange{}},
		} {
			want := 0
			for _, a := range arts {
				if a.Source == c.source && storetest.InRange(c.r, a.Timestamp) && strings.Contains(a.Raw, strings.Fields(c.query)[0]) &&
					!(strings.Contains(c.query, "-failed") && strings.Contains(a.Raw, "failed")) {
					want++
				}
			}
			f := vigil.ArtifactFilter{Query: c.query, Source: c.source, Range: c.r, Page: vigil.Page{Limit: 20, Offset: 30}}
			page, exact, err := s.SearchArtifacts(ctx, "o1", f)
			if err != nil {
				t.Fatal(err)
			}
			if exact != want {
				t.Errorf("plan %v, %q in %s %v: total %d, want %d", p, c.query, c.source, c.r, exact, want)
			}
			for _, upTo := range []int{50, 10000} {
				got, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", f, upTo)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case estimated && (total <= upTo || want <= upTo || total < want*7/10 || total > want*13/10):
					t.Errorf("plan %v, %q in %s %v up to %d: estimate %d of %d", p, c.query, c.source, c.r, upTo, total, want)
				case !estimated && total != want:
					t.Errorf("plan %v, %q in %s %v up to %d: total %d, want %d", p, c.query, c.source, c.r, upTo, total, want)
				}
				if fmt.Sprint(storetest.ArtifactIDs(got)) != fmt.Sprint(storetest.ArtifactIDs(page)) {
					t.Errorf("plan %v, %q in %s %v up to %d: page differs from the exact search's", p, c.query, c.source, c.r, upTo)
				}
			}
		}
	}
}

// TestCountsKeptExact: the per-bucket counts a list's total is summed
// from follow retention (a cut inside a bucket included) and an insert of
// ids already stored, and the migration builds the same counts from a
// store of an older build.
func TestCountsKeptExact(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/vigil.db"
	s := openAt(t, path)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 300, t0)
	if err := s.InsertArtifacts(ctx, "o1", arts[100:200]); err != nil { // stored already
		t.Fatal(err)
	}
	cut := t0.Add(123*time.Minute + 30*time.Second)
	if _, err := s.DropArtifactsBefore(ctx, cut); err != nil {
		t.Fatal(err)
	}
	totals := func() []int {
		var out []int
		for _, f := range []vigil.ArtifactFilter{{}, {Source: "auth"}, {Range: vigil.TimeRange{End: t0.Add(200 * time.Minute)}}} {
			_, n, err := s.SearchArtifacts(ctx, "o1", f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	want := []int{600 - 124, 300 - 62, 200 - 124}
	if got := totals(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("totals after retention %v, want %v", got, want)
	}
	kept, err := sqlite.QueryStrings(ctx, s, `SELECT org_id || ' ' || source || ' ' || bucket || ' ' || n FROM artifact_counts ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlite.ExecSQL(ctx, s, `DROP TABLE artifact_counts; DELETE FROM schema_migrations WHERE name LIKE '0031_artifact_counts%'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path)
	defer s.Close()
	built, err := sqlite.QueryStrings(ctx, s, `SELECT org_id || ' ' || source || ' ' || bucket || ' ' || n FROM artifact_counts ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(built) != fmt.Sprint(kept) || len(kept) == 0 {
		t.Fatalf("counts built by the migration:\n%v\nkept:\n%v", built, kept)
	}
	if got := totals(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("totals after the migration %v, want %v", got, want)
	}
}

// TestPrefixWrittenOut: a prefix is looked up once in the index's words
// and every full-text statement of the search names those words instead
// (FTS5 merges a prefix's doclists over the whole index in each statement
// that names it: 1.4 s of CPU for "fail*" at 10 M artifacts); a prefix of
// more words than are written out stays one; the totals are the same.
func TestPrefixWrittenOut(t *testing.T) {
	s := open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	twoSources(t, s, "o1", 300, t0)
	var many []*vigil.Artifact
	for i := range 60 {
		many = append(many, &vigil.Artifact{ID: vigil.NewID(), Source: "auth", Raw: fmt.Sprintf("port%d opened", i), Timestamp: t0, CreatedAt: t0})
	}
	if err := s.InsertArtifacts(context.Background(), "o1", many); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query   string
		want    int
		written bool
	}{
		{"fail*", 100, true},         // "failed"
		{"acc* -fail*", 200, true},   // "accepted", not "failed"
		{"publickey f*", 200, false}, // too short to write out
		{"port*", 60, false},         // 60 words
	} {
		ran, total, _ := searchStatements(t, s, "o1", vigil.ArtifactFilter{Query: c.query}, 0)
		if total != c.want {
			t.Errorf("%q: total %d, want %d", c.query, total, c.want)
		}
		vocab := false
		for _, st := range ran {
			vocab = vocab || strings.Contains(st.query, "artifacts_vocab")
			for _, a := range st.args {
				if s, ok := a.(string); ok && strings.Contains(s, `" *`) && c.written {
					t.Errorf("%q: a statement names a prefix (%s):\n%s", c.query, s, st.query)
				}
			}
		}
		if !vocab && c.written {
			t.Errorf("%q: the index's words were not looked up", c.query)
		}
	}
}
