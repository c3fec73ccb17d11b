package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/console"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/syslog"
	"github.com/vigil-soc/vigil/internal/vlogs"
	"github.com/vigil-soc/vigil/internal/webhook"
)

// config is every setting of the service; flags first, then VIGIL_<FLAG>
// environment variables, then defaults.
type config struct {
	Addr         string
	MetricsAddr  string // serve: own listener, "api" or "" (off); a worker's are on Addr
	MetricsToken string
	DataDir      string
	DatabaseURL  string
	NATSURL      string
	// ArtifactsURL and ArtifactsStorage name a VictoriaLogs cluster that
	// keeps the artifacts (internal/vlogs): its front and its storage
	// nodes.
	ArtifactsURL     string
	ArtifactsStorage string
	JWTSecret        string
	JWTJWKSURL       string
	JWTIssuer        string
	JWTAudience      string
	LogLevel         string
	AccessLog        bool
	Fsync            string
	CorrWindow       time.Duration
	HubLimit         int
	Workers          int
	MaxQueueBytes    int64
	MemoryLimit      int64
	MaxPending       int
	IngestWait       time.Duration
	MaxDeliver       int
	AckWait          time.Duration
	RetentionDays    int
	// OrgRetentionDays overrides RetentionDays for named orgs
	// ("org=days,…"), in a VictoriaLogs cluster only (internal/vlogs).
	OrgRetentionDays string
	// AuditRetentionDays is how long audit entries are kept (0: forever).
	AuditRetentionDays int
	QueueReplicas      int
	QueueName          string

	// Bounds on the work of one API request (docs/security.md).
	RequestTimeout   time.Duration
	SearchTimeout    time.Duration
	MaxSearches      int
	MaxOrgSearches   int
	BodyBudget       int64
	ClientBodyBudget int64
	BodyMinRate      int64

	GeoIPCityDB   string
	GeoIPASNDB    string
	DNSServers    string
	RDAPURL       string
	IntelDir      string
	IntelURLs     string
	IntelRefresh  time.Duration
	EnrichmentOff bool
	DetectionOff  bool
	DetectMemory  int
	Detect        detect.Config

	// Where webhook deliveries may go (docs/events.md, Webhooks).
	WebhookAllowHTTPHosts string
	WebhookAllowNetworks  string
	WebhookRetryBase      time.Duration

	// Syslog listeners of vigil serve (docs/ingest.md).
	SyslogListen syslogListen

	// OIDC sign-in of the console (vigil serve; docs/console.md).
	OIDCIssuer       string
	OIDCClientID     string
	OIDCClientSecret string
	OIDCRedirectURL  string
	OIDCScopes       string
	OIDCName         string

	// MetricsAddrGiven: --metrics-addr was set (flag or environment), so
	// failing to listen there stops the start; the default only warns.
	MetricsAddrGiven bool
}

// flags registers the shared flags on fs, with the API's listen address
// as the default --addr.
func (c *config) flags(fs *flag.FlagSet) {
	c.flagsAddr(fs, "127.0.0.1:8080", "listen address of the API")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9464", "listen address of GET /metrics, which counts the work of every org: "+
		"\"api\" serves it on --addr with the API instead, \"\" not at all")
}

