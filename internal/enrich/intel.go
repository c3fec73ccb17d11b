package enrich

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
)

// IndicatorType is the kind of a threat-intelligence indicator.
type IndicatorType uint8

// Indicator types.
const (
	IndicatorIP IndicatorType = iota + 1
	IndicatorCIDR
	IndicatorDomain
	IndicatorURL
	IndicatorMD5
	IndicatorSHA1
	IndicatorSHA256
	IndicatorSHA512
)

var indicatorNames = [...]string{"", "ip", "cidr", "domain", "url", "md5", "sha1", "sha256", "sha512"}

func (t IndicatorType) String() string {
	if int(t) < len(indicatorNames) {
		return indicatorNames[t]
	}
	return "unknown"
}

// Indicator is one normalized indicator of a feed: an address, a masked
// prefix, a lower-case domain, a normalized URL or a lower-case hex hash.
type Indicator struct {
	Type  IndicatorType
	Value string
}

// IntelMatch is one feed's indicator matching a node value.
type IntelMatch struct {
	Feed      string `json:"feed"`
	Indicator string `json:"indicator"`
	Type      string `json:"type"`
}

// hint is what a feed says an indicator is; hintAuto lets the value tell.
type hint uint8

const (
	hintAuto hint = iota
	hintIP        // an address or a prefix
	hintDomain
	hintURL
	hintHash
)

// normIndicator validates and normalizes one indicator value. Defanged
// forms (hxxp://, evil[.]com) are accepted.
func normIndicator(h hint, s string) (Indicator, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 4096 {
		return Indicator{}, false
	}
	if strings.ContainsAny(s, "[({") || strings.HasPrefix(s, "hxxp") || strings.HasPrefix(s, "HXXP") {
		s = refang(s)
	}
	switch h {
	case hintIP:
		return normIPIndicator(s)
	case hintDomain:
		if d := normDomain(strings.TrimPrefix(strings.TrimPrefix(s, "*."), ".")); d != "" {
			return Indicator{IndicatorDomain, d}, true
		}
		return Indicator{}, false
	case hintURL:
		if u := normURL(s); u != "" {
			return Indicator{IndicatorURL, u}, true
		}
		return Indicator{}, false
	case hintHash:
		return normHash(s)
	}
	if ind, ok := normIPIndicator(s); ok {
		return ind, true
	}
	if ind, ok := normHash(s); ok {
		return ind, true
	}
	if strings.Contains(s, "://") {
		return normIndicator(hintURL, s)
	}
	return normIndicator(hintDomain, s)
}

var refanger = strings.NewReplacer("[.]", ".", "(.)", ".", "{.}", ".", "[dot]", ".", "(dot)", ".",
	"[:]", ":", "[://]", "://", "[/]", "/", "[@]", "@")

func refang(s string) string {
	s = refanger.Replace(s)
	if len(s) >= 4 && strings.EqualFold(s[:4], "hxxp") {
		s = "http" + s[4:]
	}
	return s
}

func normIPIndicator(s string) (Indicator, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return Indicator{}, false
		}
		return Indicator{IndicatorIP, a.Unmap().String()}, true
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return Indicator{}, false
	}
	if p.Addr().Is4In6() {
		if p.Bits() < 96 {
			return Indicator{}, false
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	p = p.Masked()
	if p.Bits() == p.Addr().BitLen() {
		return Indicator{IndicatorIP, p.Addr().String()}, true
	}
	return Indicator{IndicatorCIDR, p.String()}, true
}

func normHash(s string) (Indicator, bool) {
	var t IndicatorType
	switch len(s) {
	case 32:
		t = IndicatorMD5
	case 40:
		t = IndicatorSHA1
	case 64:
		t = IndicatorSHA256
	case 128:
		t = IndicatorSHA512
	default:
		return Indicator{}, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return Indicator{}, false
		}
	}
	return Indicator{t, strings.ToLower(s)}, true
}

// normURL canonicalizes a URL so that feed entries and node values compare
// equal: lower-case scheme and host, no default port, no fragment, "/" for
// an empty path. It returns "" for anything without a scheme and host.
func normURL(s string) string {
	u, _ := parseURL(s)
	return u
}

// parseURL returns the canonical form of a URL (see normURL) and its host,
// lower case, without brackets or port.
func parseURL(s string) (norm, host string) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") || len(s) > 4096 {
		return "", ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "", ""
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := u.Hostname(), u.Port()
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if !validURLHost(host) {
		return "", ""
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	hostport := host
	if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport += ":" + port
	}
	u.Host = hostport
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" && u.RawPath == "" {
		u.Path = "/"
	}
	return u.String(), host
}

