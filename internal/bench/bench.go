// Package bench is the load tool behind vigil bench: clients posting
// batches of real (or generated) log lines to a running server, or to one
// it starts in this process, until every accepted artifact is searchable;
// it reports the end-to-end ingest rate, ack latency, 429s, errors and the
// server's RSS and CPU, then the storage limit S of the same lines and the
// latency of search.
//
// The files follow a run: config (the flags), lines (what is replayed),
// embedded (the in-process server), load (the clients and the wait until
// searchable), storage (S), search, and report (text, JSON, CSV, PNG).
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/client"
)

// Options are what a run needs besides its Config.
type Options struct {
	// Command is the command line, as the report shows it.
	Command string
	// Serve runs vigil serve with args in this process until ctx ends,
	// writing its log to log. It starts the embedded server when
	// Config.URL is empty.
	Serve          func(ctx context.Context, args []string, log io.Writer) error
	Stdout, Stderr io.Writer
}

// Run is one run of vigil bench with a validated cfg: it prints the report
// to opt.Stdout (progress to opt.Stderr) and writes the files asked for.
func Run(ctx context.Context, cfg Config, opt Options) error {
	if cfg.GrowthPNG != "" {
		points, err := readGrowth(cfg.GrowthFrom)
		if err != nil {
			return err
		}
		return writeFile(cfg.GrowthPNG, func(w io.Writer) error { return writeGrowth(w, points) })
	}
	b := &bench{f: cfg, serve: opt.Serve, stderr: opt.Stderr, start: time.Now(),
		rep: &Report{Command: opt.Command, Machine: machine()}}
	b.hc = &http.Client{
		Timeout: 5 * time.Minute,
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        2*cfg.Clients + 8,
			MaxIdleConnsPerHost: 2*cfg.Clients + 8,
			DisableCompression:  true,
			IdleConnTimeout:     time.Minute,
		},
	}
	if err := b.loadLines(); err != nil {
		return err
	}
	var stop func()
	if cfg.URL == "" {
		if cfg.Fill > 0 {
			if cfg.DataDir == "" {
				dir, err := os.MkdirTemp("", "vigil-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				b.f.DataDir = dir
			}
			if err := b.fill(ctx, b.f.DataDir); err != nil {
				return err
			}
		}
		var err error
		if stop, err = b.startEmbedded(ctx); err != nil {
			return err
		}
		defer stop()
	} else {
		b.api = client.New(cfg.URL, cfg.Token, b.hc).WithMetrics(cmp.Or(cfg.MetricsURL, cfg.URL), cfg.MetricsToken)
		b.rep.Target = b.api.BaseURL()
	}
	b.rep.Settings.StarterRules = cfg.StarterRules
	if !cfg.StarterRules {
		if err := b.starterRulesOff(ctx); err != nil {
			return err
		}
	}
	if err := b.run(ctx); err != nil {
		return err
	}
	if cfg.ArtifactsData != "" {
		d, err := b.measureVLogsDisk(ctx)
		if err != nil {
			b.problem("disk: %v", err)
		}
		b.rep.Disk = d
	} else if stop != nil && cfg.DatabaseURL == "" && (cfg.DataDir != "" || cfg.Fill > 0) {
		// The server stopped: its queue drained and its WAL checkpointed.
		stop()
		d, err := b.measureDisk(ctx, b.dataDir)
		if err != nil {
			b.problem("disk: %v", err)
		}
		b.rep.Disk = d
	}
	return b.write(opt.Stdout)
}

// starterRulesOff turns off every starter Sigma rule of the org.
func (b *bench) starterRulesOff(ctx context.Context) error {
	rules, err := b.api.StarterRules(ctx)
	if err != nil {
		return fmt.Errorf("--starter-rules=false: %w", err)
	}
	n := 0
	for _, r := range rules {
		if r.Enabled {
			if err := b.api.SetStarterRule(ctx, r.ID, false); err != nil {
				return fmt.Errorf("--starter-rules=false: %w", err)
			}
			n++
		}
	}
	b.logf("%d starter rules turned off", n)
	return nil
}

// bench is one run of vigil bench.
type bench struct {
	f      Config
	serve  func(ctx context.Context, args []string, log io.Writer) error
	stderr io.Writer
	start  time.Time
	rep    *Report

	lines       []line
	times       []time.Time       // --times original: each line's parsed event time, for S
	bodies      [][]byte          // pre-encoded POST bodies of f.Batch lines each
	spans       [][2]int          // the lines of each body: start index, count (wrapping)
	frames      [][]sourceFrames  // --via syslog-tcp: each body as frames per source
	syslogAddrs map[string]string // --via syslog-tcp: the listener of each source
	sent        []int64           // artifacts accepted per body
	partial     atomic.Bool       // some batch was accepted only in part
	renumbered  atomic.Bool       // some batch was sent with its addresses renumbered
	hc          *http.Client
	api         *client.Client
	serverLog   *logCounter
	dataDir     string    // the embedded server's
	since       time.Time // --times live: what total counts from
	// --search: the totals before the load of the classes that are
	// checked, and the org's (all it held, whatever total counts).
	classBefore map[string]int64
	orgBefore   int64
}

