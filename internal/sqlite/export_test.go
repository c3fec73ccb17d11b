package sqlite

import (
	"context"
	"strings"
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
