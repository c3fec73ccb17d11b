package enrich

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

const (
	testOrg   = "org-test"
	geoipDir  = "../../../shared/datasets/geoip"
	cityDB    = geoipDir + "/GeoLite2-City-Test.mmdb"
	asnDB     = geoipDir + "/GeoLite2-ASN-Test.mmdb"
	countryDB = geoipDir + "/GeoIP2-Country-Test.mmdb"
	intelDir  = "testdata/intel"
)

// fakeClock is the Enricher's clock in tests: cache ages and rate-limit
// windows move only when the test says so.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type harness struct {
	t     testing.TB
	e     *Enricher
	store *sqlite.Store
	clock *fakeClock
	seq   int
}

// newHarness builds an Enricher over a fresh SQLite store. cfg.Now is set
// to a fake clock unless given; DNS defaults to an address nothing listens
// on, so that a test that did not mean to send DNS queries fails visibly.
func newHarness(tb testing.TB, cfg Config) *harness {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "v.db"), sqlite.Options{})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	h := &harness{t: tb, store: st, clock: newFakeClock()}
	if cfg.Now == nil {
		cfg.Now = h.clock.Now
	}
	if len(cfg.DNSServers) == 0 {
		cfg.DNSServers = []string{"127.0.0.1:9"}
	}
	if cfg.DNSTimeout == 0 {
		cfg.DNSTimeout = 300 * time.Millisecond
	}
	e, err := New(cfg, st, prometheus.NewRegistry(), nil)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { e.Close() })
	e.lookups.maxWait = 20 * time.Millisecond // idle workers look often: tests move the clock
	h.e = e
	return h
}

// start runs the background workers until the test ends.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	h.e.Start(ctx)
}

// settings returns the default settings with mod applied.
func settings(mod func(*vigil.EnrichmentSettings)) *vigil.EnrichmentSettings {
	s := vigil.DefaultEnrichmentSettings()
	if mod != nil {
		mod(&s)
	}
	return &s
}

// ingest stores one artifact per node list, enriches them with s and
// queues their look-ups, as the pipeline does.
func (h *harness) ingest(s *vigil.EnrichmentSettings, nodeLists ...[]vigil.NodeRef) []Result {
	h.t.Helper()
	ctx := context.Background()
	arts := make([]*vigil.Artifact, len(nodeLists))
	for i := range nodeLists {
		h.seq++
		arts[i] = &vigil.Artifact{
			ID: fmt.Sprintf("art-%04d", h.seq), OrgID: testOrg, Source: "test", Raw: fmt.Sprintf("line %d", h.seq),
			Timestamp: h.clock.Now().Add(time.Duration(h.seq) * time.Second), CreatedAt: h.clock.Now(),
		}
	}
	res := h.e.Enrich(ctx, testOrg, s, arts, nodeLists)
	if err := h.store.InsertArtifacts(ctx, testOrg, arts); err != nil {
		h.t.Fatalf("insert: %v", err)
	}
	for i, a := range arts {
		if err := h.store.SetArtifactEnrichment(ctx, testOrg, a.ID, res[i].Enrichment); err != nil {
			h.t.Fatalf("set enrichment: %v", err)
		}
	}
	h.e.Submit(testOrg, res)
	return res
}

// stored returns the stored enrichment of an artifact, by node value.
func (h *harness) stored(id string) map[string]nodeInfo {
	h.t.Helper()
	arts, _, err := h.store.SearchArtifacts(context.Background(), testOrg, vigil.ArtifactFilter{Page: vigil.Page{Limit: vigil.MaxLimit}})
	if err != nil {
		h.t.Fatalf("search: %v", err)
	}
	for _, a := range arts {
		if a.ID == id {
			return decodeEnrichment(h.t, a.Enrichment)
		}
	}
	h.t.Fatalf("artifact %s not stored", id)
	return nil
}

