// Package enrich adds context to the nodes of parsed artifacts: location
// and AS number from MaxMind databases, matches against threat-intelligence
// feeds, reverse and forward DNS, and registration data (WHOIS, over RDAP).
// Each provider implements one interface (provider.go) in a file of its
// own (geoip.go, intel.go with feed_*.go, dns.go, rdap.go); beside them
// sit the cache over the store (cache.go), the bounded in-memory queue of
// outbound look-ups (lookups.go) and the per-org rate limiter
// (ratelimit.go).
//
// Local providers (GeoIP, threat intel) run inline in Enrich. Outbound
// ones (DNS, RDAP) never block it: a fresh cache entry is used at once,
// anything else is queued, looked up in the background under the org's
// rate limit, cached in the store, and the artifact's enrichment is then
// rebuilt and written with Store.SetArtifactEnrichment.
package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
)

// Config configures an Enricher. Zero values take the defaults noted.
type Config struct {
	// GeoIPCityDB and GeoIPASNDB are MaxMind DB files (City or Country;
	// ASN). Empty: looked up among DataDir/geoip/*.mmdb by database type;
	// none: that lookup is off.
	GeoIPCityDB string
	GeoIPASNDB  string
	DataDir     string

	// DNSServers are resolvers as host or host:port. Default: the
	// nameservers of /etc/resolv.conf, else 127.0.0.1:53.
	DNSServers []string
	DNSTimeout time.Duration // per query and server; default 2s

	// RDAPBaseURL, when set, receives every RDAP query (<base>/ip/<ip>,
	// <base>/domain/<name>); empty uses the IANA bootstrap registries.
	RDAPBaseURL string
	RDAPTimeout time.Duration // per look-up; default 10s

	// ThreatIntelDir holds one feed per file (feed name = file name):
	// plain lists, CSV, STIX 2.1 bundles, MISP JSON. Polled for changes.
	ThreatIntelDir string
	// ThreatIntelURLs are feeds fetched over HTTP every
	// ThreatIntelRefresh (default 1h), named host+path.
	ThreatIntelURLs    []string
	ThreatIntelRefresh time.Duration

	// QueueSize bounds the (look-up, artifact) pairs waiting for outbound
	// look-ups; beyond it look-ups are dropped and counted. Default 100000.
	QueueSize int
	// Workers run outbound look-ups concurrently. Default 4.
	Workers int
	// NegativeTTL is how long a failed look-up is not retried. Default 10m.
	NegativeTTL time.Duration
	// PollInterval is how often GeoIP files and the feed directory are
	// checked for changes. Default 5s.
	PollInterval time.Duration
	// SettingsRefresh is how often the settings of orgs with queued
	// look-ups are re-read from the store, so that raising a paused
	// rate_limit resumes them without new artifacts. Default 30s.
	SettingsRefresh time.Duration

	// Now is the clock (cache ages, rate limits). Default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.DNSTimeout <= 0 {
		c.DNSTimeout = 2 * time.Second
	}
	if c.RDAPTimeout <= 0 {
		c.RDAPTimeout = 10 * time.Second
	}
	if c.ThreatIntelRefresh <= 0 {
		c.ThreatIntelRefresh = time.Hour
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 100_000
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.NegativeTTL <= 0 {
		c.NegativeTTL = 10 * time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 5 * time.Second
	}
	if c.SettingsRefresh <= 0 {
		c.SettingsRefresh = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(c.DNSServers) == 0 {
		c.DNSServers = defaultDNSServers()
	}
}

// Result is what Enrich found for one artifact.
type Result struct {
	ArtifactID string
	// Enrichment is the JSON object keyed by node value, e.g.
	// {"81.2.69.142": {"geo": {…}, "asn": {…}, "intel": [...], "dns": {…}, "rdap": {…}}};
	// Enrich also sets it as the artifact's Enrichment.
	Enrichment json.RawMessage
	// Hits are the threat-intelligence matches, one per (node, feed,
	// indicator): each calls for a high threat_intel observation.
	Hits []vigil.IntelHit
	// Pending counts the outbound look-ups Submit will queue.
	Pending int

	nodes   []vigil.NodeRef
	pending []lookup
}

// Store is what enrichment reads and writes: the look-up cache, the
// org's settings, and the enrichment of stored artifacts.
type Store interface {
	vigil.LookupCache
	EnrichmentSettings(ctx context.Context, org string) (*vigil.EnrichmentSettings, error)
	SetArtifactEnrichment(ctx context.Context, org, id string, enrichment json.RawMessage) error
}

// Enricher is the enrichment stage. Its methods are safe for concurrent use.
type Enricher struct {
	cfg   Config
	store Store
	log   *slog.Logger
	m     *metrics
	now   func() time.Time

	geo   *geoip
	intel *intel
	// providers in the order they enrich a node value; outbound are
	// those of them looked up over the network.
	providers []provider
	outbound  []outboundProvider
	mem       *memCache
	lookups   *lookupQueue

	settingsMu sync.RWMutex
	settings   map[string]*vigil.EnrichmentSettings

	// Rebuilding an artifact's enrichment and writing it is serialized
	// per artifact (striped), so that of two look-ups finishing together
	// the later write includes both results.
	seed  maphash.Seed
	locks [64]sync.Mutex

	runMu   sync.Mutex
	started bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New returns an Enricher over store, with its metrics registered on reg
// (nil: a private registry). It opens the GeoIP databases and loads the
// feed directory now; it fails on a configured file or directory that
// cannot be read. A feed file that fails to parse is logged and left out.
func New(cfg Config, store Store, reg prometheus.Registerer, log *slog.Logger) (*Enricher, error) {
	if store == nil {
		return nil, errors.New("enrich: nil store")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.setDefaults()
	e := &Enricher{
		cfg:      cfg,
		store:    store,
		log:      log,
		m:        newMetrics(reg),
		now:      cfg.Now,
		mem:      newMemCache(memCacheSize),
		settings: map[string]*vigil.EnrichmentSettings{},
		seed:     maphash.MakeSeed(),
	}
	geo, err := newGeoIP(cfg.GeoIPCityDB, cfg.GeoIPASNDB, cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("enrich: %w", err)
	}
	e.geo = geo
	dns := newResolver(cfg.DNSServers, cfg.DNSTimeout)
	rdap, err := newRDAPClient(cfg.RDAPBaseURL, cfg.RDAPTimeout)
	if err != nil {
		return nil, fmt.Errorf("enrich: %w", err)
	}
	e.intel = newIntel(cfg.ThreatIntelDir, cfg.ThreatIntelURLs, e.m, log)
	if cfg.ThreatIntelDir != "" {
		if _, err := e.intel.reloadDir(true); err != nil {
			return nil, fmt.Errorf("enrich: %w", err)
		}
	}
	e.providers = []provider{geo, e.intel, dns, rdap}
	for _, p := range e.providers {
		if o, ok := p.(outboundProvider); ok {
			e.outbound = append(e.outbound, o)
		}
	}
	e.lookups = newLookupQueue(cfg.QueueSize, e.m, e.now)
	e.lookups.policy = e.policy
	e.lookups.cached = e.memFresh
	for _, s := range []*geoSlot{&geo.city, &geo.asn} {
		if db := s.db.Load(); db != nil {
			e.m.reloads.WithLabelValues(s.name).Inc()
			log.Info("geoip database loaded", slog.String("path", db.path), slog.String("type", db.r.Metadata.DatabaseType))
		}
	}
	return e, nil
}

// Start runs the background work until ctx ends or Close: the look-up
// workers, the polling of GeoIP files and the feed directory, the URL
// feed refresh and the settings refresh. Calling it again does nothing.
func (e *Enricher) Start(ctx context.Context) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if e.started {
		return
	}
	e.started = true
	ctx, e.cancel = context.WithCancel(ctx)
	for range e.cfg.Workers {
		e.goRun(func() { e.worker(ctx) })
	}
	e.goRun(func() {
		every(ctx, e.cfg.PollInterval, func() {
			e.reloadGeoIP()
			if _, err := e.intel.reloadDir(false); err != nil {
				e.log.Warn("threat intel reload failed", slog.Any("error", err))
			}
		})
	})
	if len(e.intel.urls) > 0 {
		e.goRun(func() {
			_ = e.intel.fetch(ctx)
			every(ctx, e.cfg.ThreatIntelRefresh, func() { _ = e.intel.fetch(ctx) })
		})
	}
	e.goRun(func() { every(ctx, e.cfg.SettingsRefresh, func() { e.refreshSettings(ctx) }) })
}

func (e *Enricher) goRun(f func()) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f()
	}()
}

