package detect_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/pipeline"
)

// line is one dataset line with its source.
type line struct{ source, raw string }

// mixedLines interleaves the lines of several real datasets: auth,
// firewall, DNS and Suricata, attacks and noise.
func mixedLines(tb testing.TB) []line {
	tb.Helper()
	files := []struct{ file, source string }{
		{"auth/loghub-Linux_2k.log", "auth"},
		{"auth/crowdsec-hub-sshd-pam-tests.log", "auth"},
		{"firewall/iptablogs-netfilter.log", "firewall"},
		{"firewall/crowdsec-hub-iptables-tests.log", "firewall"},
		{"dns/wrccdc2018-zeek-dns.log", "dns"},
		{"dns/dnsmasq-hotspot.log", "dns"},
		{"suricata/surevego-eve.json", "suricata"},
	}
	var per [][]line
	for _, f := range files {
		var ls []line
		for _, l := range readLines(tb, f.file) {
			ls = append(ls, line{f.source, l})
		}
		per = append(per, ls)
	}
	var out []line
	for i := 0; ; i++ {
		added := false
		for _, ls := range per {
			if i < len(ls) {
				out = append(out, ls[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// BenchmarkDetections measures the engine alone: signals and chunks of 10k
// parsed events of mixed real lines.
func BenchmarkDetections(b *testing.B) {
	lines := mixedLines(b)[:10000]
	evs := make([]*detect.Event, len(lines))
	for i, l := range lines {
		r := parse.Parse(l.source, []byte(l.raw), ref)
		at := r.Time
		if at.IsZero() {
			at = ref
		}
		evs[i] = &detect.Event{ArtifactID: vigil.NewID(), Source: l.source, At: at, Fields: r.Event}
	}
	engine := detect.NewEngine(detect.Default(detect.Config{})...)
	signals := 0
	for _, d := range engine.Detections(evs) {
		signals += len(d.Signals)
	}
	b.ResetTimer()
	for b.Loop() {
		engine.Detections(evs)
	}
	b.ReportMetric(float64(len(evs)*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(signals), "signals/10k")
}

// BenchmarkDetectStore measures the pipeline on 1000-line batches of
// mixed real lines, without and with detection, so that the cost of
// detection (signals, windows, observations, correlation, rules) shows.
// Each iteration runs the same lines through both processors, each on its
// own store, alternating which goes first, so that the disk's ups and
// downs fall on both alike.
func BenchmarkDetectStore(b *testing.B) {
	lines := mixedLines(b)
	plain := pipeline.NewProcessor(newEnv(b, detect.Config{}).store, nil, nil)
	reg := prometheus.NewRegistry()
	withDetect := pipeline.NewProcessor(newEnv(b, detect.Config{}).store, nil, pipeline.NewMetrics(reg)).
		WithDetection(detect.NewEngine(detect.Default(detect.Config{})...), vigil.DefaultCorrelationPolicy())
	next := 0
	batch := func() (a, b []*vigil.Artifact) {
		for range 1000 {
			l := lines[next%len(lines)]
			next++
			for _, arts := range []*[]*vigil.Artifact{&a, &b} {
				*arts = append(*arts, &vigil.Artifact{ID: vigil.NewID(), Source: l.source, Raw: l.raw, Timestamp: ref,
					TimestampDefaulted: true, CreatedAt: ref, Metadata: []byte(`{}`)})
			}
		}
		return a, b
	}
	run := func(p *pipeline.Processor, arts []*vigil.Artifact) time.Duration {
		start := time.Now()
		if err := p.Process(b.Context(), "org", arts); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var tPlain, tDetect time.Duration
	n := 0
	for b.Loop() {
		x, y := batch()
		if n%2 == 0 {
			tPlain += run(plain, x)
			tDetect += run(withDetect, y)
		} else {
			tDetect += run(withDetect, y)
			tPlain += run(plain, x)
		}
		n++
	}
	stage := 0.0
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
				if l.GetName() == "stage" && l.GetValue() == "detect" {
					stage = m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	b.ReportMetric(float64(1000*n)/tPlain.Seconds(), "artifacts/s")
	b.ReportMetric(float64(1000*n)/tDetect.Seconds(), "artifacts/s-detect")
	b.ReportMetric(stage*1000/float64(n), "detect-ms/batch")
	b.ReportMetric(100*(1-tPlain.Seconds()/tDetect.Seconds()), "%-cut-by-detect")
}

// BenchmarkWindowsDetections measures the engine alone on every record of
// the real Windows recordings (../shared/datasets/windows/evtx), with the
// built-in detectors as the engine runs them ("grouped": the Windows kinds
// read as one group, each event passed only to the kinds of its event
// id) and with every detector reading every event ("each", as before the
// group).
func BenchmarkWindowsDetections(b *testing.B) {
	var evs []*detect.Event
	for _, r := range readRecordings(b) {
		for _, d := range evtxRecords(b, r.path) {
			res := parse.Parse("windows", d, ref)
			evs = append(evs, &detect.Event{ArtifactID: vigil.NewID(), Source: "windows", At: res.Time, Fields: res.Event})
		}
	}
	grouped := detect.Default(detect.Config{})
	var each []detect.Detector
	for _, d := range grouped {
		each = append(each, unscoped{d})
	}
	for _, tc := range []struct {
		name string
		dets []detect.Detector
	}{{"grouped", grouped}, {"each", each}} {
		b.Run(tc.name, func(b *testing.B) {
			engine := detect.NewEngine(tc.dets...)
			for b.Loop() {
				engine.Detections(evs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(len(evs)*b.N), "ns/event")
		})
	}
}

// unscoped hides a detector's scope: the engine calls its Signals for
// every event.
type unscoped struct{ detect.Detector }
