package enrich

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-soc/vigil"
)

// dnsServer is a real DNS server on 127.0.0.1 (UDP) with a small zone; it
// counts the queries it receives. A silent one receives and never answers.
type dnsServer struct {
	addr    string
	queries atomic.Int64
	silent  bool
}

func startDNS(tb testing.TB, silent bool) *dnsServer {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &dnsServer{addr: pc.LocalAddr().String(), silent: silent}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve), NotifyStartedFunc: func() { close(started) }}
	go srv.ActivateAndServe()
	<-started
	tb.Cleanup(func() { srv.Shutdown() })
	return s
}

func (s *dnsServer) serve(w dns.ResponseWriter, r *dns.Msg) {
	s.queries.Add(1)
	if s.silent || len(r.Question) != 1 {
		return
	}
	q := r.Question[0]
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	rr := func(s string) {
		x, err := dns.NewRR(s)
		if err != nil {
			panic(err)
		}
		m.Answer = append(m.Answer, x)
	}
	switch {
	case q.Qtype == dns.TypePTR && q.Name == "142.69.2.81.in-addr.arpa.":
		rr("142.69.2.81.in-addr.arpa. 3600 IN PTR host-81-2-69-142.Example.NET.")
	case q.Qtype == dns.TypePTR && q.Name == "112.20.160.89.in-addr.arpa.":
		rr("112.20.160.89.in-addr.arpa. 3600 IN PTR h-89-160-20-112.bredband2.example.")
	case q.Name == "www.example.com." && q.Qtype == dns.TypeA:
		rr("www.example.com. 300 IN CNAME www.example.com-v4.edgesuite.example.")
		rr("www.example.com-v4.edgesuite.example. 300 IN A 93.184.215.14")
	case q.Name == "www.example.com." && q.Qtype == dns.TypeAAAA:
		rr("www.example.com. 300 IN AAAA 2606:2800:21f:cb07:6820:80da:af6b:8b2c")
	case q.Name == "servfail.example.com.":
		m.Rcode = dns.RcodeServerFailure
	case q.Qtype == dns.TypePTR || q.Name == "www.example.com." || q.Name == "example.com.":
		// NOERROR, no data.
	default:
		m.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(m)
}

func dnsOnly(rate, ttlHours int) *vigil.EnrichmentSettings {
	return settings(func(s *vigil.EnrichmentSettings) {
		s.GeoIPEnabled, s.ThreatIntelEnabled, s.WhoisEnabled = false, false, false
		s.DNSEnabled = true
		s.RateLimit = rate
		s.CacheTTLHours = ttlHours
	})
}

func TestDNSLookupsEnrichStoredArtifact(t *testing.T) {
	srv := startDNS(t, false)
	h := newHarness(t, Config{DNSServers: []string{srv.addr}, GeoIPCityDB: cityDB})
	h.start()
	s := dnsOnly(60, 24)
	s.GeoIPEnabled = true
	res := h.ingest(s, nodes(ip("81.2.69.142"), domain("WWW.Example.com"), domain("nx.example.com")))
	if res[0].Pending != 3 {
		t.Fatalf("pending = %d, want 3", res[0].Pending)
	}
	id := res[0].ArtifactID
	waitFor(t, "dns enrichment stored", func() bool {
		st := h.stored(id)
		return len(st["81.2.69.142"].DNS) > 0 && len(st["WWW.Example.com"].DNS) > 0 && len(st["nx.example.com"].DNS) > 0
	})
	st := h.stored(id)
	checks := map[string]string{
		"81.2.69.142":     `{"ptr":["host-81-2-69-142.example.net"]}`,
		"WWW.Example.com": `{"a":["93.184.215.14"],"aaaa":["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}`,
		"nx.example.com":  `{"status":"NXDOMAIN"}`,
	}
	for k, want := range checks {
		if got := string(st[k].DNS); got != want {
			t.Errorf("%s dns = %s, want %s", k, got, want)
		}
	}
	// The background rebuild keeps the local providers' part.
	if st["81.2.69.142"].Geo == nil || st["81.2.69.142"].Geo.CityName != "London" {
		t.Errorf("geo lost in the rebuilt enrichment: %+v", st["81.2.69.142"])
	}
	// PTR 1 + (A, AAAA) × 2 domains.
	if n := srv.queries.Load(); n != 5 {
		t.Errorf("server got %d queries, want 5", n)
	}
	if n := counter(t, h.e.m.lookups, ProviderDNS); n != 3 {
		t.Errorf("dns look-ups metric = %v, want 3", n)
	}
}

func TestDNSCacheAvoidsRepeatAndExpires(t *testing.T) {
	srv := startDNS(t, false)
	h := newHarness(t, Config{DNSServers: []string{srv.addr}})
	h.start()
	s := dnsOnly(60, 1)

	first := h.ingest(s, nodes(ip("81.2.69.142")))
	waitFor(t, "first look-up stored", func() bool { return len(h.stored(first[0].ArtifactID)["81.2.69.142"].DNS) > 0 })
	if n := srv.queries.Load(); n != 1 {
		t.Fatalf("queries = %d, want 1", n)
	}

	// Same address again within the TTL: answered inline from the cache.
	second := h.ingest(s, nodes(ip("81.2.69.142")))
	if second[0].Pending != 0 {
		t.Fatalf("second artifact queued %d look-ups, want the cache to answer", second[0].Pending)
	}
	if got := string(decodeEnrichment(t, second[0].Enrichment)["81.2.69.142"].DNS); got != `{"ptr":["host-81-2-69-142.example.net"]}` {
		t.Errorf("cached dns = %s", got)
	}
	if n := counter(t, h.e.m.cacheHits, ProviderDNS); n != 1 {
		t.Errorf("cache hits = %v, want 1", n)
	}

	// The cache lives in the store: a second Enricher (another worker
	// process, or this one after a restart) finds the entry there in the
	// background, without a query.
	other, err := New(Config{DNSServers: []string{srv.addr}, Now: h.clock.Now}, h.store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	other.lookups.maxWait = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer other.Close()
	defer cancel()
	other.Start(ctx)
	art := &vigil.Artifact{ID: "other", Source: "test", Raw: "x", Timestamp: h.clock.Now(), CreatedAt: h.clock.Now()}
	third := other.Enrich(ctx, testOrg, s, []*vigil.Artifact{art}, [][]vigil.NodeRef{{ip("81.2.69.142")}})
	if err := h.store.InsertArtifacts(ctx, testOrg, []*vigil.Artifact{art}); err != nil {
		t.Fatal(err)
	}
	other.Submit(testOrg, third)
	waitFor(t, "enrichment from the store's cache", func() bool { return len(h.stored("other")["81.2.69.142"].DNS) > 0 })
	if n := counter(t, other.m.cacheHits, ProviderDNS); n != 1 {
		t.Errorf("store cache hits = %v, want 1", n)
	}
	if n := srv.queries.Load(); n != 1 {
		t.Errorf("queries = %d after a store cache hit, want 1", n)
	}

	// Past cache_ttl_hours the entry is stale: looked up again.
	h.clock.Advance(time.Hour + time.Minute)
	fourth := h.ingest(s, nodes(ip("81.2.69.142")))
	if fourth[0].Pending != 1 {
		t.Fatalf("after the TTL pending = %d, want 1", fourth[0].Pending)
	}
	waitFor(t, "second query", func() bool { return srv.queries.Load() == 2 })
	waitFor(t, "refreshed enrichment", func() bool { return len(h.stored(fourth[0].ArtifactID)["81.2.69.142"].DNS) > 0 })
}

func TestDNSRateLimitHolds(t *testing.T) {
	srv := startDNS(t, false)
	h := newHarness(t, Config{DNSServers: []string{srv.addr}, Workers: 3})
	h.start()
	s := dnsOnly(2, 24)
	addrs := []string{"81.2.69.142", "89.160.20.112", "216.160.83.56", "2.125.160.216", "175.16.199.1"}
	var lists [][]vigil.NodeRef
	for _, a := range addrs {
		lists = append(lists, nodes(ip(a)))
	}
	res := h.ingest(s, lists...)

	// Two look-ups go out at once; the third waits for the window.
	waitFor(t, "two queries and a rate-limited wait", func() bool {
		return srv.queries.Load() == 2 && counter(t, h.e.m.rateLimited, ProviderDNS) == 1
	})
	scans := h.e.lookups.scans.Load()
	waitFor(t, "workers to look again", func() bool { return h.e.lookups.scans.Load() > scans+3 })
	if n := srv.queries.Load(); n != 2 {
		t.Fatalf("queries within the minute = %d, want 2", n)
	}
	if n := gauge(t, h.e.m.queued); n != 3 {
		t.Errorf("queued = %v, want 3", n)
	}

	// A minute later two more may go.
	h.clock.Advance(time.Minute)
	waitFor(t, "two more queries", func() bool { return srv.queries.Load() == 4 })
	scans = h.e.lookups.scans.Load()
	waitFor(t, "workers to look again", func() bool { return h.e.lookups.scans.Load() > scans+3 })
	if n := srv.queries.Load(); n != 4 {
		t.Fatalf("queries within the second minute = %d, want 4", n)
	}
	h.clock.Advance(time.Minute)
	waitFor(t, "the last query", func() bool { return srv.queries.Load() == 5 })
	waitFor(t, "all artifacts enriched", func() bool {
		for i, a := range addrs {
			if _, ok := h.stored(res[i].ArtifactID)[a]; !ok {
				return false
			}
		}
		return true
	})
	if n := gauge(t, h.e.m.queued); n != 0 {
		t.Errorf("queued = %v, want 0", n)
	}
}

func TestDNSPausedThenResumed(t *testing.T) {
	srv := startDNS(t, false)
	h := newHarness(t, Config{DNSServers: []string{srv.addr}, SettingsRefresh: 20 * time.Millisecond})
	h.start()
	ctx := context.Background()
	paused := dnsOnly(0, 24)
	if err := h.store.PutEnrichmentSettings(ctx, testOrg, paused); err != nil {
		t.Fatal(err)
	}
	res := h.ingest(paused, nodes(ip("81.2.69.142")))
	if res[0].Pending != 1 {
		t.Fatalf("pending = %d, want 1 (paused look-ups wait, they are not dropped)", res[0].Pending)
	}
	scans := h.e.lookups.scans.Load()
	waitFor(t, "workers to look", func() bool { return h.e.lookups.scans.Load() > scans+3 })
	if n := srv.queries.Load(); n != 0 {
		t.Fatalf("rate_limit 0 sent %d queries", n)
	}
	// Raising the limit through the settings (not through a new
	// artifact) resumes the queue.
	if err := h.store.PutEnrichmentSettings(ctx, testOrg, dnsOnly(60, 24)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "query after resume", func() bool { return srv.queries.Load() == 1 })
	waitFor(t, "enrichment", func() bool { return len(h.stored(res[0].ArtifactID)["81.2.69.142"].DNS) > 0 })
}

func TestDNSDisabledDropsQueued(t *testing.T) {
	srv := startDNS(t, false)
	h := newHarness(t, Config{DNSServers: []string{srv.addr}})
	h.start()
	h.ingest(dnsOnly(0, 24), nodes(ip("81.2.69.142"), domain("www.example.com")))
	if n := gauge(t, h.e.m.queued); n != 2 {
		t.Fatalf("queued = %v, want 2", n)
	}
	// The next artifact of the org comes with DNS off: the queued look-ups
	// are dropped, and nothing is sent once the limit rises again.
	off := dnsOnly(60, 24)
	off.DNSEnabled = false
	h.ingest(off, nodes(ip("89.160.20.112")))
	waitFor(t, "queue emptied", func() bool { return gauge(t, h.e.m.queued) == 0 })
	h.e.noteSettings(context.Background(), testOrg, dnsOnly(60, 24))
	scans := h.e.lookups.scans.Load()
	waitFor(t, "workers to look", func() bool { return h.e.lookups.scans.Load() > scans+3 })
	if n := srv.queries.Load(); n != 0 {
		t.Errorf("disabled provider sent %d queries", n)
	}
}

func TestDNSTimeoutIsNegativeCached(t *testing.T) {
	srv := startDNS(t, true)
	h := newHarness(t, Config{DNSServers: []string{srv.addr}, DNSTimeout: 100 * time.Millisecond, GeoIPCityDB: cityDB})
	h.start()
	s := dnsOnly(60, 24)
	s.GeoIPEnabled = true

	start := time.Now()
	first := h.ingest(s, nodes(ip("81.2.69.142")))
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("ingest took %v with a dead resolver; Enrich must not wait for it", d)
	}
	waitFor(t, "failure counted", func() bool { return counter(t, h.e.m.failures, ProviderDNS) == 1 })
	waitFor(t, "artifact rebuilt", func() bool { return gauge(t, h.e.m.queued) == 0 })
	st := h.stored(first[0].ArtifactID)
	if len(st["81.2.69.142"].DNS) != 0 || st["81.2.69.142"].Geo == nil {
		t.Errorf("after a DNS timeout the artifact has %+v; want geo and no dns", st["81.2.69.142"])
	}

	// Within the negative TTL the failure is not retried.
	second := h.ingest(s, nodes(ip("81.2.69.142")))
	if second[0].Pending != 0 {
		t.Errorf("failed look-up retried within the negative TTL")
	}
	if n := srv.queries.Load(); n != 1 {
		t.Errorf("queries = %d, want 1", n)
	}
	// After it, it is.
	h.clock.Advance(11 * time.Minute)
	third := h.ingest(s, nodes(ip("81.2.69.142")))
	if third[0].Pending != 1 {
		t.Errorf("failed look-up not retried after the negative TTL")
	}
	waitFor(t, "retry", func() bool { return srv.queries.Load() == 2 })
}

func TestDNSServerFailureAndFallback(t *testing.T) {
	good := startDNS(t, false)
	dead := startDNS(t, true)
	h := newHarness(t, Config{DNSServers: []string{dead.addr, good.addr}, DNSTimeout: 100 * time.Millisecond})
	h.start()
	res := h.ingest(dnsOnly(60, 24), nodes(ip("81.2.69.142"), domain("servfail.example.com")))
	waitFor(t, "fallback answer", func() bool { return len(h.stored(res[0].ArtifactID)["81.2.69.142"].DNS) > 0 })
	waitFor(t, "servfail counted", func() bool { return counter(t, h.e.m.failures, ProviderDNS) == 1 })
	if _, ok := h.stored(res[0].ArtifactID)["servfail.example.com"]; ok {
		t.Errorf("SERVFAIL produced an enrichment")
	}
}

func TestResolverAnswers(t *testing.T) {
	srv := startDNS(t, false)
	r := newResolver([]string{srv.addr}, time.Second)
	ctx := context.Background()
	tests := []struct{ key, want string }{
		{"81.2.69.142", `{"ptr":["host-81-2-69-142.example.net"]}`},
		{"89.160.20.112", `{"ptr":["h-89-160-20-112.bredband2.example"]}`},
		{"216.160.83.56", `{}`},
		{"www.example.com", `{"a":["93.184.215.14"],"aaaa":["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}`},
		{"nope.example.org", `{"status":"NXDOMAIN"}`},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := r.lookup(ctx, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := r.lookup(ctx, "servfail.example.com"); err == nil {
		t.Errorf("SERVFAIL: no error")
	}
}

func TestNewResolverServers(t *testing.T) {
	r := newResolver([]string{"192.0.2.53", "[2001:db8::53]", "192.0.2.54:5353", " "}, time.Second)
	want := []string{"192.0.2.53:53", "[2001:db8::53]:53", "192.0.2.54:5353"}
	if !slices.Equal(r.servers, want) {
		t.Errorf("servers = %v, want %v", r.servers, want)
	}
	if len(defaultDNSServers()) == 0 {
		t.Errorf("no default servers")
	}
}