func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Close stops the background work and waits for it. Queued look-ups are
// abandoned (the queue is in memory): their artifacts keep the enrichment
// they had.
func (e *Enricher) Close() error {
	e.runMu.Lock()
	cancel := e.cancel
	e.runMu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.wg.Wait()
	return nil
}

// Reload checks the GeoIP files and the feed directory now and fetches the
// URL feeds (what SIGHUP would do).
func (e *Enricher) Reload(ctx context.Context) error {
	err1 := e.reloadGeoIP()
	_, err2 := e.intel.reloadDir(false)
	err3 := e.intel.fetch(ctx)
	return errors.Join(err1, err2, err3)
}

func (e *Enricher) reloadGeoIP() error {
	reloaded, err := e.geo.reload()
	for _, name := range reloaded {
		e.m.reloads.WithLabelValues(name).Inc()
		e.log.Info("geoip database reloaded", slog.String("database", name))
	}
	if err != nil {
		e.m.loadErrors.WithLabelValues("geoip").Inc()
		e.log.Warn("geoip reload failed", slog.Any("error", err))
	}
	return err
}

// Enrich enriches one org's artifacts inline: GeoIP and threat-intel
// matching for every node, DNS and RDAP from fresh entries of the
// in-process cache. It sets each artifact's Enrichment and returns, per
// artifact in order, the enrichment, the threat-intel hits and the
// outbound look-ups still to do, which Submit queues once the artifacts
// are stored. nodes[i] are the nodes of arts[i] (parse.Nodes). settings
// are the org's current settings (nil: read from the store). It does no
// network or store I/O (but for reading nil settings) and never fails: a
// provider that cannot answer leaves its part out.
func (e *Enricher) Enrich(ctx context.Context, org string, settings *vigil.EnrichmentSettings, arts []*vigil.Artifact, nodes [][]vigil.NodeRef) []Result {
	s := e.noteSettings(ctx, org, settings)
	p := e.newPass(ctx, org, s)
	results := make([]Result, len(arts))
	for i, a := range arts {
		var refs []vigil.NodeRef
		if i < len(nodes) {
			refs = nodes[i]
		}
		r := &results[i]
		r.ArtifactID = a.ID
		r.nodes = refs
		var matches []nodeMatch
		r.Enrichment, r.pending, matches = p.artifact(refs)
		r.Pending = len(r.pending)
		for _, nm := range matches {
			r.Hits = append(r.Hits, vigil.IntelHit{
				Feed: nm.Feed, Indicator: nm.Indicator, IndicatorType: nm.Type,
				NodeType: nm.node.Type, NodeValue: nm.node.Value,
			})
			p.intelHits[nm.Feed]++
		}
		a.Enrichment = r.Enrichment
	}
	p.flush()
	return results
}

