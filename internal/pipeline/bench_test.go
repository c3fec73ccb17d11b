package pipeline_test

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// datasetArtifacts reads every line of the four known sources of
// ../shared/datasets, shuffled with a fixed seed as `vigil bench` does.
func datasetArtifacts(tb testing.TB) []vigil.Artifact {
	tb.Helper()
	root := filepath.Join("..", "..", "..", "shared", "datasets")
	var out []vigil.Artifact
	for _, src := range []string{"auth", "dns", "firewall", "suricata"} {
		err := filepath.WalkDir(filepath.Join(root, src), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), vigil.MaxRawBytes)
			for sc.Scan() {
				if line := strings.TrimSpace(sc.Text()); line != "" {
					out = append(out, vigil.Artifact{Source: src, Raw: line})
				}
			}
			return sc.Err()
		})
		if err != nil {
			tb.Fatalf("datasets (../shared/datasets must be beside the checkout): %v", err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// cpuTime returns the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchStore is a store the benchmark opens and closes.
type benchStore interface {
	pipeline.Store
	Close() error
}

// BenchmarkProcess runs the worker's stages (parse, store with FTS, detect,
// correlate, classify) on batches of 1000 real dataset lines, in a SQLite
// store and in a PostgreSQL one (a fresh database on the server of
// VIGIL_TEST_POSTGRES_URL), with detection on and off: the writer's
// critical path without the queue and the API. The store grows over b.N
// batches.
func BenchmarkProcess(b *testing.B) {
	lines := datasetArtifacts(b)
	stores := []struct {
		name string
		open func(b *testing.B) benchStore
	}{
		{"sqlite", func(b *testing.B) benchStore {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "v.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) benchStore {
			s, err := postgres.Open(b.Context(), pgtest.FreshDB(b), postgres.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		for _, mode := range []string{"detect=on", "detect=off"} {
			b.Run(st.name+"/"+mode, func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				p := pipeline.NewProcessor(s, nil, nil)
				if mode == "detect=on" {
					p.WithDetection(detect.NewEngine(detect.Default(detect.Config{})...), vigil.DefaultCorrelationPolicy())
				}
				const batch = 1000
				next := 0
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for b.Loop() {
					if err := p.Process(b.Context(), "org", nextBatch(lines, &next, batch)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "artifacts/s")
				// The process's CPU time (user + system) per batch: steadier than
				// the wall clock on a machine shared with other work.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			})
		}
	}
}

// nextBatch returns the next n of lines, from *next on (round the end),
// as new artifacts of org "org" stamped now.
func nextBatch(lines []vigil.Artifact, next *int, n int) []*vigil.Artifact {
	arts := make([]*vigil.Artifact, n)
	now := vigil.Now()
	for i := range arts {
		a := lines[*next%len(lines)]
		*next++
		a.ID, a.OrgID, a.Timestamp, a.CreatedAt = vigil.NewID(), "org", now, now
		arts[i] = &a
	}
	return arts
}