// validURLHost accepts an IP address or a name of letters, digits,
// hyphens and underscores (one label allowed: intranet URLs).
func validURLHost(h string) bool {
	if h == "" {
		return false
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Zone() == ""
	}
	return normDomain(h) != "" || normDomain(h+".x") != ""
}

// maxMatches bounds the matches reported for one node value.
const maxMatches = 32

// intelIndex answers "which feeds list this value" in O(1) per key: maps
// for exact addresses, domains, URLs and hashes, one map per prefix length
// for CIDRs (a containment test is one probe per length in use, typically
// a handful), and a walk up the parent domains. Values are ids of feed
// sets, so an indicator costs one map entry however many feeds list it.
// An index is immutable once built; a reload builds a new one.
type intelIndex struct {
	feeds  []string
	sets   [][]uint16 // sets[i] for i < len(feeds) is {i}
	ips    map[[16]byte]uint32
	v4nets [33]map[uint32]uint32
	v4lens []int
	v6nets [129]map[[16]byte]uint32
	v6lens []int
	names  map[string]uint32
	urls   map[string]uint32
	hashes map[string]uint32
	counts []int // indicators per feed
}

func (x *intelIndex) size() int {
	if x == nil {
		return 0
	}
	n := len(x.ips) + len(x.names) + len(x.urls) + len(x.hashes)
	for _, m := range x.v4nets {
		n += len(m)
	}
	for _, m := range x.v6nets {
		n += len(m)
	}
	return n
}

type indexBuilder struct {
	x      *intelIndex
	setIDs map[string]uint32
}

func newIndexBuilder() *indexBuilder {
	return &indexBuilder{
		x: &intelIndex{
			ips:    map[[16]byte]uint32{},
			names:  map[string]uint32{},
			urls:   map[string]uint32{},
			hashes: map[string]uint32{},
		},
		setIDs: map[string]uint32{},
	}
}

// addFeed registers a feed and returns its id.
func (b *indexBuilder) addFeed(name string) uint16 {
	id := uint16(len(b.x.feeds))
	b.x.feeds = append(b.x.feeds, name)
	b.x.counts = append(b.x.counts, 0)
	return id
}

// finish closes the feed list: the singleton sets come first, so that the
// set id of a key listed by one feed is the feed id. Call it after all
// addFeed and before any add.
func (b *indexBuilder) finish() {
	for i := range b.x.feeds {
		b.x.sets = append(b.x.sets, []uint16{uint16(i)})
	}
}

// with returns the id of set ∪ {feed}.
func (b *indexBuilder) with(set uint32, feed uint16) uint32 {
	cur := b.x.sets[set]
	if slices.Contains(cur, feed) {
		return set
	}
	next := append(slices.Clip(cur), feed)
	slices.Sort(next)
	var key strings.Builder
	for _, f := range next {
		key.WriteByte(byte(f >> 8))
		key.WriteByte(byte(f))
	}
	if id, ok := b.setIDs[key.String()]; ok {
		return id
	}
	id := uint32(len(b.x.sets))
	b.x.sets = append(b.x.sets, next)
	b.setIDs[key.String()] = id
	return id
}

func put[K comparable](b *indexBuilder, m map[K]uint32, k K, feed uint16) {
	if set, ok := m[k]; ok {
		m[k] = b.with(set, feed)
	} else {
		m[k] = uint32(feed)
	}
}

// putString is put for string keys; a new key is copied, so that the index
// does not keep alive the document (or CSV row) the value was cut from.
func putString(b *indexBuilder, m map[string]uint32, k string, feed uint16) {
	if set, ok := m[k]; ok {
		m[k] = b.with(set, feed)
	} else {
		m[strings.Clone(k)] = uint32(feed)
	}
}

