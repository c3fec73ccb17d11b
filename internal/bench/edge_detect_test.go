package bench

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/detectionrules"
	"github.com/vigil-soc/vigil/internal/enrich"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
	"github.com/vigil-soc/vigil/internal/suppress"
)

// BenchmarkDetectInternetEdge runs the worker's stages (parse, enrich,
// store, detect and correlate) as vigil serve builds them — the built-in
// detectors, the org's starter Sigma rules, its suppressions and roll-up
// settings, the threat-intel feed of the planted sources — on 1000-line
// batches of the internet-edge mix and, to compare, of the
// internet-unique mix, in a fresh SQLite store each, one batch after the
// other in one goroutine: what `vigil bench --files internet-edge` costs
// the server, without HTTP, the queue and the second worker, so that the
// figure repeats on a shared machine. Each batch is stamped with the
// time it is processed ("live", as the bench sends it); from the second
// pass over the lines on, the scanners are renumbered as the bench does
// (renumber). The first edgeWarmup batches, in which the roll-ups form,
// run before the clock. ns/op is per batch; cpu-ms/op is the process's
// CPU per batch, and detect-ms/op and store-ms/op the stages' wall time
// per batch; goroutines/op the goroutines started per batch (the
// driver's and database/sql's per statement among them).
//
//	go test -run '^$' -bench DetectInternetEdge -benchtime 100x -count 6 ./internal/bench/ | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkDetectInternetEdge(b *testing.B) {
	for _, mix := range []string{"internet-edge", "internet-unique"} {
		b.Run("mix="+mix, func(b *testing.B) {
			lines, _, err := linesOf(mix, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			shuffleLines(lines)
			p, reg := edgeProcessor(b)
			next := 0
			process := func() {
				now := vigil.Now()
				arts := make([]*vigil.Artifact, edgeBatch)
				for i := range arts {
					l := lines[next%len(lines)]
					raw := renumberLine(l.Raw, next/len(lines))
					next++
					arts[i] = &vigil.Artifact{ID: vigil.NewID(), OrgID: "bench", Source: l.Source, Raw: raw, Timestamp: now, CreatedAt: now,
						Metadata: []byte(`{}`)}
				}
				if err := p.Process(b.Context(), "bench", arts); err != nil {
					b.Fatal(err)
				}
			}
			// The roll-ups form in the first batches (each signature's
			// first 20 sources open incidents that its roll-up then
			// takes in): the clock runs on the steady state after.
			for range edgeWarmup {
				process()
			}
			stages := []string{"detect", "store"}
			before := make([]float64, len(stages))
			for i, stage := range stages {
				before[i] = stageSeconds(b, reg, stage)
			}
			b.ReportAllocs()
			cpu0, g0 := storetest.ProcessCPU(b), goroutinesCreated()
			for b.Loop() {
				process()
			}
			b.ReportMetric(float64(storetest.ProcessCPU(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(goroutinesCreated()-g0)/float64(b.N), "goroutines/op")
			for i, stage := range stages {
				b.ReportMetric((stageSeconds(b, reg, stage)-before[i])/float64(b.N)*1e3, stage+"-ms/op")
			}
		})
	}
}

// goroutinesCreated is the goroutines the process has started so far.
func goroutinesCreated() uint64 {
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// edgeBatch is the artifacts of a batch (the bench's POST), edgeWarmup
// the batches processed before the clock starts.
const edgeBatch, edgeWarmup = 1000, 30

// edgeProcessor returns the pipeline of vigil serve over a fresh SQLite
// store (its --fsync deferred), with the planted sources' threat-intel
// feed, and the registry of its metrics. The enricher's outbound look-ups
// are not started: no batch waits for them, and none leaves the machine.
func edgeProcessor(b *testing.B) (*pipeline.Processor, *prometheus.Registry) {
	dir := b.TempDir()
	s, err := sqlite.Open(b.Context(), filepath.Join(dir, "vigil.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	feeds := filepath.Join(dir, "intel")
	if err := os.MkdirAll(feeds, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(feeds, "planted.txt"), []byte(edgeIntelFeed()), 0o600); err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := pipeline.NewMetrics(reg)
	enricher, err := enrich.New(enrich.Config{DataDir: dir, ThreatIntelDir: feeds}, s, prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { enricher.Close() })
	p := pipeline.NewProcessor(s, nil, metrics).WithSuppressions(suppress.NewCache(s, suppress.DefaultTTL, nil)).
		WithDetection(detect.NewEngine(detect.Default(detect.Config{})...), vigil.DefaultCorrelationPolicy()).
		WithDetectionRules(detectionrules.NewCache(s, detectionrules.DefaultTTL, nil)).
		WithEnrichment(enricher)
	return p, reg
}

// shuffleLines shuffles lines as the bench does before it encodes them.
func shuffleLines(lines []line) {
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
}

// renumberLine is the bench's renumber of one line of the round-th pass:
// the line as a body of one JSON string, renumbered, decoded again.
func renumberLine(raw string, round int) string {
	body, err := json.Marshal(raw)
	if err != nil {
		panic(err)
	}
	b := &bench{f: Config{Files: "internet-edge"}}
	var out string
	if err := json.Unmarshal(b.renumber(body, round, true), &out); err != nil {
		panic(err)
	}
	return out
}

// stageSeconds is the time the processor's stage took in all, by its
// metric.
func stageSeconds(b *testing.B, reg *prometheus.Registry, stage string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_pipeline_stage_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == stage {
					return m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0
}
