package postgres_test

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// BenchmarkCorrelateOpenIncidents: correlating one observation costs the
// same with 0, 10,000 or 200,000 open incidents in the org.
//
//	go test -run '^$' -bench CorrelateOpenIncidents ./internal/postgres/
func BenchmarkCorrelateOpenIncidents(b *testing.B) {
	storetest.BenchCorrelate(b, func(b *testing.B) (correlate.Store, storetest.Seed) {
		dbURL := freshDB(b)
		return mustOpen(b, dbURL, postgres.Options{}), func(b *testing.B, org string, n int, at time.Time) { seedOpenIncidents(b, dbURL, org, n, at, true) }
	})
}

// seedOpenIncidents inserts n open incidents of org, active at at, each
// with a key node of its own, in three statements, and analyzes the
// tables as autovacuum would after so many rows.
func seedOpenIncidents(tb testing.TB, dbURL, org string, n int, at time.Time, analyze bool) {
	if n == 0 {
		return
	}
	conn := mustConn(tb, dbURL)
	args := []any{n, org, at.UnixNano()}
	for _, st := range []struct {
		q    string
		args int
	}{
		{`INSERT INTO nodes (id, org_id, type, value, created_at)
			SELECT format('00000000-0000-4000-8000-%s', lpad(i::text, 12, '0')), $2, 'ip',
				format('10.%s.%s.%s', i >> 16, (i >> 8) & 255, i & 255), $3
			FROM generate_series(0, $1 - 1) AS i`, 3},
		{`INSERT INTO incidents (id, org_id, title, severity, computed_severity, status, created_at, updated_at, last_activity_at)
			SELECT format('00000000-0000-4000-9000-%s', lpad(i::text, 12, '0')), $2, 'seeded', 'low', 'low', 1, $3, $3, $3
			FROM generate_series(0, $1 - 1) AS i`, 3},
		{`INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT format('00000000-0000-4000-9000-%s', lpad(i::text, 12, '0')), format('00000000-0000-4000-8000-%s', lpad(i::text, 12, '0')), true
			FROM generate_series(0, $1 - 1) AS i`, 1},
		{`ANALYZE nodes, incidents, incident_nodes`, 0},
	} {
		if st.args == 0 && !analyze {
			continue
		}
		if _, err := conn.Exec(tb.Context(), st.q, args[:st.args]...); err != nil {
			tb.Fatal(err)
		}
	}
}
