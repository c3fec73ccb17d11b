package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/plot"
	"github.com/vigil-soc/vigil/internal/search"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// benchSources are the dataset directories replayed by default, each
// directory's name being the artifacts' source.
var benchSources = []string{"auth", "dns", "firewall", "suricata"}

// benchFlags are the settings of vigil bench.
type benchFlags struct {
	URL, Token, Org   string
	Clients, Batch    int
	Duration          time.Duration
	Files             string
	Times             string
	StorageLimit      bool
	Search            bool
	SearchArtifacts   int
	SearchRequests    int
	CSV, PNG, JSON    string
	IngestWait        time.Duration
	Fsync             string
	ServeArgs         string
	SearchableTimeout time.Duration
	CPUProfile        string
	MemProfile        string
}

// hiddenBenchFlags are left out of the usage text.
var hiddenBenchFlags = map[string]bool{"cpuprofile": true, "memprofile": true}

// runBench is vigil bench: a load generator against a running server or
// an embedded one, reporting the end-to-end ingest rate (POST →
// searchable), ack latency, 429s, errors and the server's RSS; the
// storage limit S of the same lines; and search latency.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f benchFlags
	fs.StringVar(&f.URL, "url", "", "base URL of a running server (default: start an embedded one in this process, in a temporary data dir)")
	fs.StringVar(&f.Token, "token", "", "bearer token for --url (default: $VIGIL_TOKEN); minted for the embedded server")
	fs.StringVar(&f.Org, "org", "bench", "organization of the embedded server's token")
	fs.IntVar(&f.Clients, "clients", 4, "concurrent clients posting batches")
	fs.IntVar(&f.Batch, "batch", 1000, "artifacts per POST")
	fs.DurationVar(&f.Duration, "duration", 60*time.Second, "how long the clients post")
	fs.StringVar(&f.Files, "files", "", "comma-separated log files or directories to replay, source = the file's directory name (or source=path); "+
		"\"synthetic\" for generated lines (default: ../shared/datasets/{auth,dns,firewall,suricata} if found, else synthetic)")
	fs.StringVar(&f.Times, "times", "live", "artifact timestamps: \"live\" stamps each batch with the time it is sent, as a sensor streaming "+
		"its logs would; \"original\" sends none, so each artifact keeps the event time parsed from its line (2011–2026 in the datasets)")
	fs.BoolVar(&f.StorageLimit, "storage-limit", true, "also measure S: InsertArtifacts of the same lines into a fresh SQLite store in a tight loop")
	fs.BoolVar(&f.Search, "search", false, "run the search phase after the load")
	fs.IntVar(&f.SearchArtifacts, "search-artifacts", 1000000, "artifacts stored before the search phase (more are posted if needed)")
	fs.IntVar(&f.SearchRequests, "search-requests", 200, "sequential requests per query class in the search phase")
	fs.StringVar(&f.CSV, "csv", "", "write the per-second time series to this CSV file")
	fs.StringVar(&f.PNG, "png", "", "write a plot of throughput and ack p99 over time to this PNG file")
	fs.StringVar(&f.JSON, "json", "", "write the report as JSON to this file (\"-\": to stdout instead of the text report)")
	fs.DurationVar(&f.IngestWait, "ingest-wait", 0, "--ingest-wait of the embedded server (0: reply once durable)")
	fs.StringVar(&f.Fsync, "fsync", "deferred", "--fsync of the embedded server and of the storage-limit store")
	fs.StringVar(&f.ServeArgs, "serve-args", "", "extra flags for the embedded server, space-separated (e.g. \"--workers 4\")")
	fs.DurationVar(&f.SearchableTimeout, "searchable-timeout", 30*time.Minute, "how long to wait for every accepted artifact to become searchable")
	fs.StringVar(&f.CPUProfile, "cpuprofile", "", "write a CPU profile of the load phase (first POST until all searchable) to this file")
	fs.StringVar(&f.MemProfile, "memprofile", "", "write a heap profile taken when the clients stop (the queue at its fullest) to this file")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: vigil bench [flags]\n\n")
		fs.VisitAll(func(fl *flag.Flag) {
			if hiddenBenchFlags[fl.Name] {
				return
			}
			name, use := flag.UnquoteUsage(fl)
			fmt.Fprintf(fs.Output(), "  -%s %s\n    \t%s", fl.Name, name, use)
			if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "0s" && fl.DefValue != "false" {
				fmt.Fprintf(fs.Output(), " (default %s)", fl.DefValue)
			}
			fmt.Fprintln(fs.Output())
		})
	}
	// Like every command's flags, each can come from VIGIL_<FLAG>, so
	// --token from VIGIL_TOKEN.
	if err := parseFlags(fs, joinBoolValues(fs, args), getenv); err != nil {
		return err
	}
	switch {
	case f.Clients < 1:
		return errors.New("--clients must be at least 1")
	case f.Batch < 1 || f.Batch > vigil.MaxBatchItems:
		return fmt.Errorf("--batch must be 1..%d", vigil.MaxBatchItems)
	case f.Duration <= 0:
		return errors.New("--duration must be positive")
	case f.URL != "" && f.Token == "":
		return errors.New("--url needs --token (or VIGIL_TOKEN)")
	case f.Times != "live" && f.Times != "original":
		return fmt.Errorf("--times must be live or original, not %q", f.Times)
	case f.Fsync != "deferred" && f.Fsync != "always":
		return fmt.Errorf("--fsync must be deferred or always, not %q", f.Fsync)
	}

	b := &bench{f: f, stderr: stderr, start: time.Now(), rep: &benchReport{Command: "vigil bench " + strings.Join(args, " "), Machine: machine()}}
	if err := b.loadLines(); err != nil {
		return err
	}
	if f.URL == "" {
		stop, err := b.startEmbedded(ctx)
		if err != nil {
			return err
		}
		defer stop()
	} else {
		b.base = strings.TrimRight(f.URL, "/")
		b.rep.Target = b.base
	}
	if err := b.run(ctx); err != nil {
		return err
	}
	return b.write(stdout)
}

