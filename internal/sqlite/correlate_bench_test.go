package sqlite_test

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// BenchmarkCorrelateOpenIncidents: correlating one observation costs the
// same with 0, 10,000 or 200,000 open incidents in the org.
//
//	go test -run '^$' -bench CorrelateOpenIncidents ./internal/sqlite/
func BenchmarkCorrelateOpenIncidents(b *testing.B) {
	storetest.BenchCorrelate(b, func(b *testing.B) (correlate.Store, storetest.Seed) {
		s := open(b)
		return s, func(b *testing.B, org string, n int, at time.Time) { seedOpenIncidents(b, s, org, n, at) }
	})
}

// seedOpenIncidents inserts n open incidents of org, active at at, each
// with a key node of its own, in three statements, and checkpoints the
// write-ahead log.
func seedOpenIncidents(b *testing.B, s *sqlite.Store, org string, n int, at time.Time) {
	if n == 0 {
		return
	}
	const series = `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?1) `
	args := []any{n, org, at.UnixNano()}
	for _, st := range []struct {
		q    string
		args int // the C driver refuses more arguments than a statement names
	}{
		{series + `INSERT INTO nodes (id, org_id, type, value, created_at)
			SELECT printf('00000000-0000-4000-8000-%012d', i), ?2, 'ip', printf('10.%d.%d.%d', i >> 16, (i >> 8) & 255, i & 255), ?3 FROM s`, 3},
		{series + `INSERT INTO incidents (id, org_id, title, severity, computed_severity, status, created_at, updated_at, last_activity_at)
			SELECT printf('00000000-0000-4000-9000-%012d', i), ?2, 'seeded', 'low', 'low', 1, ?3, ?3, ?3 FROM s`, 3},
		{series + `INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT printf('00000000-0000-4000-9000-%012d', i), printf('00000000-0000-4000-8000-%012d', i), 1 FROM s`, 1},
	} {
		if err := sqlite.ExecSQL(b.Context(), s, st.q, args[:st.args]...); err != nil {
			b.Fatal(err)
		}
	}
	// The seed's pages are checkpointed here, not by the first
	// correlations measured.
	if err := sqlite.ExecSQL(b.Context(), s, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
}
