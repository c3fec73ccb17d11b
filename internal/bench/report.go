package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/internal/plot"
)

// Report is everything vigil bench prints.
type Report struct {
	Command  string         `json:"command"`
	Machine  Machine        `json:"machine"`
	Target   string         `json:"target"`
	Settings Settings       `json:"settings"`
	Load     *LoadReport    `json:"load"`
	Storage  *StorageReport `json:"storage_limit,omitempty"`
	Search   *SearchReport  `json:"search,omitempty"`
	Fill     *FillReport    `json:"fill,omitempty"`
	Disk     *DiskReport    `json:"disk,omitempty"`
	Problems []string       `json:"problems"`
	Series   []Second       `json:"series"`
}

// Machine is the machine the run was on, and the build of vigil.
type Machine struct {
	CPUs      int    `json:"cpus"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	MemTotal  string `json:"mem_total"`
	Build     string `json:"build"`
	// SQLite is the SQLite library this binary was built with (the
	// embedded server's and S's): pure Go, or C through cgo.
	SQLite string `json:"sqlite"`
}

// Settings are what was replayed, how, and against what server settings.
type Settings struct {
	Clients       int            `json:"clients"`
	Batch         int            `json:"batch"`
	Duration      string         `json:"duration"`
	Artifacts     int            `json:"artifacts,omitempty"`
	IngestWait    string         `json:"ingest_wait,omitempty"`
	Fsync         string         `json:"fsync,omitempty"`
	ServeArgs     string         `json:"serve_args,omitempty"`
	Files         []string       `json:"files"`
	Times         string         `json:"times"`
	Via           string         `json:"via"`
	Lines         int            `json:"lines"`
	LinesBySource map[string]int `json:"lines_by_source"`
	AvgLineBytes  float64        `json:"avg_line_bytes"`
	AvgBodyBytes  float64        `json:"avg_body_bytes"`
	StarterRules  bool           `json:"starter_rules"`
	// ClientHeapBytes is the bench clients' own heap (the lines and the
	// encoded bodies) by which the embedded server's Go memory limit was
	// raised, so that the server keeps its --memory-limit for itself.
	ClientHeapBytes float64 `json:"client_heap_bytes,omitempty"`
}

// LoadReport is the load phase: the clients' counts and latencies, the
// wait until all was searchable, and what the server's /metrics show.
type LoadReport struct {
	Requests         int64            `json:"requests"`
	Accepted         int64            `json:"accepted"`
	Rejected         int64            `json:"rejected"`
	Throttled        int64            `json:"http_429"`
	Errors           int64            `json:"errors"`
	ErrorKinds       map[string]int64 `json:"error_kinds,omitempty"`
	LoadSeconds      float64          `json:"load_seconds"`
	AckRate          float64          `json:"ack_rate"`
	AckP50Ms         float64          `json:"ack_p50_ms"`
	AckP99Ms         float64          `json:"ack_p99_ms"`
	AckMaxMs         float64          `json:"ack_max_ms"`
	Searchable       bool             `json:"all_searchable"`
	SearchableSecs   float64          `json:"searchable_after_seconds"`
	DrainSeconds     float64          `json:"drain_seconds"`
	E2ERate          float64          `json:"e2e_rate"`
	TotalBefore      int64            `json:"total_before"`
	TotalAfter       int64            `json:"total_after"`
	RSSMaxBytes      float64          `json:"rss_max_bytes"`
	RSSEndBytes      float64          `json:"rss_end_bytes"`
	HeapMaxBytes     float64          `json:"go_heap_inuse_max_bytes"`
	CPUSeconds       float64          `json:"cpu_seconds"`
	ArtifactsPerCPUs float64          `json:"artifacts_per_cpu_second"`
	// OtherCPU is the CPU of the processes of --cpu-pids over the load
	// (with their children), by "name pid"; AllCPUSeconds adds the
	// server's, and ArtifactsPerAllCPUs is per CPU-second of all of them.
	OtherCPU            map[string]float64 `json:"other_cpu_seconds,omitempty"`
	OtherCPUSeconds     float64            `json:"other_cpu_seconds_total,omitempty"`
	AllCPUSeconds       float64            `json:"all_cpu_seconds,omitempty"`
	ArtifactsPerAllCPUs float64            `json:"artifacts_per_all_cpu_second,omitempty"`
	HostBusyCores       float64            `json:"host_busy_cores"`
	LoadAvgStart        string             `json:"loadavg_start"`
	LoadAvgEnd          string             `json:"loadavg_end"`
	Parsed              float64            `json:"parsed"`
	Unparsed            float64            `json:"unparsed"`
	DeadLetters         float64            `json:"dead_letters"`
	PipelineFailures    float64            `json:"pipeline_failures"`
	Server5xx           float64            `json:"server_5xx"`
	ServerErrorLogs     int64              `json:"server_error_logs"`
	StageSeconds        map[string]float64 `json:"stage_seconds"`
	StageBatches        map[string]float64 `json:"stage_batches"`
	// TallyKeys is what the embedded store's detection Tally did with keys
	// over the load, by fate (vigil_detect_tally_keys_total), and
	// TallyHeldEnd the signals it held at the end.
	TallyKeys    map[string]float64 `json:"tally_keys,omitempty"`
	TallyHeldEnd float64            `json:"tally_held_end,omitempty"`
	// Webhook is what became of the deliveries to --webhook.
	Webhook *WebhookReport `json:"webhook,omitempty"`
	// Flat compares the first and last five minutes of a run of ten
	// minutes or more.
	Flat *FlatReport `json:"flat,omitempty"`
	// Incidents is what the internet-edge mix made of incidents.
	Incidents *IncidentsReport `json:"incidents,omitempty"`
}

// WebhookReport counts the deliveries of the --webhook subscription when
// the load phase ended.
type WebhookReport struct {
	URL        string         `json:"url"`
	Deliveries int            `json:"deliveries"`
	ByState    map[string]int `json:"by_state"`
}

// StorageReport is the storage limit S and the end-to-end rate's ratio
// to it.
type StorageReport struct {
	// Engine is where S was measured: EngineSQLite or EnginePostgres.
	Engine    string  `json:"engine"`
	Seconds   float64 `json:"seconds"`
	Artifacts int64   `json:"artifacts"`
	Rate      float64 `json:"rate"`
	Ratio     float64 `json:"ratio"`
}

// The engines of StorageReport.
const (
	EngineSQLite   = "sqlite InsertArtifacts"
	EnginePostgres = "postgres COPY"
)

// SearchReport is the search phase: its preload and each query class.
type SearchReport struct {
	Stored         int64         `json:"stored"`
	PreloadAdded   int64         `json:"preload_accepted"`
	PreloadSeconds float64       `json:"preload_seconds"`
	PreloadRate    float64       `json:"preload_rate"`
	RSSMaxBytes    float64       `json:"rss_max_bytes"`
	Classes        []SearchClass `json:"classes"`
}

// SearchClass is the latencies and totals of one class of queries.
type SearchClass struct {
	Name      string  `json:"name"`
	Params    string  `json:"params"`
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	Total     int64   `json:"total"`
	Estimated bool    `json:"total_estimated"`
	Before    *int64  `json:"total_before,omitempty"`
	Expected  *int64  `json:"expected_total,omitempty"`
	Stable    bool    `json:"total_stable"`
	// TotalMin and TotalMax: the smallest and largest total of the
	// class's requests (an estimate may move by estimateDrift while the
	// store is written).
	TotalMin int64 `json:"total_min"`
	TotalMax int64 `json:"total_max"`
	// CPUMs is the CPU per request of this process (the embedded server)
	// and of the processes of --cpu-pids, over the class's requests: the
	// latency a quiet machine would show when the requests run on one
	// core, whatever the other load of a shared machine.
	CPUMs float64 `json:"cpu_ms_per_request,omitempty"`
}

// Second is one second of the load phase (seconds since the first
// POST), through the drain until everything is searchable.
type Second struct {
	Second     int     `json:"second"`
	Accepted   int64   `json:"accepted"`
	AckP99Ms   float64 `json:"ack_p99_ms"` // NaN-free: -1 when no ack ended in that second
	Throttled  int64   `json:"http_429"`
	Errors     int64   `json:"errors"`
	Processed  float64 `json:"processed"`
	QueueDepth float64 `json:"queue_depth"`
	RSSBytes   float64 `json:"rss_bytes"`
	// HeapBytes is the server's Go heap in use, CPUSeconds the CPU time
	// of its process in that second (-1: not scraped).
	HeapBytes  float64 `json:"heap_inuse_bytes"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// StoreMs and DetectMs are the pipeline's store and detect stages'
	// milliseconds per batch of the batches that ended in that second
	// (-1: none): the one writer's time per batch, over a run.
	StoreMs  float64 `json:"store_ms_per_batch"`
	DetectMs float64 `json:"detect_ms_per_batch"`
	lats     []float64
}

