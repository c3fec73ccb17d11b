package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	_ "modernc.org/sqlite" // "sqlite", beside the driver of the build, to compare them
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

// BenchmarkDriverStore measures each driver on Vigil's own write
// workload: Store.InsertArtifacts (artifact rows, their indexes and FTS5
// rows, the statements the store runs) of batches of 1000 lines of the
// four dataset folders (those vigil bench replays), into the full
// migrated schema, with the writer's pragmas; the CPU time per batch of
// the process (the wall clock is noisy on a shared machine). Reproduce with
//
//	go test -run '^$' -bench BenchmarkDriverStore ./internal/sqlite/                     # modernc
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkDriverStore ./internal/sqlite/   # + mattn (cgo)
//	go test -tags ncruces -run '^$' -bench BenchmarkDriverStore ./internal/sqlite/       # + ncruces (wasm)
func BenchmarkDriverStore(b *testing.B) {
	lines := datasetLines(b)
	for name, driver := range benchDrivers {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			// The schema as the store makes it (the same SQLite file
			// format whatever the driver), then the driver under test.
			path := filepath.Join(b.TempDir(), "bench.db")
			s0, err := Open(ctx, path, Options{DetectionMemory: -1})
			if err != nil {
				b.Fatal(err)
			}
			if err := s0.Close(); err != nil {
				b.Fatal(err)
			}
			db, err := sql.Open(driver, "file:"+path)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			for _, p := range []string{"busy_timeout = 10000", "journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON",
				"temp_store = MEMORY", "cache_size = -65536"} {
				if _, err := db.ExecContext(ctx, "PRAGMA "+p); err != nil {
					b.Fatalf("%s: %v", p, err)
				}
			}
			s := &Store{w: db, raw: newRawCodec(), log: slog.Default()}
			const batch = 1000
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				arts := make([]*vigil.Artifact, batch)
				for k := range arts {
					l := lines[(i*batch+k)%len(lines)]
					arts[k] = &vigil.Artifact{ID: vigil.NewID(), Source: l[0], Raw: l[1], Timestamp: now, CreatedAt: now}
				}
				if err := s.InsertArtifacts(ctx, "bench", arts); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time, steadier than the wall clock on a shared machine:
			// the writer's work is CPU (synchronous=NORMAL in WAL mode
			// syncs nothing at commit).
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(b.N*batch)/cpu.Seconds(), "artifacts/cpu-s")
		})
	}
}

// cpuTime returns the CPU time (user and system) of the process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// datasetLines returns the (source, line) pairs of the dataset folders
// vigil bench replays by default, shuffled; generated lines when they are
// not there.
func datasetLines(b testing.TB) [][2]string {
	var out [][2]string
	for _, src := range []string{"auth", "dns", "firewall", "suricata"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", src, "*"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for l := range strings.SplitSeq(string(data), "\n") {
				if l = strings.TrimSpace(l); l != "" && len(l) <= vigil.MaxRawBytes {
					out = append(out, [2]string{src, l})
				}
			}
		}
	}
	if len(out) == 0 {
		b.Logf("no datasets in ../../../shared/datasets: generated lines")
		for _, l := range benchLines(30000) {
			out = append(out, [2]string{"auth", l})
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
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
