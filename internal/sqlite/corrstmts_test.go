package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/correlate"
)

// countingStore counts the statements of its correlation transactions
// by their text.
type countingStore struct {
	*Store
	in     bool
	counts map[string]int
}

func (c *countingStore) Correlate(ctx context.Context, org string, fn func(correlate.Tx) error) error {
	c.in = true
	defer func() { c.in = false }()
	return c.Store.Correlate(ctx, org, fn)
}

// count returns how many statements ran whose text holds one of parts.
func (c *countingStore) count(parts ...string) int {
	n := 0
	for q, k := range c.counts {
		for _, p := range parts {
			if strings.Contains(q, p) {
				n += k
				break
			}
		}
	}
	return n
}

// profile lists the statements counted, the commonest first, per batch.
func (c *countingStore) profile(batches int) string {
	type entry struct {
		q string
		n int
	}
	var all []entry
	total := 0
	for q, n := range c.counts {
		all = append(all, entry{strings.Join(strings.Fields(q), " "), n})
		total += n
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].q < all[j].q })
	var b strings.Builder
	fmt.Fprintf(&b, "correlation statements per batch: %.1f\n", float64(total)/float64(batches))
	for _, e := range all {
		fmt.Fprintf(&b, "%7.1f  %.150s\n", float64(e.n)/float64(batches), e.q)
	}
	return b.String()
}

// TestGrowthStatementsPerBatch holds the statements a batch of the
// Windows mix runs to grow the observations already open (on the real
// recordings with the starter Sigma rules, nearly every detection grows
// one) to a few a batch, not a few a growth: the growths' observations,
// artifacts and bursts written at once, their events an incident at
// once, and the hub check of a key node asked once until an incident
// changes. Before, each growth ran each of those statements: in these
// batches (the fourth to the eighth, where incidents still open and
// each new one writes what the batch grew so far) 12.4 statements a
// growth, 3 of them writes of its observation, artifacts and burst (now
// 0.3), 1 an event (0.35 with the new incidents' own) and 1 a hub check
// (0.34); 8.8 now. `go test -run GrowthStatements -v` lists them.
func TestGrowthStatementsPerBatch(t *testing.T) {
	lines := windowsMix(t)
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "v.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := &countingStore{Store: s, counts: map[string]int{}}
	stmtHook = func(q string) {
		if cs.in {
			cs.counts[q]++
		}
	}
	defer func() { stmtHook = nil }()
	replay := replayer(t, cs, lines)
	replay(3) // the first incidents open
	grew := func() int {
		var n int
		if err := s.w.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM incident_events WHERE type = 'incident.grew'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	clear(cs.counts)
	before := grew()
	const batches = 5
	replay(batches)
	growths := grew() - before
	t.Log(cs.profile(batches))
	if growths < 50*batches {
		t.Fatalf("%d growths in %d batches: the mix no longer grows observations", growths, batches)
	}
	for _, c := range []struct {
		what  string
		parts []string
		most  int
	}{
		{"observation, artifact and burst writes", []string{"UPDATE observations SET description",
			"INSERT INTO observation_artifacts (observation_id, artifact_id, pos) SELECT o.id", "UPDATE detect_bursts"}, growths / 2},
		{"event inserts", []string{"INSERT INTO incident_events"}, growths / 2},
		{"hub checks", []string{"GROUP BY n.node_id HAVING COUNT(*)"}, growths / 2},
	} {
		if n := cs.count(c.parts...); n > c.most {
			t.Errorf("%s: %d for %d growths, want at most %d", c.what, n, growths, c.most)
		}
	}
	total := 0
	for _, n := range cs.counts {
		total += n
	}
	if perGrowth := float64(total) / float64(growths); perGrowth > 10 {
		t.Errorf("%.1f correlation statements per growth, want at most 10", perGrowth)
	}
}

// TestGrowthWritePlans holds the statements that write a batch's growths
// and events at once to plans that start from their JSON list and find
// each row by its key: planned freely, the bursts' extension walked the
// org's bursts (detect_bursts_last by org_id alone) for every batch.
func TestGrowthWritePlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "v.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, c := range map[string]struct {
		q    string
		args []any
	}{
		"artifacts":    {settleArtifactsSQL, []any{`[["o",["a"]]]`, "org", 5000}},
		"observations": {settleObservationsSQL, []any{`[["o","d","low",1,2,0]]`, "org"}},
		"bursts":       {settleBurstsSQL, []any{`[["d","k","o",1,2,"org"]]`}},
		"events":       {insertEventsSQL, []any{`[["i","t","a","v",1,"{}"]]`, "org"}},
	} {
		plan, err := QueryPlan(t.Context(), s, c.q, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		steps := strings.Split(plan, "\n")
		if !strings.HasPrefix(steps[0], "SCAN ") || !strings.Contains(steps[0], "VIRTUAL TABLE") {
			t.Errorf("%s: plan\n%s\nwant the JSON list first", name, plan)
		}
		for _, st := range steps[1:] {
			if strings.HasPrefix(st, "SCAN ") && !strings.Contains(st, "VIRTUAL TABLE") || strings.Contains(st, "(org_id=?)") {
				t.Errorf("%s: plan\n%s\nwant every table read by its key", name, plan)
			}
		}
	}
}
