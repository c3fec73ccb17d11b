package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// SetSearchPlan sets the thresholds by which SearchArtifacts picks how to
// list and count matches, so that tests run every way on small data.
func SetSearchPlan(s *Store, denseMatches, windowScan int) {
	s.plan = searchPlan{denseMatches: denseMatches, windowScan: windowScan, walkWindow: 2}
}

// SetSearchHook makes every search call hook while it holds its
// connection, and returns how many searches may hold one at once.
func SetSearchHook(s *Store, hook func(context.Context)) int {
	s.searchHook = hook
	return s.search.Stats().MaxOpenConnections
}

// QueryPlan returns SQLite's plan of query, one detail line per step.
func QueryPlan(ctx context.Context, s *Store, query string, args ...any) (string, error) {
	rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", err
		}
		out = append(out, detail)
	}
	return strings.Join(out, "\n"), rows.Err()
}

// IncidentReads are the queries that read one incident's nodes,
// observations and artifacts, for their plans.
var IncidentReads = map[string]string{"nodes": incidentNodesSQL, "observations": incidentObservationsSQL, "artifacts": incidentArtifactsSQL}

// CorrelationReads are the queries of a correlation that look up records
// by the key nodes or ids it names, each with two of them, for their
// plans.
var CorrelationReads = map[string]string{
	"open incidents": openIncidentsSQL(2),
	"hub nodes":      hubNodesSQL(2),
	"node refs":      missingIDsSQL("nodes", 2),
	"artifact refs":  missingIDsSQL("artifacts", 2),
}

// SetDrivenHook makes every count of a search that reads its matching
// rows tell hook the rowids [lo, hi] it read them among.
func SetDrivenHook(s *Store, hook func(lo, hi int64)) { s.drivenHook = hook }

// ExecSQL runs query on the store's writer, as an older build's rows or
// an operator's edit would leave the database.
func ExecSQL(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.w.ExecContext(ctx, query, args...)
	return err
}

// QueryStrings returns the first column of query's rows as text.
func QueryStrings(ctx context.Context, s *Store, query string, args ...any) ([]string, error) {
	return queryStrings(ctx, s.r, query, args...)
}

// SetStatementHook makes every search tell hook each statement it runs,
// with its arguments.
func SetStatementHook(s *Store, hook func(query string, args []any)) { s.statementHook = hook }

// InflateRollup grows roll-up incident of org to sources sources for tests
// at scale, the fast way: each new source is a copy of one of its
// sources (node), of its place in the roll-up and of one observation of
// it (obs), every column copied but the ids, the address, the count and
// the time. The roll-up's and the incident's counts are set from the rows.
// The n-th new source counts 1 + n%7, but the one in the middle counts
// heaviest, so that heaviest-first is no insertion order.
func InflateRollup(ctx context.Context, s *Store, org, incident, node, obs string, sources int) error {
	var have int
	if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM rollup_sources WHERE incident_id = ?`, incident).Scan(&have); err != nil {
		return err
	}
	n := sources - have
	gen := fmt.Sprintf(`WITH RECURSIVE gen(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM gen WHERE x < %d) `, n)
	nodeID, obsID := `printf('scale-n-%07d', x)`, `printf('scale-o-%07d', x)`
	copies := []struct {
		table, where string
		arg          string
		set          map[string]string
	}{
		{"nodes", "id = ?", node, map[string]string{"id": nodeID,
			"value": `printf('100.%d.%d.%d', 64 + (x >> 16), (x >> 8) & 255, x & 255)`}},
		{"rollup_sources", "node_id = ? AND incident_id = '" + incident + "'", node, map[string]string{"node_id": nodeID,
			"count": fmt.Sprintf(`CASE WHEN x = %d THEN 1000000 ELSE 1 + x %% 7 END`, n/2)}},
		{"incident_nodes", "node_id = ? AND incident_id = '" + incident + "'", node, map[string]string{"node_id": nodeID}},
		{"observations", "id = ?", obs, map[string]string{"id": obsID, "created_at": "created_at + x", "updated_at": "updated_at + x"}},
		{"observation_nodes", "observation_id = ? AND node_id = '" + node + "'", obs, map[string]string{"observation_id": obsID, "node_id": nodeID}},
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, c := range copies {
		rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, c.table)
		if err != nil {
			return err
		}
		var cols, exprs []string
		for rows.Next() {
			var col string
			if err := rows.Scan(&col); err != nil {
				rows.Close()
				return err
			}
			cols = append(cols, col)
			if e, ok := c.set[col]; ok {
				exprs = append(exprs, e)
			} else {
				exprs = append(exprs, "t."+col)
			}
		}
		rows.Close()
		q := gen + `INSERT INTO ` + c.table + ` (` + strings.Join(cols, ", ") + `) SELECT ` + strings.Join(exprs, ", ") +
			` FROM (SELECT * FROM ` + c.table + ` WHERE ` + c.where + `) t, gen`
		if res, err := tx.ExecContext(ctx, q, c.arg); err != nil {
			return fmt.Errorf("inflate %s: %w", c.table, err)
		} else if k, _ := res.RowsAffected(); k != int64(n) {
			return fmt.Errorf("inflate %s: %d rows, want %d", c.table, k, n)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rollups SET sources = (SELECT count(*) FROM rollup_sources WHERE incident_id = ?1),
		count = (SELECT sum(count) FROM rollup_sources WHERE incident_id = ?1) WHERE incident_id = ?1`, incident); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE incidents SET node_count = (SELECT count(*) FROM incident_nodes WHERE incident_id = ?1)
		WHERE id = ?1 AND org_id = ?2`, incident, org); err != nil {
		return err
	}
	return tx.Commit()
}

// RollupReads are the queries that read a roll-up's nodes and sources.
var RollupReads = map[string]string{"nodes": rollupNodesSQL, "sources": rollupSourcesSQL}

// SetAddressIndex makes the searches of s answer queries of addresses
// from their keys (true, as Open leaves it) or from their phrases (false,
// as before migration 0033), for tests comparing the two.
func SetAddressIndex(s *Store, on bool) { s.addrReady = on }

// SetAddressBackfillBatch sets how many rowids the backfill of address
// keys reads per transaction, and returns a func restoring it.
func SetAddressBackfillBatch(n int64) func() {
	old := addrBackfillBatch
	addrBackfillBatch = n
	return func() { addrBackfillBatch = old }
}

// SetWholeBelow makes the artifacts stored from now on whose rowid is
// below n indexed by their whole line, as a build before migration 0035
// indexed every artifact.
func SetWholeBelow(s *Store, n int64) { s.wholeBelow = n }

// SetReindexBatch sets how many rowids the reindex of migration 0036
// writes per transaction, and returns a function that restores it.
func SetReindexBatch(n int64) func() {
	old := reindexBatch
	reindexBatch = n
	return func() { reindexBatch = old }
}

// FTSParts returns how many parts the full-text indexes of s have.
func FTSParts(t testing.TB, s *Store) int {
	t.Helper()
	ps, err := readParts(context.Background(), s.w)
	if err != nil {
		t.Fatal(err)
	}
	return len(ps)
}

// DroppedFTSParts returns how many parts of the full-text indexes of s
// retention emptied.
func DroppedFTSParts(t testing.TB, s *Store) int {
	t.Helper()
	ps, err := readParts(context.Background(), s.w)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range ps {
		if p.dropped {
			n++
		}
	}
	return n
}
