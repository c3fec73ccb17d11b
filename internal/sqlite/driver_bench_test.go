package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// benchDrivers lists the database/sql drivers to compare; the cgo driver
// adds itself when built with -tags sqlite_fts5 (driver_mattn_test.go).
var benchDrivers = map[string]string{"modernc": "sqlite"}

// BenchmarkDriverInsert measures the storage hot path on each driver: a
// transaction of 1000 artifact rows plus their FTS5 rows, the same SQL the
// store runs. Reproduce with
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkDriverInsert ./internal/sqlite/
func BenchmarkDriverInsert(b *testing.B) {
	schema, err := migrations.ReadFile("migrations/0001_init.sql")
	if err != nil {
		b.Fatal(err)
	}
	for name, driver := range benchDrivers {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "bench.db")
			dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
			if name == "mattn" {
				dsn = "file:" + path + "?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL"
			}
			db, err := sql.Open(driver, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.ExecContext(ctx, string(schema)); err != nil {
				b.Fatal(err)
			}
			const batch = 1000
			lines := benchLines(batch)
			now := time.Now().UnixNano()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				ins, _ := tx.PrepareContext(ctx, `INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at) VALUES (?, ?, ?, ?, ?, '{}', ?)`)
				fts, _ := tx.PrepareContext(ctx, `INSERT INTO artifacts_fts (rowid, raw) VALUES (?, ?)`)
				for _, l := range lines {
					res, err := ins.ExecContext(ctx, vigil.NewID(), "bench", "auth", l, now, now)
					if err != nil {
						b.Fatal(err)
					}
					id, _ := res.LastInsertId()
					if _, err := fts.ExecContext(ctx, id, l); err != nil {
						b.Fatal(err)
					}
				}
				ins.Close()
				fts.Close()
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "artifacts/s")
		})
	}
}

// benchLines returns n realistic, distinct log lines.
func benchLines(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Jun 14 15:16:%02d combo sshd[%d]: Failed password for invalid user admin%d from 203.0.%d.%d port %d ssh2",
			i%60, 19000+i, i%97, i%256, (i*7)%256, 40000+i)
	}
	return out
}