// flagsAddr registers the shared flags with a given --addr default.
func (c *config) flagsAddr(fs *flag.FlagSet, addr, usage string) {
	fs.StringVar(&c.Addr, "addr", addr, usage)
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token that GET /metrics requires (at least 16 bytes; default: none)")
	c.dataDirFlag(fs)
	c.databaseFlag(fs)
	fs.StringVar(&c.NATSURL, "nats-url", "", "nats://… to use an external NATS JetStream instead of the embedded one")
	fs.StringVar(&c.ArtifactsURL, "artifacts-url", "", "http(s)://… of a VictoriaLogs cluster's front (victoria-logs -storageNode=…) to keep and search artifacts there "+
		"instead of in the database (needs --database-url and --artifacts-storage)")
	fs.StringVar(&c.ArtifactsStorage, "artifacts-storage", "", "comma-separated http(s)://… of the VictoriaLogs storage nodes behind --artifacts-url: "+
		"artifacts are written to them and made durable there before a batch is acknowledged")
	c.secretFlag(fs)
	fs.StringVar(&c.JWTJWKSURL, "jwt-jwks-url", "", "JWKS URL of an identity provider (RS256/ES256/EdDSA)")
	fs.StringVar(&c.JWTIssuer, "jwt-issuer", "", "required iss claim, if set")
	fs.StringVar(&c.JWTAudience, "jwt-audience", "", "required aud claim, if set")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&c.AccessLog, "access-log", true, "log one line per API request at info (method, path, status, duration, org, request id; never the token or body)")
	fs.StringVar(&c.Fsync, "fsync", "deferred", "deferred (survives a process crash) or always (survives power loss, slower)")
	fs.DurationVar(&c.CorrWindow, "correlation-window", time.Hour, "how long an open incident keeps taking related observations")
	fs.IntVar(&c.HubLimit, "hub-limit", 25, "open incidents a key node may join before it counts as context only")
	fs.IntVar(&c.Workers, "workers", 2, "pipeline worker goroutines in this process (serve: 0 runs the API only)")
	fs.DurationVar(&c.AckWait, "ack-wait", 30*time.Second, "how long a fetched queue message held by a worker that stopped answering (died, cut off) waits before it is redelivered to another; a live worker keeps its messages however long they take")
	c.MaxQueueBytes, c.MemoryLimit = 1<<30, 384<<20
	fs.Var(byteSize{&c.MaxQueueBytes}, "max-queue-bytes", "queue size above which ingest answers 429 (bytes, or with a unit: 2GiB, 500MB)")
	fs.Var(byteSize{&c.MemoryLimit}, "memory-limit", "soft limit of the Go heap (runtime/debug.SetMemoryLimit; GOMEMLIMIT, if set, wins; 0: none): "+
		"the garbage collector works harder near it instead of letting the heap double (bytes, or with a unit: 512MiB)")
	fs.IntVar(&c.MaxPending, "max-pending", 2000, "unprocessed queue messages (batches) above which ingest answers 429")
	fs.DurationVar(&c.IngestWait, "ingest-wait", time.Second, "how long POST /v1/artifacts waits for the workers to store a durable batch before replying (0: reply once durable)")
	fs.StringVar(&c.GeoIPCityDB, "geoip-city-db", "", "MaxMind City or Country .mmdb (default: found in <data-dir>/geoip/)")
	fs.StringVar(&c.GeoIPASNDB, "geoip-asn-db", "", "MaxMind ASN .mmdb (default: found in <data-dir>/geoip/)")
	fs.StringVar(&c.DNSServers, "dns-servers", "", "comma-separated resolvers for PTR/A look-ups (default: /etc/resolv.conf)")
	fs.StringVar(&c.RDAPURL, "rdap-url", "", "RDAP base URL (default: the IANA bootstrap registries)")
	fs.StringVar(&c.IntelDir, "threat-intel-dir", "", "directory of threat-intel feed files (lists, CSV, STIX 2.1, MISP)")
	fs.StringVar(&c.IntelURLs, "threat-intel-urls", "", "comma-separated feed URLs, refreshed every --threat-intel-refresh")
	fs.DurationVar(&c.IntelRefresh, "threat-intel-refresh", time.Hour, "refresh interval of feed URLs")
	fs.Func("detect", "a detection threshold as name=value, repeatable (e.g. brute_force_count=10, port_scan_span=2m, local_sources=ignore)", c.Detect.Set)
	fs.BoolVar(&c.EnrichmentOff, "no-enrichment", false, "turn the enrichment stage off in this process")
	fs.BoolVar(&c.DetectionOff, "no-detection", false, "turn detection, correlation and classification off in this process's workers "+
		"(artifacts are stored, parsed and enriched only; to measure what detection costs)")
	fs.IntVar(&c.DetectMemory, "detect-memory", 0, "embedded SQLite: detection signals counted in memory until their key may fire, so that keys that never fire cost no database writes "+
		"(0: 100000, under 200 bytes each; beyond it, keys of one signal go to files in vigil.db-tally/, 48 times as many at most, 16 bytes of memory each; -1: record every signal in the database)")
	fs.IntVar(&c.QueueReplicas, "queue-replicas", 1, "replicas of the queue streams on a NATS cluster (3 for R3)")
	fs.StringVar(&c.QueueName, "queue-name", queue.DefaultName, "namespace of the queue's streams, subjects and consumer on NATS: deployments sharing one NATS need one each "+
		"(1 to 32 letters, digits, - or _; the default keeps the names VIGIL_ARTIFACTS etc.)")
	fs.IntVar(&c.RetentionDays, "retention-days", 0, "delete artifacts older than this many days (0: keep forever); PostgreSQL drops whole monthly partitions, "+
		"a VictoriaLogs cluster (--artifacts-url) deletes each org's to the second")
	fs.StringVar(&c.OrgRetentionDays, "org-retention-days", "", "with --artifacts-url: the retention of named orgs, overriding --retention-days, "+
		"as comma-separated org=days (0: keep forever), e.g. acme=30,globex=365")
	fs.IntVar(&c.AuditRetentionDays, "audit-retention-days", 365, "delete audit log entries older than this many days, hourly (0: keep forever)")
	fs.IntVar(&c.MaxDeliver, "max-deliver", 5, "tries of a failing queue message before it goes to the dead-letter stream")
	fs.StringVar(&c.WebhookAllowHTTPHosts, "webhook-allow-http-hosts", "", "comma-separated hosts webhooks may reach over plain http:// (default: https:// only)")
	fs.StringVar(&c.WebhookAllowNetworks, "webhook-allow-networks", "", "comma-separated networks webhooks may reach although refused by default "+
		"(loopback, private, link-local, metadata addresses), e.g. 127.0.0.0/8,10.1.0.0/16")
	fs.DurationVar(&c.WebhookRetryBase, "webhook-retry-base", webhook.DefaultRetryBase, "wait before a failed webhook delivery's second attempt; "+
		"each further failure doubles it, up to an hour, with jitter, for 24 h")
	c.boundFlags(fs)
}

