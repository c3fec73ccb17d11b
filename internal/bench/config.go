package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/vigil-soc/vigil"
)

// Config is the settings of one run: the flags of vigil bench.
type Config struct {
	URL, Token, Org string
	// Where the server's /metrics are (--url's server: its --metrics-addr;
	// default the API's address, as with --metrics-addr api) and the
	// bearer token they need.
	MetricsURL, MetricsToken string
	Clients, Batch           int
	Duration                 time.Duration
	// Artifacts, when positive, ends the load once this many artifacts
	// are accepted instead of after Duration: the same work for each
	// --via, so that their end-to-end rates compare.
	Artifacts         int
	Files             string
	Times             string
	Via               string
	StorageLimit      bool
	Search            bool
	SearchArtifacts   int
	SearchRequests    int
	SearchClasses     string
	CSV, PNG, JSON    string
	IngestWait        time.Duration
	Fsync             string
	ServeArgs         string
	SearchableTimeout time.Duration
	CPUProfile        string
	// CPUProfileEvery, with CPUProfile, cuts the CPU profile every this
	// long: CPUProfile.1, .2, … instead of one file.
	CPUProfileEvery time.Duration
	MemProfile      string
	// MemProfileEvery, with MemProfile, also writes a heap profile every
	// this long during the load, after a collection: MemProfile.1, .2, …
	MemProfileEvery time.Duration
	// DatabaseURL is the PostgreSQL of the server under test: the
	// embedded server's --database-url, or --url's server's database. S
	// is then measured there (storage_pg.go), not in SQLite.
	DatabaseURL string
	// NATSURL is the embedded server's --nats-url.
	NATSURL string
	// ArtifactsURL and ArtifactsStorage are the embedded server's
	// VictoriaLogs cluster (its --artifacts-url and --artifacts-storage);
	// --fill then loads the artifacts there. ArtifactsData lists the
	// storage nodes' data dirs, whose bytes the disk report counts.
	ArtifactsURL, ArtifactsStorage, ArtifactsData string
	// CPUPIDs lists processes besides this one (PostgreSQL's postmaster,
	// nats-server, the victoria-logs nodes) whose CPU, with their
	// children's, the load's CPU figure adds (cpu.go).
	CPUPIDs string
	// DataDir is the embedded server's data dir, kept after the run
	// (default: a temporary one, removed).
	DataDir string
	// Fill stores artifacts directly into DataDir's database, before the
	// server starts, until the org holds this many (fill.go).
	Fill      int
	FillFiles string
	FillDays  int
	// StarterRules false turns every starter Sigma rule of the org off
	// before the load (through the API), to measure what they cost.
	StarterRules bool
	// Webhook, when set, subscribes the org to every webhook event type
	// at this URL before the load (a dead receiver shows what a receiver
	// that is down costs ingest).
	Webhook string
	// GrowthPNG, when set, is all a run does: a plot of the reports of
	// GrowthFrom against the artifacts each had stored.
	GrowthPNG, GrowthFrom string
}

// hiddenFlags are left out of the usage text.
var hiddenFlags = map[string]bool{"cpuprofile": true, "cpuprofile-every": true, "memprofile": true, "memprofile-every": true}