func decodeEnrichment(tb testing.TB, raw json.RawMessage) map[string]nodeInfo {
	tb.Helper()
	var m map[string]nodeInfo
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("enrichment %s: %v", raw, err)
	}
	return m
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// counter reads one labelled value of a counter vector.
func counter(tb testing.TB, vec *prometheus.CounterVec, label string) float64 {
	tb.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(label).Write(&m); err != nil {
		tb.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func gauge(tb testing.TB, g prometheus.Gauge) float64 {
	tb.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		tb.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func ip(v string) vigil.NodeRef     { return vigil.NodeRef{Type: vigil.NodeIP, Value: v} }
func domain(v string) vigil.NodeRef { return vigil.NodeRef{Type: vigil.NodeDomain, Value: v} }
func urlNode(v string) vigil.NodeRef {
	return vigil.NodeRef{Type: vigil.NodeURL, Value: v}
}
func hash(v string) vigil.NodeRef { return vigil.NodeRef{Type: vigil.NodeHash, Value: v} }
func nodes(refs ...vigil.NodeRef) []vigil.NodeRef {
	return refs
}

func TestEnrichLocalProviders(t *testing.T) {
	h := newHarness(t, Config{GeoIPCityDB: cityDB, GeoIPASNDB: asnDB, ThreatIntelDir: intelDir})
	s := settings(func(s *vigil.EnrichmentSettings) { s.DNSEnabled = false })
	res := h.ingest(s,
		nodes(ip("89.160.20.112"), ip("192.0.2.77"), domain("www.evil.example"), vigil.NodeRef{Type: vigil.NodeUser, Value: "root"}),
		nodes(hash("44D88612FEA8A8F36DE82E1278ABB02F")),
	)
	got := decodeEnrichment(t, res[0].Enrichment)
	want := nodeInfo{
		Geo: &Geo{CountryISOCode: "SE", CityName: "Linköping", Location: &Location{Lat: 58.4167, Lon: 15.6167}},
		ASN: &ASN{Number: 29518, Organization: "Bredband2 AB"},
	}
	if g := got["89.160.20.112"]; !jsonEqual(g, want) {
		t.Errorf("89.160.20.112 = %s, want %s", mustJSON(g), mustJSON(want))
	}
	if _, ok := got["root"]; ok {
		t.Errorf("user node enriched: %s", res[0].Enrichment)
	}
	if len(res[0].Hits) != 2 {
		t.Fatalf("hits = %+v, want 2", res[0].Hits)
	}
	wantHits := []vigil.IntelHit{
		{Feed: "c2.csv", Indicator: "192.0.2.77", IndicatorType: "ip", NodeType: vigil.NodeIP, NodeValue: "192.0.2.77"},
		{Feed: "blocklist.txt", Indicator: "evil.example", IndicatorType: "domain", NodeType: vigil.NodeDomain, NodeValue: "www.evil.example"},
	}
	for i, w := range wantHits {
		if res[0].Hits[i] != w {
			t.Errorf("hit %d = %+v, want %+v", i, res[0].Hits[i], w)
		}
	}
	if len(res[1].Hits) != 1 || res[1].Hits[0].Indicator != "44d88612fea8a8f36de82e1278abb02f" || res[1].Hits[0].IndicatorType != "md5" {
		t.Errorf("hash hits = %+v", res[1].Hits)
	}
	// The artifact carries the enrichment too, and nothing is pending with
	// DNS and RDAP off.
	for _, r := range res {
		if r.Pending != 0 {
			t.Errorf("%s: %d look-ups pending with outbound providers off", r.ArtifactID, r.Pending)
		}
	}
	if st := h.stored(res[0].ArtifactID); st["192.0.2.77"].Intel[0].Feed != "c2.csv" {
		t.Errorf("stored enrichment = %+v", st)
	}
	if n := counter(t, h.e.m.intelHits, "c2.csv"); n != 1 {
		t.Errorf("intel hits metric c2.csv = %v, want 1", n)
	}
}

func TestSettingsSwitches(t *testing.T) {
	h := newHarness(t, Config{GeoIPCityDB: cityDB, GeoIPASNDB: asnDB, ThreatIntelDir: intelDir})
	ns := nodes(ip("81.2.69.142"), ip("198.51.100.23"), domain("www.example.com"))
	tests := []struct {
		name                    string
		mod                     func(*vigil.EnrichmentSettings)
		geo, intel              bool
		pendingDNS, pendingRDAP int
	}{
		{"all on", func(s *vigil.EnrichmentSettings) { s.WhoisEnabled = true }, true, true, 2, 2},
		{"geoip off", func(s *vigil.EnrichmentSettings) { s.GeoIPEnabled = false }, false, true, 2, 0},
		{"threat intel off", func(s *vigil.EnrichmentSettings) { s.ThreatIntelEnabled = false }, true, false, 2, 0},
		{"dns off", func(s *vigil.EnrichmentSettings) { s.DNSEnabled = false; s.WhoisEnabled = true }, true, true, 0, 2},
		{"all off", func(s *vigil.EnrichmentSettings) {
			s.GeoIPEnabled, s.DNSEnabled, s.WhoisEnabled, s.ThreatIntelEnabled = false, false, false, false
		}, false, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arts := []*vigil.Artifact{{ID: "a-" + tt.name}}
			res := h.e.Enrich(context.Background(), testOrg, settings(tt.mod), arts, [][]vigil.NodeRef{ns})
			got := decodeEnrichment(t, res[0].Enrichment)
			if has := got["81.2.69.142"].Geo != nil; has != tt.geo {
				t.Errorf("geo present = %v, want %v (%s)", has, tt.geo, res[0].Enrichment)
			}
			if has := len(res[0].Hits) > 0; has != tt.intel {
				t.Errorf("intel hits = %+v, want any: %v", res[0].Hits, tt.intel)
			}
			var dns, rdap int
			for _, l := range res[0].pending {
				switch l.provider {
				case ProviderDNS:
					dns++
				case ProviderRDAP:
					rdap++
				}
			}
			// DNS: 81.2.69.142 and www.example.com (198.51.100.23 is a
			// documentation address); RDAP: the address and example.com.
			if dns != tt.pendingDNS || rdap != tt.pendingRDAP {
				t.Errorf("pending dns %d rdap %d, want %d %d (%+v)", dns, rdap, tt.pendingDNS, tt.pendingRDAP, res[0].pending)
			}
			if string(arts[0].Enrichment) != string(res[0].Enrichment) {
				t.Errorf("artifact enrichment not set")
			}
		})
	}
}

func TestPrivateAndInternalAddressesNotSentOut(t *testing.T) {
	h := newHarness(t, Config{GeoIPCityDB: cityDB, GeoIPASNDB: asnDB})
	s := settings(func(s *vigil.EnrichmentSettings) {
		s.WhoisEnabled = true
		s.InternalNetworks = append(s.InternalNetworks, "81.2.69.0/24") // the org's own public range
	})
	addrs := []string{"10.1.2.3", "172.16.5.4", "192.168.1.1", "100.64.0.1", "127.0.0.1", "169.254.1.1",
		"192.0.2.10", "198.51.100.10", "203.0.113.5", "224.0.0.251", "255.255.255.255", "0.0.0.0",
		"::1", "fe80::1", "fd00::1", "2001:db8::1", "ff02::1", "81.2.69.142"}
	var ns []vigil.NodeRef
	for _, a := range addrs {
		ns = append(ns, ip(a))
	}
	ns = append(ns, domain("printer.corp.local"), domain("wpad"))
	res := h.e.Enrich(context.Background(), testOrg, s, []*vigil.Artifact{{ID: "a1"}}, [][]vigil.NodeRef{ns})
	if res[0].Pending != 0 {
		t.Errorf("pending look-ups %+v, want none", res[0].pending)
	}
	got := decodeEnrichment(t, res[0].Enrichment)
	if g := got["81.2.69.142"].Geo; g == nil || g.CityName != "London" {
		t.Errorf("an internal public address is still located (local look-up): %s", res[0].Enrichment)
	}
	if len(got) != 1 {
		t.Errorf("enrichment %s, want only 81.2.69.142", res[0].Enrichment)
	}
	if n := counter(t, h.e.m.lookups, ProviderGeoIP); n != 1 {
		t.Errorf("geoip look-ups = %v, want 1 (private addresses are not looked up)", n)
	}
}

func TestQueueFullDropsLookups(t *testing.T) {
	h := newHarness(t, Config{QueueSize: 2})
	// No workers: the queue only fills.
	res := h.e.Enrich(context.Background(), testOrg, settings(nil),
		[]*vigil.Artifact{{ID: "a1"}, {ID: "a2"}, {ID: "a3"}},
		[][]vigil.NodeRef{{ip("81.2.69.142")}, {ip("89.160.20.112")}, {ip("1.128.0.1")}})
	if dropped := h.e.Submit(testOrg, res); dropped != 1 {
		t.Errorf("dropped = %d, want 1", dropped)
	}
	if n := counter(t, h.e.m.dropped, ProviderDNS); n != 1 {
		t.Errorf("dropped metric = %v, want 1", n)
	}
	if n := gauge(t, h.e.m.queued); n != 2 {
		t.Errorf("queue length = %v, want 2", n)
	}
}

func TestEnrichWithoutDatabasesOrFeeds(t *testing.T) {
	h := newHarness(t, Config{})
	s := settings(func(s *vigil.EnrichmentSettings) { s.DNSEnabled = false })
	res := h.e.Enrich(context.Background(), testOrg, s, []*vigil.Artifact{{ID: "a1"}, {ID: "a2"}},
		[][]vigil.NodeRef{{ip("81.2.69.142"), domain("evil.example")}})
	for _, r := range res {
		if string(r.Enrichment) != "{}" {
			t.Errorf("%s: enrichment %s, want {}", r.ArtifactID, r.Enrichment)
		}
	}
}

func TestEnrichLoadsSettingsWhenNil(t *testing.T) {
	h := newHarness(t, Config{GeoIPCityDB: cityDB})
	ctx := context.Background()
	s := settings(func(s *vigil.EnrichmentSettings) { s.GeoIPEnabled = false; s.DNSEnabled = false })
	if err := h.store.PutEnrichmentSettings(ctx, testOrg, s); err != nil {
		t.Fatal(err)
	}
	res := h.e.Enrich(ctx, testOrg, nil, []*vigil.Artifact{{ID: "a1"}}, [][]vigil.NodeRef{{ip("81.2.69.142")}})
	if string(res[0].Enrichment) != "{}" {
		t.Errorf("enrichment %s with geoip off in the stored settings", res[0].Enrichment)
	}
}

func TestNewErrors(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "v.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bad := filepath.Join(t.TempDir(), "bad.mmdb")
	if err := os.WriteFile(bad, []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]Config{
		"missing city db":  {GeoIPCityDB: "/nonexistent/city.mmdb"},
		"corrupt asn db":   {GeoIPASNDB: bad},
		"missing feed dir": {ThreatIntelDir: "/nonexistent/feeds"},
		"bad rdap url":     {RDAPBaseURL: "ftp://rdap.example"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg, st, nil, nil); err == nil {
				t.Errorf("New succeeded")
			}
		})
	}
}

func jsonEqual(a, b any) bool { return mustJSON(a) == mustJSON(b) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