// add indexes one normalized indicator of feed.
func (b *indexBuilder) add(feed uint16, ind Indicator) {
	x := b.x
	switch ind.Type {
	case IndicatorIP:
		a, err := netip.ParseAddr(ind.Value)
		if err != nil {
			return
		}
		put(b, x.ips, a.Unmap().As16(), feed)
	case IndicatorCIDR:
		p, err := netip.ParsePrefix(ind.Value)
		if err != nil {
			return
		}
		p = p.Masked()
		bits := p.Bits()
		if p.Addr().Is4() {
			if x.v4nets[bits] == nil {
				x.v4nets[bits] = map[uint32]uint32{}
				x.v4lens = append(x.v4lens, bits)
			}
			put(b, x.v4nets[bits], v4key(p.Addr()), feed)
		} else {
			if x.v6nets[bits] == nil {
				x.v6nets[bits] = map[[16]byte]uint32{}
				x.v6lens = append(x.v6lens, bits)
			}
			put(b, x.v6nets[bits], p.Addr().As16(), feed)
		}
	case IndicatorDomain:
		putString(b, x.names, ind.Value, feed)
	case IndicatorURL:
		putString(b, x.urls, ind.Value, feed)
	case IndicatorMD5, IndicatorSHA1, IndicatorSHA256, IndicatorSHA512:
		putString(b, x.hashes, ind.Value, feed)
	default:
		return
	}
	x.counts[feed]++
}

func (b *indexBuilder) build() *intelIndex {
	sort.Sort(sort.Reverse(sort.IntSlice(b.x.v4lens)))
	sort.Sort(sort.Reverse(sort.IntSlice(b.x.v6lens)))
	return b.x
}

