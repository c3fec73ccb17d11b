package postgres_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
)

// TestCorrelationPlans: what a correlation looks up by the key nodes or
// incident ids it names starts from them (the node → incident index, the
// primary key), never by walking an index of the org's incidents, whatever
// the statistics: with 10,000 open incidents in the org, before the tables
// were analyzed and after, in the plans of one execution (custom) and of
// every execution (generic, which a prepared statement turns to). Planned
// freely, the open incidents sharing a key node were found by walking the
// org's open incidents (incidents_org_open) and probing each one's nodes.
func TestCorrelationPlans(t *testing.T) {
	dbURL := freshDB(t)
	mustOpen(t, dbURL, postgres.Options{})
	conn := mustConn(t, dbURL)
	// What was seeded stays unanalyzed until the test analyzes it.
	for _, table := range []string{"nodes", "incidents", "incident_nodes"} {
		if _, err := conn.Exec(t.Context(), `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
	org, now := vigil.NewID(), vigil.Now()
	seedOpenIncidents(t, dbURL, org, 10_000, now, false)
	nodes := `ARRAY['00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-000000000007']`
	cases := map[string]struct{ args, table, index string }{
		"open incidents": {fmt.Sprintf("'%s', %s, %d", org, nodes, now.UnixNano()), "incident_nodes", "incident_nodes_node"},
		"hub nodes":      {fmt.Sprintf("'%s', %s, 25", org, nodes), "incident_nodes", "incident_nodes_node"},
		"lock incidents": {fmt.Sprintf("'%s', ARRAY['00000000-0000-4000-9000-000000000005']", org), "incidents", "incidents_pkey"},
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := conn.Exec(t.Context(), `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			for name, query := range postgres.CorrelationReads {
				c, ok := cases[name]
				if !ok {
					t.Fatalf("%s: no plan expected", name)
				}
				plan := explainExecute(t, conn, mode, query, c.args)
				first := "" // the first table read
				for _, line := range strings.Split(plan, "\n") {
					if strings.Contains(line, "Scan") && !strings.Contains(line, "Function Scan") && !strings.Contains(line, "Subquery Scan") {
						first = line
						break
					}
				}
				if strings.Contains(plan, "_org_") || !strings.Contains(first, " on "+c.table) || !strings.Contains(plan, c.index) {
					t.Errorf("%s (analyzed %v, %s): plan\n%s\nwant %s scanned first, by %s, and no org-wide index", name, analyzed, mode, plan, c.table, c.index)
				}
			}
		}
	}
}

// explainExecute returns the plan of query, prepared, executed with args
// (SQL literals) under plan_cache_mode mode.
func explainExecute(t *testing.T, conn *pgx.Conn, mode, query, args string) string {
	t.Helper()
	for _, q := range []string{`SET plan_cache_mode = ` + mode, `PREPARE q AS ` + query} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := conn.Query(t.Context(), `EXPLAIN EXECUTE q(`+args+`)`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `DEALLOCATE q`); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