// boundFlags registers the bounds on the work of one API request.
func (c *config) boundFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 30*time.Second, "deadline of every API request but ingest and searches: the database work is stopped and the request answered 503")
	fs.DurationVar(&c.SearchTimeout, "search-timeout", 10*time.Second, "deadline of an artifact search (GET /v1/artifacts): the query is stopped and answered 503")
	fs.IntVar(&c.MaxSearches, "max-searches", 0, "artifact searches this process runs at once, on database connections of their own so that other reads never wait for them (0: the number of CPUs, at least 2; PostgreSQL: half the pool)")
	fs.IntVar(&c.MaxOrgSearches, "max-org-searches", 2, "artifact searches and whole-artifact reads one org may run at once in this process; more are answered 429")
	c.BodyBudget, c.ClientBodyBudget, c.BodyMinRate = 64<<20, 24<<20, 128<<10
	fs.Var(byteSize{&c.BodyBudget}, "body-budget", "bytes of request bodies the API holds at once (read or being processed), with what the Elasticsearch bulk endpoint decodes from them; beyond: 503 before the body is read (at least 10MiB)")
	fs.Var(byteSize{&c.ClientBodyBudget}, "client-body-budget", "bytes of request bodies (and bulk decoding) one remote address, and one org, may have in flight; beyond: 429 (at least 10MiB; behind a proxy every client shares its address)")
	fs.Var(byteSize{&c.BodyMinRate}, "body-min-rate", "bytes per second a request body must arrive at, after 10 s of grace; a slower one is answered 408")
}

