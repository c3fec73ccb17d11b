package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

func open(t testing.TB) *sqlite.Store { return openWith(t, sqlite.Options{}) }

// openWith opens a fresh store with opt, closed when the test ends.
func openWith(t testing.TB, opt sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "vigil.db"), opt)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// openAt opens the store at path, failing the test if it cannot; the
// caller closes it (tests that close and reopen one file use it).
func openAt(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("sqlite.Open %s: %v", path, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store { return open(t) })
}

// TestSearchPlans runs the artifact conformance tests with thresholds
// that force each way SearchArtifacts has of listing and counting
// matches: walking the time index always, reading the matches always,
// and counting a wide time window by what lies outside it.
func TestSearchPlans(t *testing.T) {
	for _, p := range []struct{ dense, window int }{{1 << 30, 1 << 30}, {1, 1}, {1, 100}} {
		t.Run(fmt.Sprintf("dense=%d,window=%d", p.dense, p.window), func(t *testing.T) {
			storetest.RunArtifacts(t, func(t *testing.T) storetest.Store {
				s := open(t)
				sqlite.SetSearchPlan(s, p.dense, p.window)
				return s
			})
		})
	}
}

// TestSearchesLeaveReads: searches have connections of their own, so that
// however many run, the readers stay free for every other read.
func TestSearchesLeaveReads(t *testing.T) {
	s := open(t)
	storetest.SearchesLeaveReads(t, s, func(hook func(context.Context)) int { return sqlite.SetSearchHook(s, hook) })
}

// TestIncidentQueuePlans: the console's queue orders (most recently
// active, most severe) read a page through an index, with or without a
// status filter, instead of sorting all of an org's incidents; its counts
// per status (of the incidents not merged) read one index alone.
func TestIncidentQueuePlans(t *testing.T) {
	s := open(t)
	unmerged := " AND " + vigil.MergedSQL("")
	for _, where := range []string{"org_id = ?", "org_id = ? AND status = 1"} {
		plan, err := sqlite.QueryPlan(t.Context(), s, "SELECT COUNT(*) FROM incidents WHERE "+where+unmerged, "org")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, "USING COVERING INDEX incidents_org_") {
			t.Errorf("count, %s: plan\n%s\nwant an incidents_org_* index alone", where, plan)
		}
	}
	for _, sort := range []string{vigil.IncidentSortActivity, vigil.IncidentSortSeverity} {
		for _, where := range []string{"org_id = ?" + unmerged, "org_id = ? AND status = 1" + unmerged} {
			plan, err := sqlite.QueryPlan(t.Context(), s, "SELECT id, title FROM incidents WHERE "+where+" ORDER BY "+vigil.IncidentOrderSQL(sort)+" LIMIT 50", "org")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(plan, "TEMP B-TREE") || !strings.Contains(strings.Replace(plan, "COVERING ", "", 1), "USING INDEX incidents_org_") {
				t.Errorf("sort %s, %s: plan\n%s\nwant a walk of an incidents_org_* index without a sort", sort, where, plan)
			}
		}
	}
}

// TestIncidentReadPlans: one incident's nodes, observations and artifacts
// are read through the incident's own index, never by walking an
// org-wide index of every node, observation or artifact in time order
// (how SQLite read them before, 0.4 s for one incident's facts at 1 M
// artifacts, growing with the store).
func TestIncidentReadPlans(t *testing.T) {
	s := open(t)
	for name, query := range sqlite.IncidentReads {
		args := []any{"inc", "org"}
		if strings.Count(query, "?") == 3 {
			args = append(args, 500)
		}
		plan, err := sqlite.QueryPlan(t.Context(), s, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		first := strings.SplitN(plan, "\n", 2)[0]
		if strings.Contains(plan, "_org_") || !strings.Contains(first, "(incident_id=?") {
			t.Errorf("%s: plan\n%s\nwant the incident's rows first, by incident_id, and no org-wide index", name, plan)
		}
	}
}

// TestCorrelationPlans: what a correlation looks up by the key nodes or
// ids it names starts from them (the node → incident index, the primary
// key), never by walking an index of the org's records: the open
// incidents that share a key node were found by walking the org's open
// incidents (incidents_org_open) and probing each one's nodes, a fifth of
// the ingest rate with 20,000 open; the nodes an observation names, by
// walking the org's nodes (nodes_org_created).
func TestCorrelationPlans(t *testing.T) {
	s := open(t)
	first := map[string]string{
		"open incidents": "SEARCH n USING COVERING INDEX incident_nodes_node (node_id=?",
		"hub nodes":      "SEARCH n USING COVERING INDEX incident_nodes_node (node_id=?",
		"node refs":      "(id=?)",
		"artifact refs":  "(id=?)",
	}
	for name, query := range sqlite.CorrelationReads {
		args := []any{"org", 1, "a", "b"}
		if !strings.Contains(query, "?4") {
			args = []any{"org", "a", "b"}
		}
		plan, err := sqlite.QueryPlan(t.Context(), s, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := first[name]
		if !ok {
			t.Fatalf("%s: no plan expected", name)
		}
		if strings.Contains(plan, "_org_") || !strings.Contains(strings.SplitN(plan, "\n", 2)[0], want) {
			t.Errorf("%s: plan\n%s\nwant a first step with %q and no org-wide index", name, plan, want)
		}
	}
}