// Submit queues the outbound look-ups of results for org. Call it once
// the artifacts are stored: when a look-up returns, the artifact's stored
// enrichment is rebuilt and replaced. It never blocks; when the queue is
// full, look-ups are dropped (counted in vigil_enrich_dropped_total) and
// those artifacts keep their inline enrichment. It returns the number
// dropped.
func (e *Enricher) Submit(org string, results []Result) int {
	now := e.now()
	dropped := 0
	for i := range results {
		r := &results[i]
		if len(r.pending) == 0 {
			continue
		}
		// The id and nodes are copied: an artifact's strings share the
		// memory of its whole queue message (queue.decode), which a
		// look-up waiting its turn under the rate limit, for hours when
		// the queue is full, would keep alive: hundreds of kilobytes for a
		// 36-byte id.
		ref := newArtRef(org, r.ArtifactID, r.nodes, now)
		for _, l := range r.pending {
			if !e.lookups.add(ref, l) {
				e.m.dropped.WithLabelValues(l.provider).Inc()
				dropped++
			}
		}
	}
	return dropped
}

// noteSettings returns the settings to use for org now and remembers them
// for the background work.
func (e *Enricher) noteSettings(ctx context.Context, org string, s *vigil.EnrichmentSettings) *vigil.EnrichmentSettings {
	if s == nil {
		loaded, err := e.store.EnrichmentSettings(ctx, org)
		if err != nil || loaded == nil {
			e.log.Warn("enrichment settings not read; using defaults", slog.String("org", org), slog.Any("error", err))
			d := vigil.DefaultEnrichmentSettings()
			loaded = &d
		}
		s = loaded
	}
	cp := *s
	e.settingsMu.Lock()
	prev := e.settings[org]
	e.settings[org] = &cp
	e.settingsMu.Unlock()
	if prev != nil && e.outboundChanged(prev, &cp) {
		e.lookups.notify()
	}
	return &cp
}