// newFlagSet returns the flag set of a subcommand, whose -h prints a usage
// line, what the command does, and its own flags only.
func newFlagSet(name, does string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: vigil %s [flags]\n\n%s\n\nflags (each also read from VIGIL_<FLAG>):\n", name, does)
		fs.PrintDefaults()
	}
	return fs
}

// dataDirFlag, databaseFlag and secretFlag are the flags that token and
// migrate share with serve; each subcommand registers only what it uses.
func (c *config) dataDirFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./vigil-data", "directory of the embedded database, queue and generated secret")
}

func (c *config) databaseFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", "", "postgres://… to use PostgreSQL instead of the embedded SQLite")
}

func (c *config) secretFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.JWTSecret, "jwt-secret", "", "HS256 shared secret (default: generated once into the data dir)")
}

// syslogListen is the repeatable --syslog-listen flag; one value (as
// VIGIL_SYSLOG_LISTEN gives) may also list several URLs separated by
// commas, which a listener URL never holds.
type syslogListen []syslog.Config

func (l *syslogListen) String() string {
	if l == nil {
		return ""
	}
	names := make([]string, len(*l))
	for i, c := range *l {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

func (l *syslogListen) Set(s string) error {
	for _, u := range list(s) {
		c, err := syslog.ParseURL(u)
		if err != nil {
			return err
		}
		*l = append(*l, c)
	}
	return nil
}

// syslogFlag registers --syslog-listen (vigil serve only: a worker has no
// ingest).
func (c *config) syslogFlag(fs *flag.FlagSet) {
	fs.Var(&c.SyslogListen, "syslog-listen", "a syslog listener as udp://, tcp:// or tls://host:port?org=<org>[&…], repeatable "+
		"(or comma-separated); parameters: org, name, source, default-source, max-message, max-connections, idle-timeout, first-byte-timeout, "+
		"and for tls cert, key, client-ca, org-from (docs/ingest.md)")
}

// oidcFlags registers the console's OIDC sign-in (vigil serve only).
func (c *config) oidcFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.OIDCIssuer, "oidc-issuer", "", "issuer URL of an OpenID Connect provider: the console offers \"Sign in with\" it "+
		"(authorization code + PKCE); the API must verify its access tokens (--jwt-jwks-url)")
	fs.StringVar(&c.OIDCClientID, "oidc-client-id", "", "the console's client id at the OIDC provider")
	fs.StringVar(&c.OIDCClientSecret, "oidc-client-secret", "", "the console's client secret at the OIDC provider (prefer VIGIL_OIDC_CLIENT_SECRET; none for a public client)")
	fs.StringVar(&c.OIDCRedirectURL, "oidc-redirect-url", "", "redirect URL registered at the provider, ending in /signin/oidc/callback "+
		"(default: derived from each request's host and scheme)")
	fs.StringVar(&c.OIDCScopes, "oidc-scopes", "openid", "comma-separated scopes asked of the OIDC provider (openid is always asked)")
	fs.StringVar(&c.OIDCName, "oidc-name", "", "the provider's name on the sign-in button (default: the issuer's host)")
}

// oidc returns the console's OIDC configuration, nil when it is off.
func (c *config) oidc() *console.OIDC {
	if c.OIDCIssuer == "" {
		return nil
	}
	return &console.OIDC{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, ClientSecret: c.OIDCClientSecret,
		RedirectURL: c.OIDCRedirectURL, Scopes: list(c.OIDCScopes), Name: c.OIDCName}
}