// joinBoolValues rewrites "--flag true" and "--flag false" of boolean
// flags as "--flag=true" / "--flag=false", which package flag needs, so
// that both spellings work.
func joinBoolValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if fl := fs.Lookup(name); fl != nil && strings.HasPrefix(a, "-") && !strings.Contains(name, "=") && i+1 < len(args) {
			if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				if v := args[i+1]; v == "true" || v == "false" {
					out = append(out, a+"="+v)
					i++
					continue
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// bench is one run of vigil bench.
type bench struct {
	f      benchFlags
	stderr io.Writer
	start  time.Time
	rep    *benchReport

	lines     []benchLine
	times     []time.Time // --times original: each line's parsed event time, for S
	bodies    [][]byte    // pre-encoded POST bodies of f.Batch lines each
	spans     [][2]int    // the lines of each body: start index, count (wrapping)
	sent      []int64     // artifacts accepted per body
	partial   atomic.Bool // some batch was accepted only in part
	base      string      // API base URL
	client    *http.Client
	serverLog *logCounter
}

type benchLine struct{ Source, Raw string }

// benchReport is everything vigil bench prints.
type benchReport struct {
	Command  string         `json:"command"`
	Machine  machineInfo    `json:"machine"`
	Target   string         `json:"target"`
	Settings benchSettings  `json:"settings"`
	Load     *loadReport    `json:"load"`
	Storage  *storageReport `json:"storage_limit,omitempty"`
	Search   *searchReport  `json:"search,omitempty"`
	Problems []string       `json:"problems"`
	Series   []secondStats  `json:"series"`
}

type machineInfo struct {
	CPUs      int    `json:"cpus"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	MemTotal  string `json:"mem_total"`
	Build     string `json:"build"`
}

type benchSettings struct {
	Clients       int            `json:"clients"`
	Batch         int            `json:"batch"`
	Duration      string         `json:"duration"`
	IngestWait    string         `json:"ingest_wait,omitempty"`
	Fsync         string         `json:"fsync,omitempty"`
	ServeArgs     string         `json:"serve_args,omitempty"`
	Files         []string       `json:"files"`
	Times         string         `json:"times"`
	Lines         int            `json:"lines"`
	LinesBySource map[string]int `json:"lines_by_source"`
	AvgLineBytes  float64        `json:"avg_line_bytes"`
	AvgBodyBytes  float64        `json:"avg_body_bytes"`
}

type loadReport struct {
	Requests         int64              `json:"requests"`
	Accepted         int64              `json:"accepted"`
	Rejected         int64              `json:"rejected"`
	Throttled        int64              `json:"http_429"`
	Errors           int64              `json:"errors"`
	ErrorKinds       map[string]int64   `json:"error_kinds,omitempty"`
	LoadSeconds      float64            `json:"load_seconds"`
	AckRate          float64            `json:"ack_rate"`
	AckP50Ms         float64            `json:"ack_p50_ms"`
	AckP99Ms         float64            `json:"ack_p99_ms"`
	AckMaxMs         float64            `json:"ack_max_ms"`
	Searchable       bool               `json:"all_searchable"`
	SearchableSecs   float64            `json:"searchable_after_seconds"`
	DrainSeconds     float64            `json:"drain_seconds"`
	E2ERate          float64            `json:"e2e_rate"`
	TotalBefore      int64              `json:"total_before"`
	TotalAfter       int64              `json:"total_after"`
	RSSMaxBytes      float64            `json:"rss_max_bytes"`
	RSSEndBytes      float64            `json:"rss_end_bytes"`
	HeapMaxBytes     float64            `json:"go_heap_inuse_max_bytes"`
	CPUSeconds       float64            `json:"cpu_seconds"`
	ArtifactsPerCPUs float64            `json:"artifacts_per_cpu_second"`
	HostBusyCores    float64            `json:"host_busy_cores"`
	LoadAvgStart     string             `json:"loadavg_start"`
	LoadAvgEnd       string             `json:"loadavg_end"`
	Parsed           float64            `json:"parsed"`
	Unparsed         float64            `json:"unparsed"`
	DeadLetters      float64            `json:"dead_letters"`
	PipelineFailures float64            `json:"pipeline_failures"`
	Server5xx        float64            `json:"server_5xx"`
	ServerErrorLogs  int64              `json:"server_error_logs"`
	StageSeconds     map[string]float64 `json:"stage_seconds"`
	StageBatches     map[string]float64 `json:"stage_batches"`
}

type storageReport struct {
	Seconds   float64 `json:"seconds"`
	Artifacts int64   `json:"artifacts"`
	Rate      float64 `json:"rate"`
	Ratio     float64 `json:"ratio"`
}

type searchReport struct {
	Stored         int64         `json:"stored"`
	PreloadAdded   int64         `json:"preload_accepted"`
	PreloadSeconds float64       `json:"preload_seconds"`
	PreloadRate    float64       `json:"preload_rate"`
	RSSMaxBytes    float64       `json:"rss_max_bytes"`
	Classes        []searchClass `json:"classes"`
}

type searchClass struct {
	Name     string  `json:"name"`
	Params   string  `json:"params"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	Total    int64   `json:"total"`
	Expected *int64  `json:"expected_total,omitempty"`
	Stable   bool    `json:"total_stable"`
}

// secondStats is one second of the load phase (seconds since the first
// POST), through the drain until everything is searchable.
type secondStats struct {
	Second     int     `json:"second"`
	Accepted   int64   `json:"accepted"`
	AckP99Ms   float64 `json:"ack_p99_ms"` // NaN-free: -1 when no ack ended in that second
	Throttled  int64   `json:"http_429"`
	Errors     int64   `json:"errors"`
	Processed  float64 `json:"processed"`
	QueueDepth float64 `json:"queue_depth"`
	RSSBytes   float64 `json:"rss_bytes"`
	lats       []float64
}

// ---------------------------------------------------------------- lines

// loadLines reads the replayed lines (or generates them), shuffles them
// with a fixed seed so that every batch is a mix of sources, and encodes
// the POST bodies once, so that the clients spend no CPU on JSON.
func (b *bench) loadLines() error {
	files := b.f.Files
	var err error
	switch {
	case files == "synthetic":
		b.lines = syntheticLines(20000, time.Now())
		b.rep.Settings.Files = []string{"synthetic"}
	case files == "":
		dir := findDatasets()
		if dir == "" {
			b.lines = syntheticLines(20000, time.Now())
			b.rep.Settings.Files = []string{"synthetic (no ../shared/datasets found)"}
			break
		}
		var specs []string
		for _, s := range benchSources {
			if st, err := os.Stat(filepath.Join(dir, s)); err == nil && st.IsDir() {
				specs = append(specs, filepath.Join(dir, s))
			}
		}
		b.lines, b.rep.Settings.Files, err = readLines(specs)
	default:
		b.lines, b.rep.Settings.Files, err = readLines(strings.Split(files, ","))
	}
	if err != nil {
		return err
	}
	if len(b.lines) == 0 {
		return errors.New("no lines to replay")
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(b.lines), func(i, j int) { b.lines[i], b.lines[j] = b.lines[j], b.lines[i] })

	b.rep.Settings.LinesBySource = map[string]int{}
	var lineBytes int
	for _, l := range b.lines {
		b.rep.Settings.LinesBySource[l.Source]++
		lineBytes += len(l.Raw)
	}
	b.rep.Settings.Lines = len(b.lines)
	b.rep.Settings.AvgLineBytes = float64(lineBytes) / float64(len(b.lines))

	n := (len(b.lines) + b.f.Batch - 1) / b.f.Batch
	var bodyBytes int
	for i := 0; i < n; i++ {
		start := i * b.f.Batch
		var buf bytes.Buffer
		buf.WriteString(`{"artifacts":[`)
		for k := 0; k < b.f.Batch; k++ {
			l := b.lines[(start+k)%len(b.lines)]
			if k > 0 {
				buf.WriteByte(',')
			}
			item, err := json.Marshal(struct {
				Source    string `json:"source"`
				Raw       string `json:"raw"`
				Timestamp string `json:"timestamp,omitempty"`
			}{l.Source, l.Raw, b.stampPlaceholder()})
			if err != nil {
				return err
			}
			buf.Write(item)
		}
		buf.WriteString(`]}`)
		b.bodies = append(b.bodies, buf.Bytes())
		b.spans = append(b.spans, [2]int{start, b.f.Batch})
		bodyBytes += buf.Len()
	}
	b.sent = make([]int64, len(b.bodies))
	if b.f.Times == "original" {
		// The time the pipeline will keep (Processor.parse): the parsed
		// event time when plausible, else the time of receipt.
		now := time.Now()
		b.times = make([]time.Time, len(b.lines))
		for i, l := range b.lines {
			b.times[i] = now
			if t := parse.Parse(l.Source, []byte(l.Raw), now).Time; vigil.ValidTimestamp(t) {
				b.times[i] = t.UTC()
			}
		}
	}
	b.rep.Settings.AvgBodyBytes = float64(bodyBytes) / float64(len(b.bodies))
	b.rep.Settings.Clients, b.rep.Settings.Batch, b.rep.Settings.Duration = b.f.Clients, b.f.Batch, b.f.Duration.String()
	b.rep.Settings.Times = b.f.Times
	return nil
}

// findDatasets looks for ../shared/datasets from the working directory and
// each of its parents (so that it is found from a package directory too).
func findDatasets() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, "..", "shared", "datasets")
		for _, s := range benchSources {
			if st, err := os.Stat(filepath.Join(cand, s)); err == nil && st.IsDir() {
				return filepath.Clean(cand)
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// readLines reads every non-empty line of the files (directories: every
// regular file in them, recursively). The source is the name of the file's
// directory, unless the spec is source=path.
func readLines(specs []string) ([]benchLine, []string, error) {
	var out []benchLine
	var files []string
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		forced := ""
		if s, p, ok := strings.Cut(spec, "="); ok && vigil.ValidateSource(s) == "" {
			forced, spec = s, p
		}
		var paths []string
		err := filepath.WalkDir(spec, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				paths = append(paths, path)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("--files: %w", err)
		}
		sort.Strings(paths)
		for _, p := range paths {
			src := forced
			if src == "" {
				src = strings.ToLower(filepath.Base(filepath.Dir(p)))
			}
			if issue := vigil.ValidateSource(src); issue != "" {
				return nil, nil, fmt.Errorf("--files: source %q of %s %s; use source=path", src, p, issue)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, nil, fmt.Errorf("--files: %w", err)
			}
			files = append(files, src+"="+p)
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(make([]byte, 64<<10), vigil.MaxRawBytes+1)
			for sc.Scan() {
				line := strings.TrimRight(sc.Text(), "\r")
				if strings.TrimSpace(line) == "" || len(line) > vigil.MaxRawBytes {
					continue
				}
				out = append(out, benchLine{Source: src, Raw: line})
			}
			if err := sc.Err(); err != nil {
				return nil, nil, fmt.Errorf("--files: %s: %w", p, err)
			}
		}
	}
	return out, files, nil
}

// syntheticLines generates n realistic lines of the four known sources
// (about 35 % firewall, 35 % DNS, 20 % auth, 10 % Suricata EVE), dated in
// the hour before now, with a fixed seed.
func syntheticLines(n int, now time.Time) []benchLine {
	r := rand.New(rand.NewPCG(7, 11))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	attacker := func() string {
		if r.IntN(5) == 0 {
			return "203.0.113.7" // a heavy hitter, as real attacks have
		}
		return fmt.Sprintf("%s.%d", pick("203.0.113", "198.51.100", "192.0.2"), 1+r.IntN(254))
	}
	internal := func() string { return fmt.Sprintf("10.0.%d.%d", r.IntN(4), 2+r.IntN(250)) }
	users := []string{"root", "admin", "ubuntu", "deploy", "alice", "bob", "oracle", "test", "git", "postgres"}
	domains := []string{"www.example.com", "api.example.org", "updates.vendor.example", "cdn.example.net",
		"login.example.com", "mail.example.org", "xj3k9q.badexample.biz", "time.example.net"}
	out := make([]benchLine, 0, n)
	for i := 0; i < n; i++ {
		t := now.Add(-time.Duration(r.IntN(3600)) * time.Second)
		sys := t.Format(time.Stamp)
		pid := 1000 + r.IntN(30000)
		var l benchLine
		switch k := r.IntN(100); {
		case k < 35:
			l.Source = "firewall"
			src, dst := attacker(), internal()
			switch r.IntN(3) {
			case 0:
				l.Raw = fmt.Sprintf("%s fw-01 kernel: [%d.%06d] [UFW BLOCK] IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 SRC=%s DST=%s LEN=60 TOS=0x00 PREC=0x00 TTL=%d ID=%d DF PROTO=TCP SPT=%d DPT=%s WINDOW=29200 RES=0x00 SYN URGP=0",
					sys, r.IntN(900000), r.IntN(1000000), src, dst, 40+r.IntN(20), r.IntN(65535), 1024+r.IntN(60000), pick("22", "23", "80", "443", "445", "3389", "8080"))
			case 1:
				l.Raw = fmt.Sprintf("%s gw kernel: [netfilter-INPUT] IN=eth0 OUT= MAC=08:00:27:aa:bb:cc:52:54:00:12:35:02:08:00 SRC=%s DST=%s LEN=%d TOS=0x00 PREC=0x00 TTL=64 ID=%d PROTO=UDP SPT=%d DPT=%s LEN=%d",
					sys, internal(), dst, 60+r.IntN(400), r.IntN(65535), 1024+r.IntN(60000), pick("53", "123", "161", "514"), 40+r.IntN(400))
			default:
				l.Raw = fmt.Sprintf("%s fw-02 filterlog[%d]: 5,,,1000000103,igb0,match,%s,in,4,0x0,,%d,%d,0,DF,6,tcp,60,%s,%s,%d,%s,0,S,%d,,64240,,mss;sackOK;TS;nop;wscale",
					sys, pid, pick("block", "block", "pass"), 40+r.IntN(20), r.IntN(65535), src, dst, 1024+r.IntN(60000), pick("22", "80", "443", "3306"), r.Uint32())
			}
		case k < 70:
			l.Source = "dns"
			d := pick(domains...)
			switch r.IntN(3) {
			case 0:
				l.Raw = fmt.Sprintf("%s dnsmasq[%d]: query[%s] %s from %s", sys, pid, pick("A", "AAAA", "HTTPS"), d, internal())
			case 1:
				l.Raw = fmt.Sprintf("%s dnsmasq[%d]: reply %s is 93.184.%d.%d", sys, pid, d, r.IntN(256), r.IntN(256))
			default:
				l.Raw = fmt.Sprintf("%s ns1 named[%d]: client @0x7f3c2c0a8b60 %s#%d (%s): query: %s IN %s +E(0)K (10.0.0.53)",
					sys, pid, internal(), 1024+r.IntN(60000), d, d, pick("A", "AAAA", "MX", "TXT"))
			}
		case k < 90:
			l.Source = "auth"
			host := fmt.Sprintf("web-%02d", 1+r.IntN(8))
			ip, u := attacker(), pick(users...)
			switch r.IntN(6) {
			case 0, 1:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: Failed password for %s from %s port %d ssh2", sys, host, pid, u, ip, 1024+r.IntN(60000))
			case 2:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: Failed password for invalid user %s from %s port %d ssh2", sys, host, pid, u, ip, 1024+r.IntN(60000))
			case 3:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: Accepted publickey for %s from %s port %d ssh2: ED25519 SHA256:Xq1s8mJd0pW2f7mF1xV7s1y0c9r4h3g2k6j5l8n7b3Q", sys, host, pid, u, internal(), 1024+r.IntN(60000))
			case 4:
				l.Raw = fmt.Sprintf("%s %s sshd[%d]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=%s  user=%s", sys, host, pid, ip, u)
			default:
				l.Raw = fmt.Sprintf("%s %s sudo: %8s : TTY=pts/%d ; PWD=/home/%s ; USER=root ; COMMAND=/usr/bin/systemctl restart %s", sys, host, u, r.IntN(4), u, pick("nginx", "postgresql", "sshd"))
			}
		default:
			l.Source = "suricata"
			ts := t.UTC().Format("2006-01-02T15:04:05.000000-0700")
			flow := r.Int64N(1 << 50)
			src, dst := attacker(), internal()
			switch r.IntN(3) {
			case 0:
				sig := pick(`"signature_id":2001219,"rev":20,"signature":"ET SCAN Potential SSH Scan","category":"Attempted Information Leak","severity":2`,
					`"signature_id":2024897,"rev":3,"signature":"ET USER_AGENTS Go HTTP Client User-Agent","category":"Potentially Bad Traffic","severity":2`,
					`"signature_id":2210045,"rev":2,"signature":"SURICATA STREAM Packet with invalid ack","category":"Generic Protocol Command Decode","severity":3`)
				l.Raw = fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"alert","src_ip":"%s","src_port":%d,"dest_ip":"%s","dest_port":%s,"proto":"TCP","alert":{"action":"allowed","gid":1,%s}}`,
					ts, flow, src, 1024+r.IntN(60000), dst, pick("22", "80", "443"), sig)
			case 1:
				l.Raw = fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"dns","src_ip":"%s","src_port":%d,"dest_ip":"10.0.0.53","dest_port":53,"proto":"UDP","dns":{"type":"query","id":%d,"rrname":"%s","rrtype":"A","tx_id":0}}`,
					ts, flow, internal(), 1024+r.IntN(60000), r.IntN(65535), pick(domains...))
			default:
				l.Raw = fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"flow","src_ip":"%s","src_port":%d,"dest_ip":"%s","dest_port":443,"proto":"TCP","app_proto":"tls","flow":{"pkts_toserver":%d,"pkts_toclient":%d,"bytes_toserver":%d,"bytes_toclient":%d,"start":"%s","end":"%s","age":%d,"state":"closed","reason":"timeout","alerted":false}}`,
					ts, flow, internal(), 1024+r.IntN(60000), src, 1+r.IntN(50), 1+r.IntN(50), 60+r.IntN(90000), 60+r.IntN(900000), ts, ts, r.IntN(120))
			}
		}
		out = append(out, l)
	}
	return out
}

// ---------------------------------------------------------------- server

// startEmbedded runs vigil serve in this process on a free port with a
// temporary data dir, and mints a token from the secret in that dir.
func (b *bench) startEmbedded(ctx context.Context) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "vigil-bench-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	c := config{DataDir: dir}
	secret, err := c.jwtSecret(true) // the server reads the same file
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{"--data-dir", dir, "--addr", addr, "--ingest-wait", b.f.IngestWait.String(),
		"--fsync", b.f.Fsync, "--log-level", "warn"}
	args = append(args, strings.Fields(b.f.ServeArgs)...)
	b.serverLog = &logCounter{w: b.stderr}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	noEnv := func(string) string { return "" } // the embedded defaults, whatever the environment says
	go func() { done <- runServe(sctx, args, noEnv, b.serverLog, true) }()
	stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.logf("embedded server: %v", err)
			}
		case <-time.After(2 * time.Minute):
			b.logf("embedded server did not stop within 2 minutes")
		}
		os.RemoveAll(dir)
	}
	b.base = "http://" + addr
	b.rep.Target = "embedded (in-process vigil serve " + strings.Join(args[4:], " ") + ", data dir in " + os.TempDir() + ")"
	b.rep.Settings.IngestWait, b.rep.Settings.Fsync, b.rep.Settings.ServeArgs = b.f.IngestWait.String(), b.f.Fsync, b.f.ServeArgs
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-done:
			cancel()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("embedded server: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get(b.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("embedded server not ready within a minute")
		}
	}
	tok, err := auth.Mint(secret, auth.Claims{Subject: "bench", OrgID: b.f.Org, Permissions: []string{vigil.PermAdmin}}, 24*time.Hour, time.Now())
	if err != nil {
		stop()
		return nil, err
	}
	b.f.Token = tok
	return stop, nil
}

// logCounter passes the embedded server's log lines on and counts those
// at level ERROR.
type logCounter struct {
	w      io.Writer
	mu     sync.Mutex
	errors int64
}

func (l *logCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors += int64(bytes.Count(p, []byte(`"level":"ERROR"`)))
	return l.w.Write(p)
}

func (l *logCounter) count() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors
}

// ---------------------------------------------------------------- run

func (b *bench) run(ctx context.Context) error {
	b.client = &http.Client{
		Timeout: 5 * time.Minute,
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        2*b.f.Clients + 8,
			MaxIdleConnsPerHost: 2*b.f.Clients + 8,
			DisableCompression:  true,
			IdleConnTimeout:     time.Minute,
		},
	}
	before, err := b.total(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the artifact total (is the token valid?): %w", err)
	}
	rep := &loadReport{TotalBefore: before, ErrorKinds: map[string]int64{}}
	b.rep.Load = rep
	b.logf("%d lines (%s), %d clients × %d artifacts for %s against %s",
		len(b.lines), sourcesSummary(b.rep.Settings.LinesBySource), b.f.Clients, b.f.Batch, b.f.Duration, b.base)

	m0, _ := b.scrape(ctx)
	if b.f.CPUProfile != "" {
		pf, err := os.Create(b.f.CPUProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return err
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	smp := b.startSampler(ctx)
	rep.LoadAvgStart = loadAvg()
	busy0 := hostBusy()
	t0 := time.Now()
	st := b.ingest(ctx, t0, t0.Add(b.f.Duration), -1, true)
	lastAck := time.Now()
	if b.f.MemProfile != "" {
		if err := writeFile(b.f.MemProfile, func(w io.Writer) error {
			runtime.GC()
			return pprof.Lookup("heap").WriteTo(w, 0)
		}); err != nil {
			return err
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
	pprof.StopCPUProfile()
	if busy0 >= 0 {
		rep.HostBusyCores = (hostBusy() - busy0) / at.Sub(t0).Seconds()
	}
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
	m1, err := b.scrape(ctx)
	if err == nil {
		rep.RSSEndBytes = m1.sum("process_resident_memory_bytes", "")
		rep.RSSMaxBytes = math.Max(rep.RSSMaxBytes, rep.RSSEndBytes)
		d := func(name, label string) float64 { return m1.sum(name, label) - m0.sum(name, label) }
		rep.CPUSeconds = d("process_cpu_seconds_total", "")
		if rep.CPUSeconds > 0 {
			rep.ArtifactsPerCPUs = float64(rep.Accepted) / rep.CPUSeconds
		}
		rep.Parsed, rep.Unparsed = d("vigil_artifacts_parsed_total", ""), d("vigil_artifacts_unparsed_total", "")
		rep.DeadLetters, rep.PipelineFailures = d("vigil_dead_letters_total", ""), d("vigil_pipeline_failures_total", "")
		rep.Server5xx = d("vigil_http_requests_total", `status="5`)
		rep.StageSeconds, rep.StageBatches = map[string]float64{}, map[string]float64{}
		for _, stage := range m1.labelValues("vigil_pipeline_stage_seconds_sum", "stage") {
			sel := `stage="` + stage + `"`
			rep.StageSeconds[stage] = d("vigil_pipeline_stage_seconds_sum", sel)
			rep.StageBatches[stage] = d("vigil_pipeline_stage_seconds_count", sel)
		}
	} else {
		b.problem("cannot scrape %s/metrics: %v", b.base, err)
	}
	rep.ServerErrorLogs = b.serverLog.count()
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
	b.rep.Series = buildSeries(st, samples, t0, at)

	if b.f.StorageLimit {
		if err := b.storageLimit(ctx); err != nil {
			return fmt.Errorf("storage limit: %w", err)
		}
	}
	if b.f.Search {
		if err := b.searchPhase(ctx); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	return nil
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

// ingestStats are the counts of one ingest run.
type ingestStats struct {
	mu                                      sync.Mutex
	requests, accepted, rejected, throttled int64
	errors                                  int64
	kinds                                   map[string]int64
	lats                                    []float64 // ms of every 2xx
	seconds                                 map[int]*secondStats
}

// ingest runs f.Clients clients posting the bodies in turn until deadline
// (if not zero) or until target artifacts are accepted (if ≥ 0). A 429
// waits its Retry-After and posts the same batch again, so a throttled
// batch is delayed, never skipped; the wait ends early at the deadline,
// when nothing of that batch was accepted.
func (b *bench) ingest(ctx context.Context, t0, deadline time.Time, target int64, progress bool) *ingestStats {
	st := &ingestStats{kinds: map[string]int64{}, seconds: map[int]*secondStats{}}
	var next atomic.Int64
	var accepted atomic.Int64
	done := func() bool {
		if ctx.Err() != nil {
			return true
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return true
		}
		return target >= 0 && accepted.Load() >= target
	}
	var wg sync.WaitGroup
	for c := 0; c < b.f.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done() {
				i := int(next.Add(1)-1) % len(b.bodies)
				for !done() {
					start := time.Now()
					status, acc, rej, retry, err := b.post(ctx, b.stamp(b.bodies[i]))
					end := time.Now()
					sec := int(end.Sub(t0) / time.Second)
					ms := float64(end.Sub(start)) / float64(time.Millisecond)
					st.mu.Lock()
					st.requests++
					s := st.seconds[sec]
					if s == nil {
						s = &secondStats{Second: sec}
						st.seconds[sec] = s
					}
					switch {
					case err == nil && status/100 == 2:
						st.accepted += int64(acc)
						st.rejected += int64(rej)
						st.lats = append(st.lats, ms)
						s.Accepted += int64(acc)
						s.lats = append(s.lats, ms)
					case err == nil && status == http.StatusTooManyRequests:
						st.throttled++
						s.Throttled++
					default:
						st.errors++
						s.Errors++
						kind := fmt.Sprintf("http %d", status)
						if err != nil {
							kind = "transport: " + err.Error()
							if len(kind) > 120 {
								kind = kind[:120]
							}
						}
						st.kinds[kind]++
					}
					st.mu.Unlock()
					if err == nil && status/100 == 2 {
						accepted.Add(int64(acc))
						atomic.AddInt64(&b.sent[i], int64(acc))
						if rej > 0 {
							b.partial.Store(true) // unknown which lines: no expected totals
						}
						break
					}
					if err == nil && status == http.StatusTooManyRequests {
						wait := retry
						if !deadline.IsZero() {
							wait = min(wait, time.Until(deadline))
						}
						sleepCtx(ctx, wait)
						continue // the same batch again
					}
					sleepCtx(ctx, 100*time.Millisecond) // an error: count it, go on with the next batch
					break
				}
			}
		}()
	}
	stopProgress := make(chan struct{})
	if progress {
		go func() {
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case now := <-t.C:
					st.mu.Lock()
					b.logf("accepted %d (%.0f/s), 429s %d, errors %d",
						st.accepted, float64(st.accepted)/now.Sub(t0).Seconds(), st.throttled, st.errors)
					st.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	return st
}

// timePlaceholder stands for the send time in pre-encoded bodies of
// --times live; a timestamp of the same length replaces it at each POST.
const timePlaceholder = "2000-01-01T00:00:00.000Z"

func (b *bench) stampPlaceholder() string {
	if b.f.Times == "live" {
		return timePlaceholder
	}
	return ""
}

// stamp returns body with the send time in place of the placeholder
// (--times live), or body itself.
func (b *bench) stamp(body []byte) []byte {
	if b.f.Times != "live" {
		return body
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	return bytes.ReplaceAll(body, []byte(timePlaceholder), []byte(now))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// post sends one batch and returns the status, the accepted and rejected
// counts of a 2xx, and the Retry-After of a 429.
func (b *bench) post(ctx context.Context, body []byte) (status, accepted, rejected int, retry time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/v1/artifacts", bytes.NewReader(body))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+b.f.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return resp.StatusCode, 0, 0, retryAfter(resp.Header.Get("Retry-After")), nil
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, 0, 0, 0, nil
	}
	var r struct {
		Data struct {
			Accepted int `json:"accepted"`
			Rejected int `json:"rejected"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return resp.StatusCode, 0, 0, 0, fmt.Errorf("reply: %w", err)
	}
	return resp.StatusCode, r.Data.Accepted, r.Data.Rejected, 0, nil
}

// retryAfter reads a Retry-After header (seconds or an HTTP date); 1 s
// when absent or unreadable.
func retryAfter(h string) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return time.Second
}

// get fetches path with the token and decodes the envelope's data into
// dst (if not nil).
func (b *bench) get(ctx context.Context, path string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.f.Token)
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, data)
	}
	if dst == nil {
		return nil
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return err
	}
	return json.Unmarshal(env.Data, dst)
}

type artifactPage struct {
	Total     int64 `json:"total"`
	Artifacts []struct {
		Timestamp time.Time `json:"timestamp"`
	} `json:"artifacts"`
}

// total is the number of the org's stored (searchable) artifacts.
func (b *bench) total(ctx context.Context) (int64, error) {
	var p artifactPage
	err := b.get(ctx, "/v1/artifacts?limit=1", &p)
	return p.Total, err
}

// waitSearchable waits until the org's total reaches want or timeout
// passes; it returns the last total and the time it was read.
//
// The total is a COUNT over every stored artifact, which costs the server
// real work at millions of rows (0.1 s and more), so polling it often
// would slow down the very pipeline being measured. While /metrics shows
// queue messages not yet processed (vigil_queue_depth > 0; a message is
// acknowledged only after its artifacts are committed), only that cheap
// gauge is polled, every 250 ms; then the total, spaced so that counting
// takes at most a tenth of the server's time.
func (b *bench) waitSearchable(ctx context.Context, want int64, timeout time.Duration) (int64, time.Time, bool) {
	deadline := time.Now().Add(timeout)
	var got int64
	last := time.Now()
	useDepth := true
	for {
		if useDepth {
			m, err := b.scrape(ctx)
			depth, ok := m["vigil_queue_depth"]
			switch {
			case err != nil || !ok:
				useDepth = false // not a Vigil /metrics: count only
			case depth > 0:
				if time.Now().After(deadline) || ctx.Err() != nil {
					return got, last, false
				}
				sleepCtx(ctx, 250*time.Millisecond)
				continue
			}
		}
		start := time.Now()
		n, err := b.total(ctx)
		at := time.Now()
		if err == nil {
			got, last = n, at
			if n >= want {
				return n, at, true
			}
		}
		if at.After(deadline) || ctx.Err() != nil {
			return got, last, false
		}
		sleepCtx(ctx, max(250*time.Millisecond, 10*at.Sub(start)))
	}
}

// ---------------------------------------------------------------- metrics

// metricSet is a scrape of /metrics: full series name (with labels) → value.
type metricSet map[string]float64

// sum adds the series named name whose labels contain sel.
func (m metricSet) sum(name, sel string) float64 {
	var s float64
	for k, v := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n == name && strings.Contains(labels, sel) {
			s += v
		}
	}
	return s
}

// labelValues lists the values of label among the series named name.
func (m metricSet) labelValues(name, label string) []string {
	var out []string
	for k := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		if _, v, ok := strings.Cut(labels, label+`="`); ok {
			v, _, _ = strings.Cut(v, `"`)
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (b *bench) scrape(ctx context.Context) (metricSet, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	m := metricSet{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// sample is one scrape of the sampler.
type sample struct {
	at                          time.Time
	rss, heap, queue, processed float64
}

type sampler struct {
	stopc chan struct{}
	done  chan []sample
}

// startSampler scrapes /metrics every second until stopped.
func (b *bench) startSampler(ctx context.Context) *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan []sample, 1)}
	go func() {
		var out []sample
		t := time.NewTicker(time.Second)
		defer t.Stop()
		take := func() {
			if m, err := b.scrape(ctx); err == nil {
				out = append(out, sample{at: time.Now(), rss: m.sum("process_resident_memory_bytes", ""),
					heap:      m.sum("go_memstats_heap_inuse_bytes", ""),
					queue:     m.sum("vigil_queue_depth", ""),
					processed: m.sum("vigil_artifacts_parsed_total", "") + m.sum("vigil_artifacts_unparsed_total", "")})
			}
		}
		take()
		for {
			select {
			case <-s.stopc:
				take()
				s.done <- out
				return
			case <-t.C:
				take()
			}
		}
	}()
	return s
}

func (s *sampler) stop() []sample {
	close(s.stopc)
	return <-s.done
}

// buildSeries merges the per-second client counts and the server samples,
// from the first POST until everything was searchable.
func buildSeries(st *ingestStats, samples []sample, t0, end time.Time) []secondStats {
	n := int(end.Sub(t0)/time.Second) + 1
	out := make([]secondStats, n)
	for i := range out {
		out[i] = secondStats{Second: i, AckP99Ms: -1, Processed: -1, QueueDepth: -1, RSSBytes: -1}
		if s := st.seconds[i]; s != nil {
			out[i].Accepted, out[i].Throttled, out[i].Errors = s.Accepted, s.Throttled, s.Errors
			if len(s.lats) > 0 {
				out[i].AckP99Ms = quantile(s.lats, 0.99)
			}
		}
	}
	for k, s := range samples {
		i := int(s.at.Sub(t0) / time.Second)
		if i < 0 || i >= n {
			continue
		}
		out[i].RSSBytes, out[i].QueueDepth = s.rss, s.queue
		if k > 0 {
			dt := s.at.Sub(samples[k-1].at).Seconds()
			if dt > 0 {
				out[i].Processed = (s.processed - samples[k-1].processed) / dt
			}
		}
	}
	return out
}

// quantile returns the q-quantile (nearest rank) of xs in the order given;
// xs is sorted in place. 0 for no values.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// ---------------------------------------------------------------- S

// storageLimit measures S: batches of f.Batch of the same lines stored by
// sqlite.Store.InsertArtifacts (rows + FTS5 index, nothing else) into a
// fresh database, in a tight loop for min(duration, 20 s). Then the same
// with each artifact's parsed event (parsed beforehand, not timed), which
// the pipeline also stores.
func (b *bench) storageLimit(ctx context.Context) error {
	span := min(b.f.Duration, 20*time.Second)
	b.logf("storage limit: InsertArtifacts of batches of %d for %s", b.f.Batch, span)
	n, secs, err := b.insertLoop(ctx, span)
	if err != nil {
		return err
	}
	r := &storageReport{Artifacts: n, Seconds: secs, Rate: float64(n) / secs}
	if b.rep.Load.E2ERate > 0 {
		r.Ratio = b.rep.Load.E2ERate / r.Rate
	}
	b.rep.Storage = r
	return nil
}

// insertLoop stores batches into a fresh store for span of timed work and
// returns the artifacts stored and the seconds timed.
func (b *bench) insertLoop(ctx context.Context, span time.Duration) (int64, float64, error) {
	dir, err := os.MkdirTemp("", "vigil-bench-s-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "s.db"), sqlite.Options{FsyncAlways: b.f.Fsync == "always"})
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	var n int64
	var timed time.Duration
	next := 0
	for timed < span && ctx.Err() == nil {
		start := time.Now()
		arts := make([]*vigil.Artifact, b.f.Batch)
		for k := range arts {
			j := next % len(b.lines)
			next++
			l := b.lines[j]
			ts := start
			if b.times != nil {
				ts = b.times[j]
			}
			arts[k] = &vigil.Artifact{ID: vigil.NewID(), OrgID: "bench", Source: l.Source, Raw: l.Raw,
				Timestamp: ts, CreatedAt: start, Metadata: json.RawMessage("{}")}
		}
		if err := st.InsertArtifacts(ctx, "bench", arts); err != nil {
			return 0, 0, err
		}
		timed += time.Since(start)
		n += int64(len(arts))
	}
	return n, timed.Seconds(), ctx.Err()
}

// ---------------------------------------------------------------- search

// searchQuery is one class of the search phase.
type searchQuery struct {
	name, query, source string
	timed               bool
}

func (b *bench) searchQueries() []searchQuery {
	ip := b.frequentIP("")
	fwWord := "udp"
	return []searchQuery{
		{name: "list, no query", query: ""},
		{name: "single term", query: "sshd"},
		{name: "single IP", query: ip},
		{name: "two words", query: "failed password"},
		{name: "phrase + time filter", query: `"authentication failure"`, timed: true},
		{name: "prefix", query: "fail*"},
		{name: "OR", query: "sshd OR named"},
		{name: "negation", query: "sshd -failed"},
		{name: "term + source filter", query: fwWord, source: "firewall"},
	}
}

var ipv4RE = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)

// frequentIP returns the IPv4 address found in the most lines (of source,
// if given), so that the IP query has many matches in any data set.
func (b *bench) frequentIP(source string) string {
	counts := map[string]int{}
	for _, l := range b.lines {
		if source != "" && l.Source != source {
			continue
		}
		seen := map[string]bool{}
		for _, ip := range ipv4RE.FindAllString(l.Raw, -1) {
			if !seen[ip] && !strings.HasPrefix(ip, "0.") && !strings.HasPrefix(ip, "127.") {
				seen[ip] = true
				counts[ip]++
			}
		}
	}
	best, n := "203.0.113.7", 0
	for ip, c := range counts {
		if c > n || (c == n && ip < best) {
			best, n = ip, c
		}
	}
	return best
}

// searchPhase makes sure f.SearchArtifacts are stored, posting more if
// needed, then times f.SearchRequests sequential requests of each query
// class.
func (b *bench) searchPhase(ctx context.Context) error {
	r := &searchReport{}
	b.rep.Search = r
	smp := b.startSampler(ctx)
	have, err := b.total(ctx)
	if err != nil {
		return err
	}
	if need := int64(b.f.SearchArtifacts) - have; need > 0 {
		b.logf("search phase: posting %d more artifacts to reach %d", need, b.f.SearchArtifacts)
		t0 := time.Now()
		st := b.ingest(ctx, t0, time.Time{}, need, true)
		got, at, ok := b.waitSearchable(ctx, have+st.accepted, b.f.SearchableTimeout)
		r.PreloadAdded, r.PreloadSeconds = st.accepted, at.Sub(t0).Seconds()
		r.PreloadRate = float64(st.accepted) / r.PreloadSeconds
		if !ok {
			b.problem("search preload: not all searchable: %d of %d", got, have+st.accepted)
		}
		if st.errors > 0 {
			b.problem("search preload: %d requests failed: %v", st.errors, st.kinds)
		}
		have = got
	}
	r.Stored = have
	b.logf("search phase: %d artifacts stored; %d requests per class", have, b.f.SearchRequests)
	// Expected totals are known when this run stored every artifact of
	// the org and every accepted batch was accepted whole.
	exact := b.rep.Load.TotalBefore == 0 && !b.partial.Load()
	for _, q := range b.searchQueries() {
		v := url.Values{}
		if q.query != "" {
			v.Set("query", q.query)
		}
		if q.source != "" {
			v.Set("source", q.source)
		}
		if q.timed {
			// A window of 30 days ending just after the newest match.
			var p artifactPage
			if err := b.get(ctx, "/v1/artifacts?limit=1&"+v.Encode(), &p); err != nil {
				return err
			}
			end := time.Now()
			if len(p.Artifacts) > 0 {
				end = p.Artifacts[0].Timestamp.Add(time.Minute)
			}
			v.Set("start", end.Add(-30*24*time.Hour).UTC().Format(time.RFC3339))
			v.Set("end", end.UTC().Format(time.RFC3339))
		}
		c := searchClass{Name: q.name, Params: v.Encode(), Stable: true}
		var lats []float64
		for i := 0; i < b.f.SearchRequests && ctx.Err() == nil; i++ {
			var p artifactPage
			start := time.Now()
			err := b.get(ctx, "/v1/artifacts?"+v.Encode(), &p)
			ms := float64(time.Since(start)) / float64(time.Millisecond)
			c.Requests++
			if err != nil {
				c.Errors++
				if c.Errors == 1 {
					b.problem("search %s: %v", q.name, err)
				}
				continue
			}
			lats = append(lats, ms)
			if i > 0 && p.Total != c.Total {
				c.Stable = false
			}
			c.Total = p.Total
		}
		c.P50Ms, c.P99Ms, c.MaxMs = quantile(lats, 0.5), quantile(lats, 0.99), quantile(lats, 1)
		if exact && !q.timed {
			if want, err := b.expectedTotal(q); err == nil {
				c.Expected = &want
				if want != c.Total {
					b.problem("search %s: total %d, but %d of the artifacts posted match", q.name, c.Total, want)
				}
			}
		}
		if !c.Stable {
			b.problem("search %s: total changed between identical requests", q.name)
		}
		r.Classes = append(r.Classes, c)
	}
	for _, s := range smp.stop() {
		r.RSSMaxBytes = math.Max(r.RSSMaxBytes, s.rss)
	}
	return nil
}

// expectedTotal counts the accepted artifacts matching q, matching each
// line with the query language's own parser and tokenizer.
func (b *bench) expectedTotal(q searchQuery) (int64, error) {
	parsed, err := search.Parse(q.query)
	if err != nil {
		return 0, err
	}
	perLine := make([]int64, len(b.lines))
	for i, n := range b.sent {
		if n == 0 {
			continue
		}
		times := n / int64(b.spans[i][1])
		for k := 0; k < b.spans[i][1]; k++ {
			perLine[(b.spans[i][0]+k)%len(b.lines)] += times
		}
	}
	var total int64
	for i, l := range b.lines {
		if perLine[i] == 0 || (q.source != "" && l.Source != q.source) {
			continue
		}
		if matches(parsed, search.Tokens(l.Raw)) {
			total += perLine[i]
		}
	}
	return total, nil
}

// matches reports whether a line of tokens matches q: some AND-group has
// all its terms, and no excluded term occurs.
func matches(q *search.Query, toks []string) bool {
	for _, t := range q.Not {
		if hasTerm(toks, t) {
			return false
		}
	}
	if len(q.Any) == 0 {
		return true
	}
	for _, g := range q.Any {
		all := true
		for _, t := range g {
			if !hasTerm(toks, t) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasTerm(toks []string, t search.Term) bool {
	n := len(t.Tokens)
	for i := 0; i+n <= len(toks); i++ {
		ok := true
		for k, want := range t.Tokens {
			got := toks[i+k]
			if k == n-1 && t.Prefix {
				ok = strings.HasPrefix(got, want)
			} else {
				ok = got == want
			}
			if !ok {
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------- report

func machine() machineInfo {
	m := machineInfo{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			m.Build = rev[:min(12, len(rev))]
			if modified == "true" {
				m.Build += " + uncommitted changes"
			}
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "MemTotal" {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					m.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
				break
			}
		}
	}
	return m
}

// hostBusy returns the CPU seconds all processes of the host have used
// (/proc/stat, at USER_HZ 100), or -1 where that is not readable.
func hostBusy() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return -1
	}
	var busy float64
	for i, v := range f[1:] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return -1
		}
		// user nice system idle iowait irq softirq steal guest guest_nice;
		// guest time is already counted in user.
		if i != 3 && i != 4 && i < 8 {
			busy += n
		}
	}
	return busy / 100
}

// loadAvg returns the 1, 5 and 15 minute load averages of the host.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func sourcesSummary(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
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
	fmt.Fprintln(w, "second,accepted_per_s,ack_p99_ms,http_429,errors,processed_per_s,queue_depth,rss_mib")
	// opt writes v/scale rounded to digits decimals; "" for a missing value (< 0).
	opt := func(v, scale float64, digits int) string {
		if v < 0 {
			return ""
		}
		return strconv.FormatFloat(v/scale, 'f', digits, 64)
	}
	for _, s := range b.rep.Series {
		_, err := fmt.Fprintf(w, "%d,%d,%s,%d,%d,%s,%s,%s\n", s.Second, s.Accepted, opt(s.AckP99Ms, 1, 1),
			s.Throttled, s.Errors, opt(s.Processed, 1, 0), opt(s.QueueDepth, 1, 0), opt(s.RSSBytes, 1<<20, 1))
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
	p("  target    %s", r.Target)
	p("  lines     %d (%s), avg %.0f bytes; body avg %.0f KiB", r.Settings.Lines, sourcesSummary(r.Settings.LinesBySource),
		r.Settings.AvgLineBytes, r.Settings.AvgBodyBytes/1024)
	p("  files     %s", strings.Join(r.Settings.Files, " "))
	p("  times     %s", r.Settings.Times)
	if l := r.Load; l != nil {
		p("")
		p("load: %d clients × %d artifacts for %s", b.f.Clients, b.f.Batch, b.f.Duration)
		p("  requests        %d", l.Requests)
		p("  accepted        %d  (%.0f/s acked over %.1fs)", l.Accepted, l.AckRate, l.LoadSeconds)
		p("  rejected        %d", l.Rejected)
		p("  429s            %d", l.Throttled)
		p("  errors          %d %v", l.Errors, l.ErrorKinds)
		p("  ack latency     p50 %.1f ms, p99 %.1f ms, max %.1f ms", l.AckP50Ms, l.AckP99Ms, l.AckMaxMs)
		if l.Searchable {
			p("  searchable      all %d accepted artifacts, %.1fs after the first POST (drain %.1fs after the last ack)", l.Accepted, l.SearchableSecs, l.DrainSeconds)
		} else {
			p("  searchable      NOT ALL: total %d, expected %d", l.TotalAfter, l.TotalBefore+l.Accepted)
		}
		p("  end-to-end      %.0f artifacts/s (accepted / first POST → all searchable)", l.E2ERate)
		p("  server RSS      max %s, end %s (Go heap in use: max %s)", mib(l.RSSMaxBytes), mib(l.RSSEndBytes), mib(l.HeapMaxBytes))
		p("  server CPU      %.1f s = %.2f cores over the run, %.0f artifacts per CPU-second", l.CPUSeconds, l.CPUSeconds/math.Max(l.SearchableSecs, 1e-9), l.ArtifactsPerCPUs)
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
		if b.f.URL == "" {
			p("  (embedded: RSS and CPU are of this process, the bench clients included)")
		}
	}
	if s := r.Storage; s != nil {
		p("")
		p("storage limit S (sqlite.Store.InsertArtifacts, batches of %d, rows + FTS5 only)", b.f.Batch)
		p("  S               %.0f artifacts/s (%d in %.1fs)", s.Rate, s.Artifacts, s.Seconds)
		p("  ratio           end-to-end / S = %.2f", s.Ratio)
	}
	if s := r.Search; s != nil {
		p("")
		p("search: %d artifacts stored", s.Stored)
		if s.PreloadAdded > 0 {
			p("  preload         %d more in %.1fs (%.0f/s end to end)", s.PreloadAdded, s.PreloadSeconds, s.PreloadRate)
		}
		p("  RSS max         %s", mib(s.RSSMaxBytes))
		p("  %-22s %9s %9s %9s %10s %10s  %s", "class", "p50 ms", "p99 ms", "max ms", "total", "expected", "params")
		for _, c := range s.Classes {
			exp := "-"
			if c.Expected != nil {
				exp = strconv.FormatInt(*c.Expected, 10)
			}
			p("  %-22s %9.1f %9.1f %9.1f %10d %10s  %s", c.Name, c.P50Ms, c.P99Ms, c.MaxMs, c.Total, exp, c.Params)
		}
	}
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