// outboundChanged reports whether the queued look-ups are to be handled
// differently under s than under prev.
func (e *Enricher) outboundChanged(prev, s *vigil.EnrichmentSettings) bool {
	if prev.RateLimit != s.RateLimit || prev.CacheTTLHours != s.CacheTTLHours {
		return true
	}
	for _, o := range e.outbound {
		if o.enabled(prev) != o.enabled(s) {
			return true
		}
	}
	return false
}

func (e *Enricher) orgSettings(org string) *vigil.EnrichmentSettings {
	e.settingsMu.RLock()
	s := e.settings[org]
	e.settingsMu.RUnlock()
	if s == nil {
		d := vigil.DefaultEnrichmentSettings()
		s = &d
	}
	return s
}

// refreshSettings re-reads the settings of the orgs with queued look-ups.
func (e *Enricher) refreshSettings(ctx context.Context) {
	for _, org := range e.lookups.orgs() {
		s, err := e.store.EnrichmentSettings(ctx, org)
		if err != nil || s == nil {
			continue
		}
		e.noteSettings(ctx, org, s)
	}
	e.lookups.notify()
}

// policy tells the queue whether provider is on for org and its limit.
func (e *Enricher) policy(org, provider string) (bool, int) {
	o := e.outboundNamed(provider)
	if o == nil {
		return false, 0
	}
	s := e.orgSettings(org)
	return o.enabled(s), s.RateLimit
}

func (e *Enricher) outboundNamed(name string) outboundProvider {
	for _, o := range e.outbound {
		if o.name() == name {
			return o
		}
	}
	return nil
}

// memFresh tells the queue whether the in-memory cache answers l for org.
func (e *Enricher) memFresh(org string, l lookup) bool {
	return e.freshness(e.orgSettings(org)).fresh(e.mem.get(l.provider, l.key))
}

func (e *Enricher) freshness(s *vigil.EnrichmentSettings) freshness {
	return freshness{now: e.now(), ttl: time.Duration(s.CacheTTLHours) * time.Hour, negTTL: e.cfg.NegativeTTL}
}

// worker runs queued look-ups until ctx ends.
func (e *Enricher) worker(ctx context.Context) {
	for {
		j, mode, ok := e.lookups.next(ctx)
		if !ok {
			return
		}
		e.run(ctx, j, mode)
	}
}