// validateOIDC checks the OIDC flags: all or none, URLs a browser and the
// provider can use, and an API that can verify the provider's tokens.
func (c *config) validateOIDC() error {
	if c.OIDCIssuer == "" {
		if c.OIDCClientID != "" || c.OIDCClientSecret != "" || c.OIDCRedirectURL != "" {
			return errors.New("--oidc-client-id, --oidc-client-secret and --oidc-redirect-url need --oidc-issuer")
		}
		return nil
	}
	var errs []error
	if err := checkHTTPURL(c.OIDCIssuer); err != nil {
		errs = append(errs, fmt.Errorf("--oidc-issuer: %w", err))
	}
	if c.OIDCClientID == "" {
		errs = append(errs, errors.New("--oidc-issuer needs --oidc-client-id"))
	}
	if c.OIDCRedirectURL != "" {
		if err := checkHTTPURL(c.OIDCRedirectURL); err != nil {
			errs = append(errs, fmt.Errorf("--oidc-redirect-url: %w", err))
		} else if u, _ := url.Parse(c.OIDCRedirectURL); u.Path != "/signin/oidc/callback" {
			errs = append(errs, fmt.Errorf("--oidc-redirect-url must end in /signin/oidc/callback, the console's callback, not %q", u.Path))
		}
	}
	if c.JWTJWKSURL == "" {
		errs = append(errs, errors.New("--oidc-issuer needs --jwt-jwks-url (the provider's key set): the console keeps the provider's access token, which the API must verify"))
	}
	return errors.Join(errs...)
}

// checkHTTPURL accepts an absolute https URL, or http to a loopback host.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.Scheme == "http" {
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("%q: http is allowed only to a loopback host; use https", s)
		}
	}
	return nil
}

// byteSize is a size flag: a number of bytes, or one with a unit as people
// write them (512MiB, 2GiB, 500MB, 1.5G).
type byteSize struct{ p *int64 }

func (b byteSize) String() string {
	if b.p == nil {
		return ""
	}
	return humanize.IBytes(uint64(*b.p))
}

func (b byteSize) Set(s string) error {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a size (e.g. 512MiB, 2GiB, 1000000)", s)
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("%q is too large", s)
	}
	*b.p = int64(n)
	return nil
}

// envName is the environment variable of a flag: VIGIL_<FLAG>.
func envName(flagName string) string {
	return "VIGIL_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// given reports whether the flag name was set, on the command line or
// through its environment variable, rather than left at its default.
func given(fs *flag.FlagSet, name string, getenv func(string) string) bool {
	set := getenv(envName(name)) != ""
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseFlags parses args, then fills every flag not given on the command
// line from VIGIL_<FLAG>. A bad flag is reported in one line that points
// at -h; -h prints the subcommand's own flags.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	err := parseFlagsAndArgs(fs, args, getenv)
	if err == nil && fs.NArg() > 0 {
		err = errors.Join(err, fmt.Errorf("unexpected arguments: %s (see \"vigil %s -h\")", strings.Join(fs.Args(), " "), fs.Name()))
	}
	return err
}

// parseFlagsAndArgs is parseFlags for a command that takes arguments after
// its flags (vigil import's files): fs.Args() holds them.
func parseFlagsAndArgs(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // package flag would print the whole list after every error
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return err
	}
	if err != nil {
		return fmt.Errorf("%w (see \"vigil %s -h\")", err, fs.Name())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		env := envName(f.Name)
		if v := getenv(env); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
		}
	})
	return errors.Join(errs...)
}

