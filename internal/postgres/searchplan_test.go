package postgres_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
)

// statement is one statement a search ran, with its arguments.
type statement struct {
	sql  string
	args []any
}

// traceSearch runs one search of f (its total exact up to exactUpTo) on
// the store at dbURL, opened traced and given to tune first, and returns
// the statements it ran in order, its total and whether it was estimated.
func traceSearch(t *testing.T, dbURL, org string, f vigil.ArtifactFilter, exactUpTo int, tune func(*postgres.Store)) ([]statement, int, bool) {
	t.Helper()
	var mu sync.Mutex
	var stmts []statement
	on := false
	s, err := postgres.OpenTraced(t.Context(), dbURL, postgres.Options{}, func(sql string, args []any) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			stmts = append(stmts, statement{sql, args})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if tune != nil {
		tune(s)
	}
	mu.Lock()
	on = true
	mu.Unlock()
	_, total, estimated, err := s.SearchArtifactsEstimated(t.Context(), org, f, exactUpTo)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return stmts, total, estimated
}

// planNode is the part of a node of EXPLAIN (ANALYZE, FORMAT JSON) that
// the plan tests read.
type planNode struct {
	Type        string     `json:"Node Type"`
	Relation    string     `json:"Relation Name"`
	Index       string     `json:"Index Name"`
	Rows        float64    `json:"Actual Rows"`
	Loops       float64    `json:"Actual Loops"`
	Filtered    float64    `json:"Rows Removed by Filter"`
	Rechecked   float64    `json:"Rows Removed by Index Recheck"`
	LossyBlocks float64    `json:"Lossy Heap Blocks"`
	Children    []planNode `json:"Plans"`
}

// work is what a search's statements did, from their plans as run.
type work struct {
	// heapRows: rows of artifacts read from its partitions (returned by
	// a scan, or removed by its filter or recheck), samples included.
	heapRows float64
	// ginEntries: row pointers the GIN index gave bitmaps.
	ginEntries float64
	// lossyBlocks: blocks of a bitmap that had to be read whole.
	lossyBlocks float64
	// plans: each statement's plan, for messages.
	plans []string
}

// replay runs stmts again on a connection to dbURL, in one transaction,
// in order: the settings a search makes (set_config) as they are, each
// read of artifacts under EXPLAIN (ANALYZE, FORMAT JSON), the planner's
// own estimates (EXPLAIN) left out; and adds up what the reads did.
func replay(t *testing.T, dbURL string, stmts []statement) work {
	t.Helper()
	conn := mustConn(t, dbURL)
	ctx := t.Context()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var w work
	for _, st := range stmts {
		switch {
		case strings.HasPrefix(st.sql, "EXPLAIN"):
			continue
		case strings.Contains(st.sql, "set_config("):
			if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
				t.Fatalf("%s: %v", st.sql, err)
			}
			continue
		case !strings.Contains(st.sql, "FROM artifacts"):
			continue
		}
		var raw []byte
		if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+st.sql, st.args...).Scan(&raw); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
		var plans []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
			t.Fatalf("plan of %s: %v", st.sql, err)
		}
		w.add(plans[0].Plan)
		w.plans = append(w.plans, st.sql+"\n"+planText(plans[0].Plan, "  "))
	}
	return w
}

// add adds what n and the nodes under it did.
func (w *work) add(n planNode) {
	loops := max(n.Loops, 1)
	switch {
	case n.Type == "Bitmap Index Scan" && strings.HasSuffix(n.Index, "_search_idx"):
		w.ginEntries += n.Rows * loops
	case n.Relation != "" && strings.HasPrefix(n.Relation, "artifacts") && n.Type != "Bitmap Index Scan":
		w.heapRows += (n.Rows + n.Filtered + n.Rechecked) * loops
		w.lossyBlocks += n.LossyBlocks
	}
	for _, c := range n.Children {
		w.add(c)
	}
}

// planText is a short text form of a plan as run, one node a line.
func planText(n planNode, indent string) string {
	var b strings.Builder
	b.WriteString(indent + n.Type)
	if n.Relation != "" {
		b.WriteString(" on " + n.Relation)
	}
	if n.Index != "" {
		b.WriteString(" using " + n.Index)
	}
	b.WriteString(" rows=" + jsonNum(n.Rows) + " loops=" + jsonNum(n.Loops))
	if n.Filtered > 0 {
		b.WriteString(" filtered=" + jsonNum(n.Filtered))
	}
	if n.Rechecked > 0 {
		b.WriteString(" rechecked=" + jsonNum(n.Rechecked))
	}
	if n.LossyBlocks > 0 {
		b.WriteString(" lossy=" + jsonNum(n.LossyBlocks))
	}
	b.WriteString("\n")
	for _, c := range n.Children {
		b.WriteString(planText(c, indent+"  "))
	}
	return b.String()
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