// run handles one job: answered by the in-process cache, looked for in the
// store's cache (and queued to be sent if not there), or sent — its
// result, a failure as a negative entry, then cached. The artifacts
// waiting for it then have their enrichment rebuilt.
func (e *Enricher) run(ctx context.Context, j *job, mode jobMode) {
	switch mode {
	case modeCached:
		e.m.cacheHits.WithLabelValues(j.provider).Inc()
	case modeCheck:
		if _, fresh := e.cacheGet(ctx, j.provider, j.key, e.freshness(e.orgSettings(j.lane.org))); !fresh {
			if ctx.Err() != nil {
				e.lookups.finish(j)
				return
			}
			e.lookups.requeue(j)
			return
		}
		e.m.cacheHits.WithLabelValues(j.provider).Inc()
	case modeFetch:
		e.m.lookups.WithLabelValues(j.provider).Inc()
		val, err := e.send(ctx, j.lookup)
		if err != nil && ctx.Err() != nil {
			e.lookups.finish(j) // shutting down: not the provider's failure
			return
		}
		ent := &vigil.CacheEntry{Provider: j.provider, Key: j.key, Value: val, FetchedAt: e.now()}
		if err != nil {
			e.m.failures.WithLabelValues(j.provider).Inc()
			e.log.Debug("enrichment look-up failed", slog.String("provider", j.provider), slog.String("key", j.key), slog.Any("error", err))
			ent.Value, ent.Negative = nil, true
		}
		e.cachePut(ctx, ent)
	}
	arts := e.lookups.finish(j)
	e.refresh(ctx, j.lane.org, arts)
}

// send runs an outbound provider's look-up, turning a panic on a hostile answer into a
// failure.
func (e *Enricher) send(ctx context.Context, l lookup) (val json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%s look-up panicked: %v", l.provider, v)
		}
	}()
	o := e.outboundNamed(l.provider)
	if o == nil {
		return nil, fmt.Errorf("unknown provider %q", l.provider)
	}
	return o.lookup(ctx, l.key)
}

// refresh rebuilds and stores the enrichment of artifacts of org from the
// local providers and the cache.
func (e *Enricher) refresh(ctx context.Context, org string, arts []*artRef) {
	if len(arts) == 0 {
		return
	}
	s := e.orgSettings(org)
	p := e.newPass(ctx, org, s)
	p.background = true
	for _, ref := range arts {
		mu := &e.locks[maphash.String(e.seed, org+"\x00"+ref.id())%uint64(len(e.locks))]
		mu.Lock()
		p.memo = map[nodeKey]*nodeOutcome{}
		p.fresh.since = ref.since
		enr, _, _ := p.artifact(ref.nodes())
		err := e.store.SetArtifactEnrichment(ctx, org, ref.id(), enr)
		mu.Unlock()
		if err != nil && ctx.Err() == nil {
			e.log.Warn("artifact enrichment not stored", slog.String("org", org), slog.String("artifact_id", ref.id()), slog.Any("error", err))
		}
	}
	p.flush()
}

// nodeInfo is the enrichment of one node value, a field per provider.
type nodeInfo struct {
	Geo   *Geo            `json:"geo,omitempty"`
	ASN   *ASN            `json:"asn,omitempty"`
	Intel []IntelMatch    `json:"intel,omitempty"`
	DNS   json.RawMessage `json:"dns,omitempty"`
	RDAP  *RDAPInfo       `json:"rdap,omitempty"`
}

func (n *nodeInfo) empty() bool {
	return n.Geo == nil && n.ASN == nil && len(n.Intel) == 0 && len(n.DNS) == 0 && n.RDAP == nil
}

type nodeKey struct{ typ, value string }

type nodeOutcome struct {
	info    nodeInfo
	pending []lookup
}

type nodeMatch struct {
	IntelMatch
	node vigil.NodeRef
}

// pass is one enrichment run over artifacts of one org: the settings, the
// providers' data and the clock are fixed for its duration, and each
// distinct node value is enriched once.
type pass struct {
	e          *Enricher
	ctx        context.Context
	s          *vigil.EnrichmentSettings
	internal   []netip.Prefix
	fresh      freshness
	background bool // rebuilding stored artifacts: nothing is queued
	memo       map[nodeKey]*nodeOutcome

	// steps are the parts of the providers on for the org, in order.
	steps []passStep
	// cur is the node value the steps are given: held here, not on the
	// stack, since a pointer passed to a func value escapes, which cost
	// an allocation per node value.
	cur target

	cacheHits map[string]int
	intelHits map[string]int
}