func (c *config) validate() error {
	var errs []error
	if c.ArtifactsURL != "" || c.ArtifactsStorage != "" {
		if c.DatabaseURL == "" {
			errs = append(errs, errors.New("--artifacts-url needs --database-url: PostgreSQL keeps the artifacts' tenants, ids and claims beside VictoriaLogs"))
		}
		if c.ArtifactsURL == "" {
			errs = append(errs, errors.New("--artifacts-storage needs --artifacts-url (the cluster's front, which answers searches)"))
		} else if _, err := vlogs.ParseURLs(c.ArtifactsURL, c.ArtifactsStorage); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Fsync != "deferred" && c.Fsync != "always" {
		errs = append(errs, fmt.Errorf("--fsync must be deferred or always, not %q", c.Fsync))
	}
	if c.CorrWindow <= 0 {
		errs = append(errs, errors.New("--correlation-window must be positive"))
	}
	if c.MemoryLimit != 0 && c.MemoryLimit < 64<<20 {
		errs = append(errs, errors.New("--memory-limit must be 0 or at least 64 MiB"))
	}
	if c.MaxQueueBytes < 1<<20 {
		errs = append(errs, errors.New("--max-queue-bytes must be at least 1 MiB"))
	}
	if c.MaxPending < 1 || c.MaxDeliver < 1 || c.IngestWait < 0 {
		errs = append(errs, errors.New("--max-pending and --max-deliver must be at least 1, --ingest-wait not negative"))
	}
	if c.QueueReplicas < 1 || c.QueueReplicas > 5 {
		errs = append(errs, errors.New("--queue-replicas must be 1..5"))
	}
	if err := queue.ValidateName(c.QueueName); err != nil {
		errs = append(errs, fmt.Errorf("--queue-name: %w", err))
	}
	if _, err := c.orgRetention(); err != nil {
		errs = append(errs, err)
	} else if c.OrgRetentionDays != "" && c.ArtifactsURL == "" {
		errs = append(errs, errors.New("--org-retention-days needs --artifacts-url: only a VictoriaLogs cluster keeps each org's artifacts apart to delete"))
	}
	if c.RetentionDays < 0 {
		errs = append(errs, errors.New("--retention-days must not be negative"))
	}
	if c.AuditRetentionDays < 0 {
		errs = append(errs, errors.New("--audit-retention-days must not be negative"))
	}
	if c.Workers < 0 {
		errs = append(errs, errors.New("--workers must not be negative"))
	}
	if c.AckWait < time.Second {
		errs = append(errs, errors.New("--ack-wait must be at least 1s"))
	}
	if c.RequestTimeout < time.Second || c.SearchTimeout < 100*time.Millisecond {
		errs = append(errs, errors.New("--request-timeout must be at least 1s, --search-timeout at least 100ms"))
	}
	if c.MaxSearches < 0 || c.MaxOrgSearches < 1 {
		errs = append(errs, errors.New("--max-searches must not be negative, --max-org-searches at least 1"))
	}
	if err := syslog.CheckNames(c.SyslogListen); err != nil {
		errs = append(errs, fmt.Errorf("--syslog-listen: %w", err))
	}
	if c.BodyBudget < 10<<20 || c.ClientBodyBudget < 10<<20 || c.BodyMinRate < 1<<10 {
		errs = append(errs, errors.New("--body-budget and --client-body-budget must be at least 10MiB (the largest body), --body-min-rate at least 1KiB"))
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < api.MinMetricsTokenLen {
		errs = append(errs, fmt.Errorf("--metrics-token (VIGIL_METRICS_TOKEN) must be at least %d bytes", api.MinMetricsTokenLen))
	}
	if c.JWTSecret != "" {
		if err := checkSecret(c.JWTSecret, "--jwt-secret (VIGIL_JWT_SECRET)"); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateOIDC(); err != nil {
		errs = append(errs, err)
	}
	if c.WebhookRetryBase < 100*time.Millisecond || c.WebhookRetryBase > time.Hour {
		errs = append(errs, errors.New("--webhook-retry-base must be 100ms..1h"))
	}
	if _, err := webhook.ParseNetworks(list(c.WebhookAllowNetworks)); err != nil {
		errs = append(errs, fmt.Errorf("--webhook-allow-networks: %w", err))
	}
	return errors.Join(errs...)
}

// webhookPolicy is where webhook deliveries may go (validate checked the
// networks).
func (c *config) webhookPolicy() webhook.Policy {
	nets, _ := webhook.ParseNetworks(list(c.WebhookAllowNetworks))
	return webhook.Policy{AllowHTTPHosts: list(c.WebhookAllowHTTPHosts), AllowNetworks: nets}
}

// list splits a comma-separated flag value.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// String prints the configuration with every credential masked: the
// secret, the password and token forms of the database and NATS URLs,
// and the user info and query values of the JWKS URL.
func (c config) String() string {
	mask := func(s string) string {
		if s == "" {
			return ""
		}
		return vigil.Redacted
	}
	return fmt.Sprintf("addr=%s metrics_addr=%s metrics_token=%s data_dir=%s database_url=%s nats_url=%s artifacts_url=%s artifacts_storage=%s queue_name=%s jwt_secret=%s jwks_url=%s oidc_issuer=%s oidc_client_id=%s oidc_client_secret=%s fsync=%s workers=%d",
		c.Addr, c.MetricsAddr, mask(c.MetricsToken), c.DataDir, postgres.RedactURL(c.DatabaseURL), queue.RedactURL(c.NATSURL),
		vlogs.RedactList(c.ArtifactsURL), vlogs.RedactList(c.ArtifactsStorage), c.QueueName,
		mask(c.JWTSecret), vigil.RedactURL(c.JWTJWKSURL), vigil.RedactURL(c.OIDCIssuer), c.OIDCClientID, mask(c.OIDCClientSecret), c.Fsync, c.Workers)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level: %w", err)
	}
	return l, nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	l, _ := parseLevel(level)
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// checkSecret refuses an HS256 secret shorter than auth.MinSecretLen,
// from whichever source it came.
func checkSecret(s, source string) error {
	if len(s) < auth.MinSecretLen {
		return fmt.Errorf("%s is %d bytes; an HS256 secret must be at least %d bytes (RFC 7518 §3.2: a shorter one can be brute-forced "+
			"from a single token); generate one with: openssl rand -hex 32", source, len(s), auth.MinSecretLen)
	}
	return nil
}

// secretFile is where the generated HS256 secret is kept in the data dir.
const secretFile = "jwt-secret"

// jwtSecret returns the configured secret or the one kept in the data dir,
// generating and storing it (mode 0600) the first time.
func (c *config) jwtSecret(create bool) ([]byte, error) {
	if c.JWTSecret != "" {
		if err := checkSecret(c.JWTSecret, "--jwt-secret (VIGIL_JWT_SECRET)"); err != nil {
			return nil, err
		}
		return []byte(c.JWTSecret), nil
	}
	path := filepath.Join(c.DataDir, secretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if err := checkSecret(s, "the secret in "+path); err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read JWT secret: %w", err)
	}
	if !create {
		// Minting with a new secret would give tokens that the server
		// (which has its own) refuses, without a word.
		abs, _ := filepath.Abs(path)
		return nil, fmt.Errorf("no JWT secret at %s: a token must be signed with the secret of the server that will check it; "+
			"pass that server's --data-dir (or VIGIL_DATA_DIR), or its --jwt-secret / VIGIL_JWT_SECRET, or start vigil serve once with this data dir", abs)
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	s := hex.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return c.jwtSecret(false) // another process made it first
	}
	if err != nil {
		return nil, fmt.Errorf("write JWT secret: %w", err)
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write JWT secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write JWT secret: %w", err)
	}
	return []byte(s), nil
}

// orgRetention reads --org-retention-days: org=days, comma-separated.
func (c *config) orgRetention() (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for item := range strings.SplitSeq(c.OrgRetentionDays, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		org, v, ok := strings.Cut(item, "=")
		days, err := strconv.Atoi(strings.TrimSpace(v))
		if org = strings.TrimSpace(org); !ok || org == "" || err != nil || days < 0 {
			return nil, fmt.Errorf("--org-retention-days: %q is not org=days (days a whole number, 0 for forever)", item)
		}
		if _, dup := out[org]; dup {
			return nil, fmt.Errorf("--org-retention-days: org %q named twice", org)
		}
		out[org] = time.Duration(days) * 24 * time.Hour
	}
	return out, nil
}
