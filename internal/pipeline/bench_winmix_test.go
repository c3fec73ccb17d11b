package pipeline_test

import (
	"path/filepath"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/detectionrules"
	"github.com/vigil-soc/vigil/internal/evtx"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/starterrules"
)

// BenchmarkProcessWindows is BenchmarkProcess (SQLite) for the Windows mix
// of vigil bench: every record of the real recordings
// (../shared/datasets/windows/evtx) as vigil import sends them, replayed
// in file order with live times, batches of 1000, through parse, store,
// detect (the built-in detectors, and with rules=on the starter Sigma
// rules as an org has them by default) and correlate.
// cpu-ns/artifact is the process's CPU time per artifact.
func BenchmarkProcessWindows(b *testing.B) {
	root := filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.evtx"))
	var lines []vigil.Artifact
	for _, f := range append(files, deeper...) {
		docs, err := evtx.Documents(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range docs {
			lines = append(lines, vigil.Artifact{Source: "windows", Raw: string(d)})
		}
	}
	if len(lines) == 0 {
		b.Fatalf("no recordings under %s (../shared/datasets beside the checkout)", root)
	}
	for _, rules := range []string{"rules=on", "rules=off"} {
		b.Run(rules, func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "v.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			dets := detect.Default(detect.Config{})
			if rules == "rules=on" {
				sigma, errs := detectionrules.Compile(starterrules.ForOrg("org", nil), "")
				if len(errs) > 0 {
					b.Fatalf("starter rules left out: %v", errs)
				}
				dets = append(dets, sigma...)
			}
			p := pipeline.NewProcessor(s, nil, nil)
			p.WithDetection(detect.NewEngine(dets...), vigil.DefaultCorrelationPolicy())
			const batch = 1000
			next := 0
			process := func() {
				if err := p.Process(b.Context(), "org", nextBatch(lines, &next, batch)); err != nil {
					b.Fatal(err)
				}
			}
			// The source's compression dictionary is trained once its
			// first 2,000 lines are stored (1–2 s of CPU, once per org
			// and source): before the measure.
			for range 3 {
				process()
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				process()
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/artifact")
		})
	}
}