// passStep is a provider's step in a pass and the local look-ups it made.
type passStep struct {
	run      step
	provider string
	lookups  int
}

func (e *Enricher) newPass(ctx context.Context, org string, s *vigil.EnrichmentSettings) *pass {
	p := &pass{
		e:         e,
		ctx:       ctx,
		s:         s,
		internal:  parsePrefixes(s.InternalNetworks),
		fresh:     e.freshness(s),
		memo:      map[nodeKey]*nodeOutcome{},
		cacheHits: map[string]int{},
		intelHits: map[string]int{},
	}
	p.steps = make([]passStep, 0, len(e.providers))
	for _, prov := range e.providers {
		if !prov.enabled(s) {
			continue
		}
		if run := prov.begin(); run != nil {
			p.steps = append(p.steps, passStep{run: run, provider: prov.name()})
		}
	}
	return p
}

// flush adds the pass's counts to the metrics.
func (p *pass) flush() {
	m := p.e.m
	for _, st := range p.steps {
		if st.lookups > 0 {
			m.lookups.WithLabelValues(st.provider).Add(float64(st.lookups))
		}
	}
	for prov, n := range p.cacheHits {
		m.cacheHits.WithLabelValues(prov).Add(float64(n))
	}
	for feed, n := range p.intelHits {
		m.intelHits.WithLabelValues(feed).Add(float64(n))
	}
}

// artifact builds the enrichment object of one artifact's nodes.
func (p *pass) artifact(refs []vigil.NodeRef) (json.RawMessage, []lookup, []nodeMatch) {
	obj := make(map[string]*nodeInfo, len(refs))
	var pending []lookup
	var matches []nodeMatch
	for _, ref := range refs {
		out := p.node(ref)
		if out == nil {
			continue
		}
		if !out.info.empty() {
			if _, dup := obj[ref.Value]; !dup {
				obj[ref.Value] = &out.info
			}
		}
		pending = append(pending, out.pending...)
		for _, m := range out.info.Intel {
			matches = append(matches, nodeMatch{m, ref})
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		b = []byte("{}")
	}
	return b, pending, matches
}

// node enriches one node value, once per pass: each provider in turn.
func (p *pass) node(ref vigil.NodeRef) *nodeOutcome {
	k := nodeKey{ref.Type, ref.Value}
	if out, ok := p.memo[k]; ok {
		return out
	}
	var out *nodeOutcome
	if parseTarget(&p.cur, ref) {
		out = &nodeOutcome{}
		for i := range p.steps {
			st := &p.steps[i]
			st.lookups += st.run(p, out, &p.cur)
		}
	}
	p.memo[k] = out
	return out
}

// cached returns the value of a fresh cache entry of (provider, key), or
// notes the look-up as pending in out. Inline (Enrich) only the in-process
// cache is consulted: a store read per new value would cost as much as
// storing the artifact. The workers look in the store before sending
// anything. The background rebuild reads the store too. A fresh failure
// or empty answer returns false and is not pending.
func (p *pass) cached(out *nodeOutcome, provider, key string) (json.RawMessage, bool) {
	var ent *vigil.CacheEntry
	var fresh bool
	if p.background {
		ent, fresh = p.e.cacheGet(p.ctx, provider, key, p.fresh)
	} else {
		ent = p.e.mem.get(provider, key)
		fresh = p.fresh.fresh(ent)
	}
	if !fresh {
		if !p.background {
			out.pending = append(out.pending, lookup{provider, key})
		}
		return nil, false
	}
	if !p.background {
		p.cacheHits[provider]++
	}
	if ent.Negative || len(ent.Value) == 0 {
		return nil, false
	}
	return ent.Value, true
}