// FlagSet returns the flag set "bench" with c's fields as its flags, at
// their defaults, and a usage text that leaves the profiling flags out;
// it writes its messages to out.
func (c *Config) FlagSet(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.URL, "url", "", "base URL of a running server (default: start an embedded one in this process, in a temporary data dir)")
	fs.StringVar(&c.Token, "token", "", "bearer token for --url (default: $VIGIL_TOKEN); minted for the embedded server")
	fs.StringVar(&c.MetricsURL, "metrics-url", "", "base URL of --url's /metrics, the server's --metrics-addr (e.g. http://127.0.0.1:9464; default: --url)")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token of --metrics-url, the server's --metrics-token (default: $VIGIL_METRICS_TOKEN)")
	fs.StringVar(&c.Org, "org", "bench", "organization of the embedded server's token")
	fs.IntVar(&c.Clients, "clients", 4, "concurrent clients posting batches")
	fs.IntVar(&c.Batch, "batch", 1000, "artifacts per POST")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "how long the clients post")
	fs.IntVar(&c.Artifacts, "artifacts", 0, "instead of --duration, post until this many artifacts are accepted (the same work for each --via, so that their end-to-end rates compare)")
	fs.StringVar(&c.Files, "files", "", "comma-separated log files or directories to replay, source = the file's directory name (or source=path); "+
		"\"synthetic\" for generated lines; \"internet-zipf\" or \"internet-unique\" for an internet-facing host's scan traffic, "+
		"its source addresses Zipf-distributed over 1 M or new on every line; \"internet-edge\" for internet-unique with 3 % Suricata alerts "+
		"of 32 real ET signatures from the same scanners and 13 planted sources that do worse (brute force, a login after it, a severity-1 alert, "+
		"a threat-intel hit), the report counting the incidents and those planted sources' own; \"windows\" for the records of the real Windows recordings "+
		"(../shared/datasets/windows/evtx, as vigil import sends them) (default: ../shared/datasets/{auth,dns,firewall,suricata} if found, else synthetic)")
	fs.StringVar(&c.Times, "times", "live", "artifact timestamps: \"live\" stamps each batch with the time it is sent, as a sensor streaming "+
		"its logs would; \"original\" sends none, so each artifact keeps the event time parsed from its line (2011–2026 in the datasets)")
	fs.StringVar(&c.Via, "via", ViaHTTP, "how the lines are sent: \"http\" (POST /v1/artifacts), \"elastic-bulk\" (the Elasticsearch bulk endpoint, "+
		"the source as the index) or \"syslog-tcp\" (the embedded server's syslog TCP listeners, one per source, octet counting; --clients connections each)")
	fs.BoolVar(&c.StorageLimit, "storage-limit", true, "also measure S: InsertArtifacts of the same lines into a fresh SQLite store in a tight loop "+
		"(with --database-url: S_PG, COPY of the same rows into the store's tables and indexes in a scratch schema of that database, dropped after)")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "PostgreSQL of the server under test (postgres://…): the embedded server's --database-url, "+
		"or the database of --url's server; S is then measured there (see --storage-limit)")
	fs.StringVar(&c.NATSURL, "nats-url", "", "the embedded server's --nats-url, an external NATS JetStream (ignored with --url)")
	fs.StringVar(&c.ArtifactsURL, "artifacts-url", "", "the embedded server's --artifacts-url, a VictoriaLogs cluster's front (needs --database-url and --artifacts-storage); "+
		"--fill then loads the artifacts into the cluster")
	fs.StringVar(&c.ArtifactsStorage, "artifacts-storage", "", "the embedded server's --artifacts-storage, the VictoriaLogs storage nodes")
	fs.StringVar(&c.ArtifactsData, "artifacts-data", "", "comma-separated data dirs (-storageDataPath) of the VictoriaLogs storage nodes on this machine: the disk report counts their bytes")
	fs.StringVar(&c.CPUPIDs, "cpu-pids", "", "comma-separated PIDs of the other processes the server uses (PostgreSQL's postmaster, nats-server, victoria-logs nodes): "+
		"their CPU and their children's is added to the load's, for artifacts per CPU-second of all of them")
	fs.BoolVar(&c.Search, "search", false, "run the search phase after the load")
	fs.IntVar(&c.SearchArtifacts, "search-artifacts", 1000000, "artifacts stored before the search phase (more are posted if needed)")
	fs.IntVar(&c.SearchRequests, "search-requests", 200, "sequential requests per query class in the search phase")
	fs.StringVar(&c.SearchClasses, "search-classes", "", "comma-separated names of the query classes to run (default: all), e.g. \"single term,phrase + 24 h filter\"")
	fs.StringVar(&c.CSV, "csv", "", "write the per-second time series to this CSV file")
	fs.StringVar(&c.PNG, "png", "", "write a plot of throughput and ack p99 over time to this PNG file")
	fs.StringVar(&c.JSON, "json", "", "write the report as JSON to this file (\"-\": to stdout instead of the text report)")
	fs.DurationVar(&c.IngestWait, "ingest-wait", time.Second, "--ingest-wait of the embedded server, default its own (0: reply once durable, without waiting for the workers)")
	fs.StringVar(&c.Fsync, "fsync", "deferred", "--fsync of the embedded server and of the storage-limit store")
	fs.StringVar(&c.ServeArgs, "serve-args", "", "extra flags for the embedded server, space-separated (e.g. \"--workers 4\")")
	fs.DurationVar(&c.SearchableTimeout, "searchable-timeout", 30*time.Minute, "how long to wait for every accepted artifact to become searchable")
	fs.BoolVar(&c.StarterRules, "starter-rules", true, "false: turn every starter Sigma rule of the org off before the load (POST /v1/starter-rules/{id}/disable), to measure their cost")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the load phase (first POST until all searchable) to this file")
	fs.DurationVar(&c.CPUProfileEvery, "cpuprofile-every", 0, "with --cpuprofile, cut the profile every this long: --cpuprofile's name + .1, .2, … (compare a long run's first minutes with its last)")
	fs.StringVar(&c.DataDir, "data-dir", "", "data dir of the embedded server, kept after the run (default: a temporary one, removed); with --fill, reused by later runs")
	fs.IntVar(&c.Fill, "fill", 0, "before the embedded server starts, store artifacts directly (sqlite InsertArtifacts, as the pipeline's store stage does; with --database-url, PostgreSQL COPY of the same rows) until the org holds this many, "+
		"timestamps spread evenly over --fill-days ending now; then the load runs through the real pipeline on top (0: no fill)")
	fs.StringVar(&c.FillFiles, "fill-files", "mix", "lines of --fill, as --files takes them; \"mix\": the dataset replay and internet-zipf together")
	fs.IntVar(&c.FillDays, "fill-days", 30, "the days the filled artifacts' timestamps span")
	fs.StringVar(&c.Webhook, "webhook", "", "before the load, subscribe the org to every webhook event type at this URL, and count its deliveries after "+
		"(a local receiver needs --serve-args \"--webhook-allow-http-hosts 127.0.0.1 --webhook-allow-networks 127.0.0.0/8\")")
	fs.StringVar(&c.GrowthPNG, "growth-png", "", "instead of a run: plot the --json reports of --growth-from (rate, per CPU-second, search p99) against the artifacts stored, to this PNG file")
	fs.StringVar(&c.GrowthFrom, "growth-from", "", "the reports of --growth-png: label=report.json or label=load.json+search.json (the search phase of a later run), comma-separated (one line per label)")
	fs.StringVar(&c.MemProfile, "memprofile", "", "write a heap profile taken when the clients stop (the queue at its fullest) to this file")
	fs.DurationVar(&c.MemProfileEvery, "memprofile-every", 0, "with --memprofile, also write a heap profile every this long during the load (after a collection), to --memprofile's name + .1, .2, …")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: vigil bench [flags]\n\n")
		fs.VisitAll(func(fl *flag.Flag) {
			if hiddenFlags[fl.Name] {
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
	return fs
}

// Validate reports the first setting out of range.
func (c *Config) Validate() error {
	switch {
	case c.Clients < 1:
		return errors.New("--clients must be at least 1")
	case c.Batch < 1 || c.Batch > vigil.MaxBatchItems:
		return fmt.Errorf("--batch must be 1..%d", vigil.MaxBatchItems)
	case c.Duration <= 0:
		return errors.New("--duration must be positive")
	case c.Artifacts < 0:
		return errors.New("--artifacts must not be negative")
	case c.URL != "" && c.Token == "":
		return errors.New("--url needs --token (or VIGIL_TOKEN)")
	case c.Times != "live" && c.Times != "original":
		return fmt.Errorf("--times must be live or original, not %q", c.Times)
	case c.Via != ViaHTTP && c.Via != ViaElastic && c.Via != ViaSyslog:
		return fmt.Errorf("--via must be %s, %s or %s, not %q", ViaHTTP, ViaElastic, ViaSyslog, c.Via)
	case c.Via == ViaSyslog && c.URL != "":
		return errors.New("--via syslog-tcp runs against the embedded server only (it opens the listeners), not --url")
	case c.Fsync != "deferred" && c.Fsync != "always":
		return fmt.Errorf("--fsync must be deferred or always, not %q", c.Fsync)
	case c.Fill < 0:
		return errors.New("--fill must not be negative")
	case c.Fill > 0 && c.URL != "":
		return errors.New("--fill stores into the embedded server's data dir: not with --url")
	case c.FillDays < 1:
		return errors.New("--fill-days must be at least 1")
	case c.ArtifactsURL != "" && (c.DatabaseURL == "" || c.ArtifactsStorage == ""):
		return errors.New("--artifacts-url needs --database-url and --artifacts-storage")
	case c.ArtifactsURL != "" && c.URL != "":
		return errors.New("--artifacts-url is the embedded server's: not with --url")
	case c.CPUProfileEvery < 0 || c.CPUProfileEvery > 0 && c.CPUProfile == "":
		return errors.New("--cpuprofile-every needs --cpuprofile and must not be negative")
	case c.MemProfileEvery < 0 || c.MemProfileEvery > 0 && c.MemProfile == "":
		return errors.New("--memprofile-every needs --memprofile and must not be negative")
	case c.DataDir != "" && c.URL != "":
		return errors.New("--data-dir is the embedded server's: not with --url")
	}
	return nil
}

// loadSpan says what ends the load: "for 60s", or "until 400000 are
// accepted".
func (c *Config) loadSpan() string {
	if c.Artifacts > 0 {
		return fmt.Sprintf("until %d are accepted", c.Artifacts)
	}
	return "for " + c.Duration.String()
}