// run is the load phase, then the storage limit and the search phase if
// asked for.
func (b *bench) run(ctx context.Context) error {
	if b.f.Times == "live" && b.f.Via == ViaHTTP {
		// Only POST /v1/artifacts carries the send time as each
		// artifact's timestamp: the other ways keep their lines' own.
		b.since = time.Now().Add(-time.Second).Truncate(time.Second)
	}
	before, err := b.total(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the artifact total (is the token valid?): %w", err)
	}
	rep := &LoadReport{TotalBefore: before, ErrorKinds: map[string]int64{}}
	b.rep.Load = rep
	if b.f.Search {
		if err := b.readBefore(ctx); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	b.logf("%d lines (%s), %d clients × %d artifacts %s against %s",
		len(b.lines), sourcesSummary(b.rep.Settings.LinesBySource), b.f.Clients, b.f.Batch, b.f.loadSpan(), b.api.BaseURL())

	var hook string
	if b.f.Webhook != "" {
		if hook, _, err = b.api.CreateWebhook(ctx, b.f.Webhook, vigil.WebhookEventTypes); err != nil {
			return fmt.Errorf("--webhook: %w", err)
		}
	}
	m0, _ := b.scrape(ctx)
	prof, err := b.startCPUProfile(ctx)
	if err != nil {
		return err
	}
	defer prof.stop()
	smp := b.startSampler(ctx)
	rep.LoadAvgStart = loadAvg()
	busy0 := hostBusy()
	others := b.otherCPU()
	t0 := time.Now()
	deadline, target := t0.Add(b.f.Duration), int64(-1)
	if b.f.Artifacts > 0 {
		deadline, target = time.Time{}, int64(b.f.Artifacts)
	}
	stopHeap := b.heapProfiles(ctx)
	st := b.ingest(ctx, t0, deadline, target, true)
	stopHeap()
	lastAck := time.Now()
	if b.f.MemProfile != "" {
		if err := writeFile(b.f.MemProfile, func(w io.Writer) error {
			runtime.GC()
			return pprof.Lookup("heap").WriteTo(w, 0)
		}); err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
	}
	rep.Requests, rep.Accepted, rep.Rejected, rep.Throttled, rep.Errors = st.requests, st.accepted, st.rejected, st.throttled, st.errors
	for k, v := range st.kinds {
		rep.ErrorKinds[k] = v
	}
	rep.LoadSeconds = lastAck.Sub(t0).Seconds()
	rep.AckRate = float64(rep.Accepted) / rep.LoadSeconds
	rep.AckP50Ms, rep.AckP99Ms, rep.AckMaxMs = quantile(st.lats, 0.50), quantile(st.lats, 0.99), quantile(st.lats, 1)

	want := before + rep.Accepted
	b.logf("load done: %d accepted in %.1fs, %d × 429, %d errors; waiting until %d are searchable",
		rep.Accepted, rep.LoadSeconds, rep.Throttled, rep.Errors, want)
	got, at, ok := b.waitSearchable(ctx, want, b.f.SearchableTimeout)
	if err := prof.stop(); err != nil {
		b.problem("%v", err)
	}
	if busy0 >= 0 {
		rep.HostBusyCores = (hostBusy() - busy0) / at.Sub(t0).Seconds()
	}
	others(rep)
	rep.LoadAvgEnd = loadAvg()
	samples := smp.stop()
	rep.TotalAfter, rep.Searchable = got, ok
	rep.SearchableSecs = at.Sub(t0).Seconds()
	rep.DrainSeconds = at.Sub(lastAck).Seconds()
	if ok {
		rep.E2ERate = float64(rep.Accepted) / rep.SearchableSecs
	} else {
		b.problem("not all searchable: %d of %d after waiting %s", got-before, rep.Accepted, b.f.SearchableTimeout)
	}
	if got > want {
		b.problem("total %d after the run is more than the %d before plus %d accepted: duplicates (or another writer)", got, before, rep.Accepted)
	}
	for _, s := range samples {
		rep.RSSMaxBytes = math.Max(rep.RSSMaxBytes, s.rss)
		rep.HeapMaxBytes = math.Max(rep.HeapMaxBytes, s.heap)
	}
	if m1, err := b.scrape(ctx); err == nil {
		b.serverCounts(rep, m0, m1)
		if rep.OtherCPU != nil {
			rep.AllCPUSeconds = rep.CPUSeconds + rep.OtherCPUSeconds
			rep.ArtifactsPerAllCPUs = float64(rep.Accepted) / rep.AllCPUSeconds
		}
	} else {
		b.problem("cannot scrape %s: %v (a server's /metrics: --metrics-url, --metrics-token)", b.api.MetricsURL(), err)
	}
	rep.ServerErrorLogs = b.serverLog.count()
	if hook != "" {
		states, n, err := b.api.WebhookDeliveries(ctx, hook, 100_000)
		if err != nil {
			b.problem("--webhook: deliveries: %v", err)
		}
		rep.Webhook = &WebhookReport{URL: b.f.Webhook, Deliveries: n, ByState: states}
	}
	b.loadProblems(rep, want)
	b.rep.Series = buildSeries(st, samples, t0, at)
	rep.Flat = flatness(b.rep.Series[:min(len(b.rep.Series), int(rep.LoadSeconds)+1)])
	if b.f.Files == "internet-edge" {
		if rep.Incidents, err = b.countIncidents(ctx); err != nil {
			b.problem("incidents not counted: %v", err)
		} else if rep.Incidents.PlantedOwn < rep.Incidents.Planted {
			b.problem("%d planted sources have no incident of their own: %v", rep.Incidents.Planted-rep.Incidents.PlantedOwn, rep.Incidents.Missing)
		}
	}

	if b.f.StorageLimit {
		// A store S cannot be measured in (a database that refuses the
		// scratch schema) costs the figure, not the report of the load.
		if err := b.storageLimit(ctx); ctx.Err() != nil {
			return fmt.Errorf("storage limit: %w", err)
		} else if err != nil {
			b.problem("storage limit not measured: %v", err)
		}
	}
	if b.f.Search {
		if err := b.searchPhase(ctx); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	return nil
}

// serverCounts fills in what the server's /metrics tell of the load
// phase: m1 at its end less m0 at its start.
func (b *bench) serverCounts(rep *LoadReport, m0, m1 client.Metrics) {
	rep.RSSEndBytes = m1.Sum("process_resident_memory_bytes")
	rep.RSSMaxBytes = math.Max(rep.RSSMaxBytes, rep.RSSEndBytes)
	d := func(name string) float64 { return m1.Sum(name) - m0.Sum(name) }
	rep.CPUSeconds = d("process_cpu_seconds_total")
	if rep.CPUSeconds > 0 {
		rep.ArtifactsPerCPUs = float64(rep.Accepted) / rep.CPUSeconds
	}
	rep.Parsed, rep.Unparsed = d("vigil_artifacts_parsed_total"), d("vigil_artifacts_unparsed_total")
	rep.DeadLetters, rep.PipelineFailures = d("vigil_dead_letters_total"), d("vigil_pipeline_failures_total")
	is5xx := func(l client.Labels) bool { return len(l["status"]) > 0 && l["status"][0] == '5' }
	rep.Server5xx = m1.SumWhere("vigil_http_requests_total", is5xx) - m0.SumWhere("vigil_http_requests_total", is5xx)
	for _, fate := range m1.LabelValues("vigil_detect_tally_keys_total", "fate") {
		of := func(l client.Labels) bool { return l["fate"] == fate }
		if rep.TallyKeys == nil {
			rep.TallyKeys = map[string]float64{}
		}
		rep.TallyKeys[fate] = m1.SumWhere("vigil_detect_tally_keys_total", of) - m0.SumWhere("vigil_detect_tally_keys_total", of)
	}
	rep.TallyHeldEnd = m1.Sum("vigil_detect_tally_held_signals")
	rep.StageSeconds, rep.StageBatches = map[string]float64{}, map[string]float64{}
	for _, stage := range m1.LabelValues("vigil_pipeline_stage_seconds_sum", "stage") {
		of := func(l client.Labels) bool { return l["stage"] == stage }
		rep.StageSeconds[stage] = m1.SumWhere("vigil_pipeline_stage_seconds_sum", of) - m0.SumWhere("vigil_pipeline_stage_seconds_sum", of)
		rep.StageBatches[stage] = m1.SumWhere("vigil_pipeline_stage_seconds_count", of) - m0.SumWhere("vigil_pipeline_stage_seconds_count", of)
	}
}

// loadProblems lists what went wrong in the load phase.
func (b *bench) loadProblems(rep *LoadReport, want int64) {
	if rep.Errors > 0 {
		b.problem("%d requests failed: %v", rep.Errors, rep.ErrorKinds)
	}
	if rep.Server5xx > 0 {
		b.problem("the server answered %v requests with 5xx", rep.Server5xx)
	}
	if processed := rep.Parsed + rep.Unparsed; processed > float64(rep.Accepted) && rep.TotalAfter == want {
		b.problem("the workers parsed %.0f artifacts for %d accepted: %.0f (%.0f%%) were processed again (queue redeliveries); no duplicate was stored",
			processed, rep.Accepted, processed-float64(rep.Accepted), 100*(processed-float64(rep.Accepted))/float64(rep.Accepted))
	}
	if rep.DeadLetters > 0 || rep.PipelineFailures > 0 {
		b.problem("pipeline: %v failed batches, %v dead letters", rep.PipelineFailures, rep.DeadLetters)
	}
	if rep.ServerErrorLogs > 0 {
		b.problem("the embedded server logged %d errors", rep.ServerErrorLogs)
	}
}

// logf writes a progress line to stderr, with the time since the start.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.stderr, "bench: [%5.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

func (b *bench) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.rep.Problems = append(b.rep.Problems, msg)
	b.logf("PROBLEM: %s", msg)
}