// write prints the report and writes the CSV, PNG and JSON files asked for.
func (b *bench) write(stdout io.Writer) error {
	if b.rep.Problems == nil {
		b.rep.Problems = []string{}
	}
	if b.f.CSV != "" {
		if err := writeFile(b.f.CSV, b.writeCSV); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if b.f.PNG != "" {
		if err := writeFile(b.f.PNG, b.writePNG); err != nil {
			return fmt.Errorf("--png: %w", err)
		}
	}
	if b.f.JSON != "" {
		enc := func(w io.Writer) error {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			return e.Encode(b.rep)
		}
		if b.f.JSON == "-" {
			return enc(stdout)
		}
		if err := writeFile(b.f.JSON, enc); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	b.writeText(stdout)
	return nil
}

func writeFile(path string, fn func(io.Writer) error) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := fn(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (b *bench) writeCSV(w io.Writer) error {
	fmt.Fprintln(w, "second,accepted_per_s,ack_p99_ms,http_429,errors,processed_per_s,queue_depth,rss_mib,heap_inuse_mib,cpu_s,store_ms_per_batch,detect_ms_per_batch")
	// opt writes v/scale rounded to digits decimals; "" for a missing value (< 0).
	opt := func(v, scale float64, digits int) string {
		if v < 0 {
			return ""
		}
		return strconv.FormatFloat(v/scale, 'f', digits, 64)
	}
	for _, s := range b.rep.Series {
		_, err := fmt.Fprintf(w, "%d,%d,%s,%d,%d,%s,%s,%s,%s,%s,%s,%s\n", s.Second, s.Accepted, opt(s.AckP99Ms, 1, 1),
			s.Throttled, s.Errors, opt(s.Processed, 1, 0), opt(s.QueueDepth, 1, 0), opt(s.RSSBytes, 1<<20, 1),
			opt(s.HeapBytes, 1<<20, 1), opt(s.CPUSeconds, 1, 3), opt(s.StoreMs, 1, 1), opt(s.DetectMs, 1, 1))
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) writePNG(w io.Writer) error {
	var xs, acc, proc, p99 []float64
	for _, s := range b.rep.Series {
		xs = append(xs, float64(s.Second))
		acc = append(acc, float64(s.Accepted))
		pr, p := s.Processed, s.AckP99Ms
		if pr < 0 {
			pr = math.NaN()
		}
		if p < 0 {
			p = math.NaN()
		}
		proc, p99 = append(proc, pr), append(p99, p)
	}
	l := b.rep.Load
	title := fmt.Sprintf("vigil bench: %d clients x %d, e2e %.0f/s, ack p99 %.0f ms (x: seconds)", b.f.Clients, b.f.Batch, l.E2ERate, l.AckP99Ms)
	return plot.Lines(w, title, []plot.Series{
		{Name: "accepted/s (acked)", Panel: "artifacts per second", X: xs, Y: acc},
		{Name: "parsed/s (workers)", Panel: "artifacts per second", X: xs, Y: proc},
		{Name: "ack p99 ms", Panel: "ack latency p99 (ms), per second", X: xs, Y: p99},
	})
}

func (b *bench) writeText(w io.Writer) {
	r := b.rep
	m := r.Machine
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	mib := func(v float64) string { return fmt.Sprintf("%.0f MiB", v/(1<<20)) }
	p("vigil bench")
	p("  command   %s", r.Command)
	p("  machine   %d CPUs, %s/%s, %s, %s RAM, %s", m.CPUs, m.GOOS, m.GOARCH, m.CPUModel, m.MemTotal, m.GoVersion)
	if m.Build != "" {
		p("  build     %s", m.Build)
	}
	p("  sqlite    %s", m.SQLite)
	p("  target    %s", r.Target)
	p("  lines     %d (%s), avg %.0f bytes; body avg %.0f KiB", r.Settings.Lines, sourcesSummary(r.Settings.LinesBySource),
		r.Settings.AvgLineBytes, r.Settings.AvgBodyBytes/1024)
	p("  files     %s", strings.Join(r.Settings.Files, " "))
	p("  times     %s", r.Settings.Times)
	p("  via       %s", r.Settings.Via)
	if l := r.Load; l != nil {
		p("")
		p("load: %d clients × %d artifacts %s", b.f.Clients, b.f.Batch, b.f.loadSpan())
		p("  requests        %d", l.Requests)
		p("  accepted        %d  (%.0f/s acked over %.1fs)", l.Accepted, l.AckRate, l.LoadSeconds)
		p("  rejected        %d", l.Rejected)
		p("  429s            %d", l.Throttled)
		p("  errors          %d %v", l.Errors, l.ErrorKinds)
		if w := l.Webhook; w != nil {
			p("  webhook         %d deliveries to %s, by state %v", w.Deliveries, w.URL, w.ByState)
		}
		p("  ack latency     p50 %.1f ms, p99 %.1f ms, max %.1f ms", l.AckP50Ms, l.AckP99Ms, l.AckMaxMs)
		if l.Searchable {
			p("  searchable      all %d accepted artifacts, %.1fs after the first POST (drain %.1fs after the last ack)", l.Accepted, l.SearchableSecs, l.DrainSeconds)
		} else {
			p("  searchable      NOT ALL: total %d, expected %d", l.TotalAfter, l.TotalBefore+l.Accepted)
		}
		p("  end-to-end      %.0f artifacts/s (accepted / first POST → all searchable)", l.E2ERate)
		if f := l.Flat; f != nil {
			p("  flat            first five minutes %.0f/s acked, last five %.0f/s: %.1f %%", f.FirstFiveRate, f.LastFiveRate, 100*f.Ratio)
			if f.PerCPURatio > 0 {
				p("  flat per CPU    first five minutes %.0f processed per CPU-second, last five %.0f: %.1f %%", f.FirstFivePerCPU, f.LastFivePerCPU, 100*f.PerCPURatio)
			}
		}
		if i := l.Incidents; i != nil {
			p("  incidents       %d in the queue (%d roll-ups; %d more merged into them)", i.Incidents, i.Rollups, i.Merged)
			p("  planted         %d of %d sources that did worse have an incident of their own", i.PlantedOwn, i.Planted)
			for _, m := range i.Missing {
				p("    without one:  %s", m)
			}
		}
		p("  server RSS      max %s, end %s (Go heap in use: max %s)", mib(l.RSSMaxBytes), mib(l.RSSEndBytes), mib(l.HeapMaxBytes))
		p("  server CPU      %.1f s = %.2f cores over the run, %.0f artifacts per CPU-second", l.CPUSeconds, l.CPUSeconds/math.Max(l.SearchableSecs, 1e-9), l.ArtifactsPerCPUs)
		if l.OtherCPU != nil {
			var parts []string
			for k, v := range l.OtherCPU {
				parts = append(parts, fmt.Sprintf("%s %.1f s", k, v))
			}
			sort.Strings(parts)
			p("  all CPU         %.1f s: the server's and %s; %.0f artifacts per CPU-second of all of them", l.AllCPUSeconds, strings.Join(parts, ", "), l.ArtifactsPerAllCPUs)
		}
		p("  host CPU        %.2f of %d cores busy over the run, %.2f of them other processes; load average %s at the start, %s at the end",
			l.HostBusyCores, m.CPUs, math.Max(l.HostBusyCores-l.CPUSeconds/math.Max(l.SearchableSecs, 1e-9), 0), l.LoadAvgStart, l.LoadAvgEnd)
		p("  pipeline        parsed %.0f, unparsed %.0f, failures %.0f, dead letters %.0f, 5xx %.0f, error logs %d", l.Parsed, l.Unparsed, l.PipelineFailures, l.DeadLetters, l.Server5xx, l.ServerErrorLogs)
		var stages []string
		for s := range l.StageSeconds {
			stages = append(stages, s)
		}
		sort.Strings(stages)
		for _, s := range stages {
			if n := l.StageBatches[s]; n > 0 {
				p("  stage %-9s %.1f s in %.0f batches (%.1f ms per batch)", s, l.StageSeconds[s], n, 1000*l.StageSeconds[s]/n)
			}
		}
		if len(l.TallyKeys) > 0 {
			p("  detect tally    keys logged %.0f, spilled to the store %.0f, promoted %.0f, expired %.0f, read back %.0f, late %.0f; %.0f signals held at the end",
				l.TallyKeys["logged"], l.TallyKeys["spilled"], l.TallyKeys["promoted"], l.TallyKeys["expired"], l.TallyKeys["unlogged"], l.TallyKeys["late"], l.TallyHeldEnd)
		}
		if b.f.URL == "" {
			p("  (embedded: RSS and CPU are of this process, the bench clients included; the Go memory limit raised by the clients' %s)", mib(r.Settings.ClientHeapBytes))
		}
	}
	if s := r.Storage; s != nil {
		p("")
		if s.Engine == EnginePostgres {
			p("storage limit S_PG (COPY into artifact_ids and artifacts of a scratch schema: the store's partitions, indexes and tsvector; batches of %d)", b.f.Batch)
		} else {
			p("storage limit S (sqlite.Store.InsertArtifacts on %s, batches of %d, rows + FTS5 only)", m.SQLite, b.f.Batch)
		}
		p("  S               %.0f artifacts/s (%d in %.1fs)", s.Rate, s.Artifacts, s.Seconds)
		if r.Load != nil {
			p("  end-to-end      %.0f artifacts/s", r.Load.E2ERate)
		}
		p("  ratio           end-to-end / S = %.2f", s.Ratio)
	}
	if s := r.Search; s != nil {
		p("")
		p("search: %d artifacts stored", s.Stored)
		if s.PreloadAdded > 0 {
			p("  preload         %d more in %.1fs (%.0f/s end to end)", s.PreloadAdded, s.PreloadSeconds, s.PreloadRate)
		}
		p("  RSS max         %s", mib(s.RSSMaxBytes))
		p("  %-22s %9s %9s %9s %9s %10s %10s %10s  %s", "class", "p50 ms", "p99 ms", "max ms", "CPU ms", "total", "before", "expected", "params")
		orDash := func(n *int64) string {
			if n == nil {
				return "-"
			}
			return strconv.FormatInt(*n, 10)
		}
		for _, c := range s.Classes {
			tot := strconv.FormatInt(c.Total, 10)
			if c.Estimated {
				tot = "~" + tot // an estimate
			}
			p("  %-22s %9.1f %9.1f %9.1f %9.1f %10s %10s %10s  %s", c.Name, c.P50Ms, c.P99Ms, c.MaxMs, c.CPUMs, tot, orDash(c.Before), orDash(c.Expected), c.Params)
		}
	}
	b.writeFillDisk(p)
	p("")
	if len(r.Problems) == 0 {
		p("problems: none")
	} else {
		p("problems:")
		for _, s := range r.Problems {
			p("  - %s", s)
		}
	}
}