func v4key(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func (x *intelIndex) appendSet(dst []IntelMatch, set uint32, indicator string, t IndicatorType) []IntelMatch {
	for _, f := range x.sets[set] {
		if len(dst) >= maxMatches {
			break
		}
		dst = append(dst, IntelMatch{Feed: x.feeds[f], Indicator: indicator, Type: t.String()})
	}
	return dst
}

// matchIP appends the feeds listing a or a prefix containing it, most
// specific prefix first.
func (x *intelIndex) matchIP(dst []IntelMatch, a netip.Addr) []IntelMatch {
	a = a.Unmap()
	if set, ok := x.ips[a.As16()]; ok {
		dst = x.appendSet(dst, set, a.String(), IndicatorIP)
	}
	if a.Is4() {
		k := v4key(a)
		for _, bits := range x.v4lens {
			masked := k
			if bits < 32 {
				masked = k &^ (1<<(32-bits) - 1)
			}
			if set, ok := x.v4nets[bits][masked]; ok {
				dst = x.appendSet(dst, set, netip.PrefixFrom(a, bits).Masked().String(), IndicatorCIDR)
			}
		}
		return dst
	}
	for _, bits := range x.v6lens {
		p := netip.PrefixFrom(a, bits).Masked()
		if set, ok := x.v6nets[bits][p.Addr().As16()]; ok {
			dst = x.appendSet(dst, set, p.String(), IndicatorCIDR)
		}
	}
	return dst
}

// matchDomain appends the feeds listing d or one of its parent domains
// (an indicator evil.example matches www.evil.example). Single labels are
// not tried: a feed line "com" is noise, not an indicator.
func (x *intelIndex) matchDomain(dst []IntelMatch, d string) []IntelMatch {
	for {
		if set, ok := x.names[d]; ok {
			dst = x.appendSet(dst, set, d, IndicatorDomain)
		}
		i := strings.IndexByte(d, '.')
		if i < 0 {
			return dst
		}
		d = d[i+1:]
		if strings.IndexByte(d, '.') < 0 {
			return dst
		}
	}
}

func (x *intelIndex) matchURL(dst []IntelMatch, u string) []IntelMatch {
	if set, ok := x.urls[u]; ok {
		dst = x.appendSet(dst, set, u, IndicatorURL)
	}
	return dst
}

func (x *intelIndex) matchHash(dst []IntelMatch, h string) []IntelMatch {
	if set, ok := x.hashes[h]; ok {
		ind, _ := normHash(h)
		dst = x.appendSet(dst, set, h, ind.Type)
	}
	return dst
}

// Feed formats.
const (
	formatList = "list"
	formatCSV  = "csv"
	formatSTIX = "stix"
	formatMISP = "misp"
)

// errNotFormat is returned by a JSON parser given another format's JSON.
var errNotFormat = errors.New("not this format")

// parseFeed parses one feed document, choosing the parser by file name
// extension and content: .csv is CSV; a document starting with { or [ is
// a STIX 2.1 bundle or MISP JSON; anything else is a plain list. skipped
// counts entries that were not usable indicators.
func parseFeed(name string, data []byte) (inds []Indicator, skipped int, format string, err error) {
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".csv" || ext == ".tsv" {
		inds, skipped, err = parseCSV(data)
		return inds, skipped, formatCSV, err
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		inds, skipped, err = parseSTIX(data)
		if !errors.Is(err, errNotFormat) {
			return inds, skipped, formatSTIX, err
		}
		inds, skipped, err = parseMISP(data)
		if errors.Is(err, errNotFormat) {
			err = fmt.Errorf("JSON that is neither a STIX 2.1 bundle nor MISP events")
		}
		return inds, skipped, formatMISP, err
	}
	inds, skipped = parseList(data)
	return inds, skipped, formatList, nil
}

// ProviderIntel names the threat-intelligence provider (metric label).
const ProviderIntel = "intel"

var _ provider = (*intel)(nil)

func (in *intel) name() string { return ProviderIntel }

func (in *intel) enabled(s *vigil.EnrichmentSettings) bool { return s.ThreatIntelEnabled }

// begin matches the node values of a pass against the index loaded when
// it began.
func (in *intel) begin() step {
	x := in.idx.Load()
	if x.size() == 0 {
		return nil
	}
	return x.step()
}

// step matches a node value against x: a URL node by its URL, then its
// host as an address or name.
func (x *intelIndex) step() step {
	return func(_ *pass, out *nodeOutcome, t *target) int {
		if t.kind == vigil.NodeHash {
			out.info.Intel = x.matchHash(out.info.Intel, strings.ToLower(strings.TrimSpace(t.value)))
			return 1
		}
		n := 0
		if t.url != "" {
			n++
			out.info.Intel = x.matchURL(out.info.Intel, t.url)
		}
		if t.addr.IsValid() {
			n++
			out.info.Intel = x.matchIP(out.info.Intel, t.addr)
		} else if t.domain != "" {
			n++
			out.info.Intel = x.matchDomain(out.info.Intel, t.domain)
		}
		return n
	}
}

// intel loads the feeds — the files of a directory and URLs — and keeps
// the current index. Readers load the index pointer once per pass; a
// reload swaps in a new index built from scratch.
type intel struct {
	dir    string
	urls   []string
	client *http.Client
	m      *metrics
	log    *slog.Logger
	maxDoc int64

	idx atomic.Pointer[intelIndex]

	mu     sync.Mutex // serializes loads; guards files and remote
	files  map[string]fileStamp
	remote map[string]*remoteFeed
}

type fileStamp struct {
	modTime time.Time
	size    int64
}

// remoteFeed is the last good copy of a feed fetched over HTTP.
type remoteFeed struct {
	name         string
	inds         []Indicator
	etag         string
	lastModified string
}

func newIntel(dir string, urls []string, m *metrics, log *slog.Logger) *intel {
	in := &intel{
		dir:    dir,
		client: &http.Client{Timeout: 2 * time.Minute},
		m:      m,
		log:    log,
		maxDoc: 1 << 30,
		files:  map[string]fileStamp{},
		remote: map[string]*remoteFeed{},
	}
	for _, u := range urls {
		if u = strings.TrimSpace(u); u != "" {
			in.urls = append(in.urls, u)
		}
	}
	in.idx.Store(newIndexBuilder().build())
	return in
}

// feedFiles lists the feed files of the directory with their stamps:
// regular files, not hidden, not Markdown (a README beside the feeds).
func (in *intel) feedFiles() (map[string]fileStamp, error) {
	ents, err := os.ReadDir(in.dir)
	if err != nil {
		return nil, fmt.Errorf("threat intel dir: %w", err)
	}
	out := map[string]fileStamp{}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.EqualFold(filepath.Ext(name), ".md") {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out[name] = fileStamp{modTime: fi.ModTime(), size: fi.Size()}
	}
	return out, nil
}

// reloadDir rebuilds the index when a feed file was added, removed or
// changed since the last load (or always with force). It reports whether
// it rebuilt.
func (in *intel) reloadDir(force bool) (bool, error) {
	if in.dir == "" {
		if force {
			in.mu.Lock()
			defer in.mu.Unlock()
			in.rebuildLocked(nil)
			return true, nil
		}
		return false, nil
	}
	stamps, err := in.feedFiles()
	if err != nil {
		in.m.loadErrors.WithLabelValues("intel").Inc()
		return false, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !force && maps.EqualFunc(stamps, in.files, fileStamp.equal) {
		return false, nil
	}
	in.rebuildLocked(stamps)
	return true, nil
}

func (s fileStamp) equal(o fileStamp) bool { return s.modTime.Equal(o.modTime) && s.size == o.size }

// rebuildLocked reads and parses the directory's files (stamps) and the
// last good remote feeds into a new index and swaps it in. A file that
// fails to parse is left out and logged; it is read again when it changes
// (a feed written in place is seen again once the writer is done).
func (in *intel) rebuildLocked(stamps map[string]fileStamp) {
	start := time.Now()
	b := newIndexBuilder()
	names := make([]string, 0, len(stamps))
	for name := range stamps {
		names = append(names, name)
	}
	sort.Strings(names)
	type parsed struct {
		feed uint16
		inds []Indicator
	}
	var all []parsed
	for _, name := range names {
		inds, skipped, format, err := in.readFile(name)
		if err != nil {
			in.m.loadErrors.WithLabelValues("intel").Inc()
			in.log.Warn("threat intel feed not loaded", slog.String("feed", name), slog.Any("error", err))
			continue
		}
		if skipped > 0 {
			in.log.Debug("threat intel feed entries skipped", slog.String("feed", name), slog.Int("skipped", skipped))
		}
		in.log.Debug("threat intel feed parsed", slog.String("feed", name), slog.String("format", format), slog.Int("indicators", len(inds)))
		all = append(all, parsed{b.addFeed(name), inds})
	}
	remotes := make([]string, 0, len(in.remote))
	for u := range in.remote {
		remotes = append(remotes, u)
	}
	sort.Strings(remotes)
	for _, u := range remotes {
		r := in.remote[u]
		all = append(all, parsed{b.addFeed(r.name), r.inds})
	}
	b.finish()
	for _, p := range all {
		for _, ind := range p.inds {
			b.add(p.feed, ind)
		}
	}
	x := b.build()
	in.idx.Store(x)
	in.files = stamps
	in.m.indicators.Reset()
	total := 0
	for i, f := range x.feeds {
		in.m.indicators.WithLabelValues(f).Set(float64(x.counts[i]))
		total += x.counts[i]
	}
	in.m.reloads.WithLabelValues("intel").Inc()
	in.log.Info("threat intel loaded", slog.Int("feeds", len(x.feeds)), slog.Int("indicators", total),
		slog.Duration("took", time.Since(start)))
}

func (in *intel) readFile(name string) ([]Indicator, int, string, error) {
	f, err := os.Open(filepath.Join(in.dir, name))
	if err != nil {
		return nil, 0, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, in.maxDoc+1))
	if err != nil {
		return nil, 0, "", err
	}
	if int64(len(data)) > in.maxDoc {
		return nil, 0, "", fmt.Errorf("larger than %d bytes", in.maxDoc)
	}
	return parseFeed(name, data)
}

// fetch downloads the URL feeds (conditionally, with ETag and
// Last-Modified) and rebuilds the index if one changed. A failed download
// keeps the last good copy.
func (in *intel) fetch(ctx context.Context) error {
	if len(in.urls) == 0 {
		return nil
	}
	var errs []error
	changed := false
	for _, u := range in.urls {
		in.mu.Lock()
		prev := in.remote[u]
		in.mu.Unlock()
		next, err := in.fetchOne(ctx, u, prev)
		if err != nil {
			in.m.loadErrors.WithLabelValues("intel").Inc()
			in.log.Warn("threat intel feed not fetched", slog.String("url", vigil.RedactURL(u)), slog.Any("error", err))
			errs = append(errs, err)
			continue
		}
		if next != prev {
			in.mu.Lock()
			in.remote[u] = next
			in.mu.Unlock()
			changed = true
		}
	}
	if changed {
		in.mu.Lock()
		in.rebuildLocked(in.files)
		in.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (in *intel) fetchOne(ctx context.Context, rawURL string, prev *remoteFeed) (*remoteFeed, error) {
	// Errors name the feed without the key a query or user info may hold.
	shown := vigil.RedactURL(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, vigil.RedactURLError(err)
	}
	if prev != nil {
		if prev.etag != "" {
			req.Header.Set("If-None-Match", prev.etag)
		}
		if prev.lastModified != "" {
			req.Header.Set("If-Modified-Since", prev.lastModified)
		}
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, vigil.RedactURLError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && prev != nil {
		return prev, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", shown, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, in.maxDoc+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	if int64(len(data)) > in.maxDoc {
		return nil, fmt.Errorf("%s: larger than %d bytes", shown, in.maxDoc)
	}
	name := feedNameOfURL(rawURL)
	parseName := name
	if strings.Contains(resp.Header.Get("Content-Type"), "csv") {
		parseName += ".csv"
	}
	inds, _, _, err := parseFeed(parseName, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	return &remoteFeed{name: name, inds: inds, etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")}, nil
}

// feedNameOfURL names a URL feed by host and path (no query: it may hold
// an API key).
func feedNameOfURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host + u.Path
}
