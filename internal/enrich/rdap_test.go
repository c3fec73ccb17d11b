package enrich

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// RDAP answers shaped after ARIN's (IP network, with the cidr0 extension)
// and Verisign's (.com domain) responses, RFC 9083.
const rdapIPNetwork = `{
  "rdapConformance": ["nro_rdap_profile_0", "rdap_level_0", "cidr0"],
  "notices": [{"title": "Terms of Service", "description": ["By using the RDAP service you agree to the terms."],
    "links": [{"value": "https://rdap.test/ip/81.2.69.142", "rel": "terms-of-service", "type": "text/html", "href": "https://rdap.test/tos"}]}],
  "handle": "NET-81-2-69-0-1",
  "startAddress": "81.2.69.0",
  "endAddress": "81.2.69.255",
  "ipVersion": "v4",
  "name": "EXAMPLE-LON-NET",
  "type": "ASSIGNED PA",
  "country": "GB",
  "parentHandle": "NET-81-0-0-0-0",
  "cidr0_cidrs": [{"v4prefix": "81.2.69.0", "length": 24}],
  "status": ["active"],
  "objectClassName": "ip network",
  "events": [
    {"eventAction": "registration", "eventDate": "2003-04-11T09:12:00Z"},
    {"eventAction": "last changed", "eventDate": "2021-06-01T10:00:00Z"}
  ],
  "entities": [
    {
      "objectClassName": "entity",
      "handle": "EXMPL-ORG",
      "roles": ["registrant"],
      "vcardArray": ["vcard", [
        ["version", {}, "text", "4.0"],
        ["fn", {}, "text", "Example Hosting Ltd"],
        ["org", {}, "text", "Example Hosting Ltd"],
        ["kind", {}, "text", "org"],
        ["adr", {"label": "1 Example Street\nLondon\nGB"}, "text", ["", "", "", "", "", "", ""]]
      ]],
      "entities": [
        {"objectClassName": "entity", "handle": "ABUSE-EXMPL", "roles": ["abuse"],
         "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "Abuse desk"],
           ["email", {}, "text", "abuse@hosting.example"]]]}
      ]
    }
  ],
  "links": [{"value": "https://rdap.test/ip/81.2.69.142", "rel": "self", "type": "application/rdap+json", "href": "https://rdap.test/ip/81.2.69.0"}],
  "port43": "whois.example.net"
}`

const rdapDomain = `{
  "objectClassName": "domain",
  "handle": "2336799_DOMAIN_COM-VRSN",
  "ldhName": "EXAMPLE.COM",
  "links": [{"value": "https://rdap.test/domain/EXAMPLE.COM", "rel": "self", "href": "https://rdap.test/domain/EXAMPLE.COM", "type": "application/rdap+json"}],
  "status": ["client delete prohibited", "client transfer prohibited", "client update prohibited"],
  "entities": [
    {
      "objectClassName": "entity",
      "handle": "376",
      "roles": ["registrar"],
      "publicIds": [{"type": "IANA Registrar ID", "identifier": "376"}],
      "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "RESERVED-Internet Assigned Numbers Authority"]]],
      "entities": [
        {"objectClassName": "entity", "roles": ["abuse"],
         "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", ""], ["tel", {"type": "voice"}, "uri", "tel:+1.3108239358"], ["email", {}, "text", "abuse@iana.example"]]]}
      ]
    },
    {
      "objectClassName": "entity",
      "roles": ["registrant"],
      "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "Domain Administrator"], ["org", {}, "text", "Internet Assigned Numbers Authority"]]]
    }
  ],
  "events": [
    {"eventAction": "registration", "eventDate": "1995-08-14T04:00:00Z"},
    {"eventAction": "expiration", "eventDate": "2026-08-13T04:00:00Z"},
    {"eventAction": "last update of RDAP database", "eventDate": "2026-02-28T10:00:00Z"}
  ],
  "secureDNS": {"delegationSigned": true, "dsData": [{"keyTag": 370, "algorithm": 13, "digestType": 2, "digest": "BE74359954660069D5C63D200C39F5603827D7DD02B56F120EE9F3A86764247C"}]},
  "nameservers": [
    {"objectClassName": "nameserver", "ldhName": "A.IANA-SERVERS.NET"},
    {"objectClassName": "nameserver", "ldhName": "B.IANA-SERVERS.NET"}
  ],
  "rdapConformance": ["rdap_level_0", "icann_rdap_technical_implementation_guide_0", "icann_rdap_response_profile_0"],
  "notices": [{"title": "Terms of Use", "description": ["Service subject to Terms of Use."]}]
}`

// rdapServer serves good answers for 81.2.69.142 and example.com, invalid
// JSON for 89.160.20.112, a 500 for 216.160.83.56, a 404 for
// unregistered.com, and never answers garbage.com in time.
type rdapServer struct {
	*httptest.Server
	requests atomic.Int64
	paths    chan string
}

func startRDAP(tb testing.TB) *rdapServer {
	tb.Helper()
	s := &rdapServer{paths: make(chan string, 100)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		select {
		case s.paths <- r.URL.Path:
		default:
		}
		w.Header().Set("Content-Type", "application/rdap+json")
		switch strings.ToLower(r.URL.Path) {
		case "/rdap/ip/81.2.69.142":
			w.Write([]byte(rdapIPNetwork))
		case "/rdap/domain/example.com":
			w.Write([]byte(rdapDomain))
		case "/rdap/ip/89.160.20.112":
			w.Write([]byte(`{"objectClassName": "ip network", "handle": `))
		case "/rdap/ip/216.160.83.56":
			http.Error(w, "internal error", http.StatusInternalServerError)
		case "/rdap/domain/garbage.com":
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"errorCode": 404, "title": "Not Found"}`))
		}
	}))
	tb.Cleanup(s.Close)
	return s
}

func rdapOnly(rate int) *vigil.EnrichmentSettings {
	return settings(func(s *vigil.EnrichmentSettings) {
		s.GeoIPEnabled, s.ThreatIntelEnabled, s.DNSEnabled = false, false, false
		s.WhoisEnabled = true
		s.RateLimit = rate
	})
}

func TestRDAPEnrichesNetworksAndDomains(t *testing.T) {
	srv := startRDAP(t)
	h := newHarness(t, Config{RDAPBaseURL: srv.URL + "/rdap"})
	h.start()
	res := h.ingest(rdapOnly(60), nodes(ip("81.2.69.142"), domain("www.example.com"), domain("unregistered.com")))
	id := res[0].ArtifactID
	waitFor(t, "rdap enrichment", func() bool {
		st := h.stored(id)
		return st["81.2.69.142"].RDAP != nil && st["www.example.com"].RDAP != nil && st["unregistered.com"].RDAP != nil
	})
	st := h.stored(id)
	created := time.Date(2003, 4, 11, 9, 12, 0, 0, time.UTC)
	age := int(h.clock.Now().Sub(created) / (24 * time.Hour))
	wantIP := RDAPInfo{Handle: "NET-81-2-69-0-1", Name: "EXAMPLE-LON-NET", CIDR: []string{"81.2.69.0/24"}, Country: "GB",
		Registrant: "Example Hosting Ltd", Created: &created, AgeDays: &age}
	if !jsonEqual(st["81.2.69.142"].RDAP, wantIP) {
		t.Errorf("ip rdap = %s\nwant %s", mustJSON(st["81.2.69.142"].RDAP), mustJSON(wantIP))
	}
	dc := time.Date(1995, 8, 14, 4, 0, 0, 0, time.UTC)
	de := time.Date(2026, 8, 13, 4, 0, 0, 0, time.UTC)
	dage := int(h.clock.Now().Sub(dc) / (24 * time.Hour))
	wantDomain := RDAPInfo{Domain: "example.com", Handle: "2336799_DOMAIN_COM-VRSN",
		Registrar: "RESERVED-Internet Assigned Numbers Authority", Registrant: "Internet Assigned Numbers Authority",
		Created: &dc, Expires: &de, AgeDays: &dage}
	if !jsonEqual(st["www.example.com"].RDAP, wantDomain) {
		t.Errorf("domain rdap = %s\nwant %s", mustJSON(st["www.example.com"].RDAP), mustJSON(wantDomain))
	}
	if !st["unregistered.com"].RDAP.NotFound {
		t.Errorf("404 domain = %+v, want not_found", st["unregistered.com"].RDAP)
	}
	// The domain node asked for its registrable domain.
	seen := map[string]bool{}
	for len(srv.paths) > 0 {
		seen[<-srv.paths] = true
	}
	if !seen["/rdap/domain/example.com"] || !seen["/rdap/ip/81.2.69.142"] {
		t.Errorf("paths = %v", seen)
	}
}

func TestRDAPGarbageAndTimeouts(t *testing.T) {
	srv := startRDAP(t)
	h := newHarness(t, Config{RDAPBaseURL: srv.URL + "/rdap", RDAPTimeout: 200 * time.Millisecond, GeoIPCityDB: cityDB})
	h.start()
	s := rdapOnly(60)
	s.GeoIPEnabled = true
	start := time.Now()
	res := h.ingest(s, nodes(ip("89.160.20.112"), ip("216.160.83.56"), domain("garbage.com"), ip("81.2.69.142")))
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("ingest took %v; Enrich must not wait for RDAP", d)
	}
	waitFor(t, "three failures", func() bool { return counter(t, h.e.m.failures, ProviderRDAP) == 3 })
	waitFor(t, "good answer", func() bool { return h.stored(res[0].ArtifactID)["81.2.69.142"].RDAP != nil })
	waitFor(t, "queue drained", func() bool { return gauge(t, h.e.m.queued) == 0 })
	st := h.stored(res[0].ArtifactID)
	for _, k := range []string{"89.160.20.112", "216.160.83.56", "garbage.com"} {
		if st[k].RDAP != nil {
			t.Errorf("%s: rdap %+v from a failed look-up", k, st[k].RDAP)
		}
	}
	if st["89.160.20.112"].Geo == nil {
		t.Errorf("geo lost on a failed RDAP look-up")
	}
	// Failures are negative-cached: not asked again for a while.
	before := srv.requests.Load()
	again := h.ingest(s, nodes(ip("89.160.20.112"), ip("216.160.83.56"), domain("garbage.com")))
	if again[0].Pending != 0 {
		t.Errorf("failed look-ups queued again: %+v", again[0].pending)
	}
	if srv.requests.Load() != before {
		t.Errorf("requests sent for negative-cached failures")
	}
}

func TestRDAPDisabledSendsNothing(t *testing.T) {
	srv := startRDAP(t)
	h := newHarness(t, Config{RDAPBaseURL: srv.URL + "/rdap"})
	h.start()
	s := rdapOnly(60)
	s.WhoisEnabled = false
	res := h.ingest(s, nodes(ip("81.2.69.142"), domain("example.com")))
	if res[0].Pending != 0 {
		t.Errorf("pending %+v with whois off", res[0].pending)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("requests = %d", n)
	}
}

func TestRangePrefixes(t *testing.T) {
	tests := []struct {
		start, end string
		want       string
	}{
		{"81.2.69.0", "81.2.69.255", "81.2.69.0/24"},
		{"10.0.0.0", "10.0.2.255", "10.0.0.0/23 10.0.2.0/24"},
		{"192.0.2.5", "192.0.2.5", "192.0.2.5/32"},
		{"0.0.0.0", "255.255.255.255", "0.0.0.0/0"},
		{"2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::/32"},
		{"10.0.0.9", "10.0.0.1", ""},
	}
	for _, tt := range tests {
		got := strings.Join(rangePrefixes(mustAddr(tt.start), mustAddr(tt.end), 16), " ")
		if got != tt.want {
			t.Errorf("%s-%s = %q, want %q", tt.start, tt.end, got, tt.want)
		}
	}
}

func TestRDAPLookupDirect(t *testing.T) {
	srv := startRDAP(t)
	c, err := newRDAPClient(srv.URL+"/rdap/", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.lookup(context.Background(), "81.2.69.142")
	if err != nil {
		t.Fatal(err)
	}
	var info RDAPInfo
	if err := json.Unmarshal(raw, &info); err != nil || info.Name != "EXAMPLE-LON-NET" {
		t.Errorf("info = %+v, %v", info, err)
	}
	// A domain answer for an address query is garbage.
	if _, err := c.lookup(context.Background(), "216.160.83.56"); err == nil {
		t.Errorf("500: no error")
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestRDAPBootstrap runs the IANA bootstrap path against local copies of
// the registry files (RFC 9224) pointing at the test RDAP server.
func TestRDAPBootstrap(t *testing.T) {
	rdapSrv := startRDAP(t)
	var bootRequests atomic.Int64
	boot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bootRequests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/dns.json":
			fmt.Fprintf(w, `{"version": "1.0", "publication": "2026-01-01T00:00:00Z", "services": [[["com", "net"], ["%s/rdap/"]]]}`, rdapSrv.URL)
		case "/ipv4.json":
			fmt.Fprintf(w, `{"version": "1.0", "publication": "2026-01-01T00:00:00Z", "services": [[["81.0.0.0/8"], ["%s/rdap/"]]]}`, rdapSrv.URL)
		default:
			http.NotFound(w, r)
		}
	}))
	defer boot.Close()
	c, err := newRDAPClient("", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.boot.BaseURL, _ = url.Parse(boot.URL + "/")
	ctx := context.Background()
	// Concurrent look-ups share the bootstrapper safely (run with -race).
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, key := range []string{"example.com", "81.2.69.142"} {
				raw, err := c.lookup(ctx, key)
				if err != nil {
					errs <- err
					return
				}
				var info RDAPInfo
				if err := json.Unmarshal(raw, &info); err != nil || (info.Handle == "") {
					errs <- fmt.Errorf("%s: %s", key, raw)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := c.lookup(ctx, "example.org"); err == nil {
		t.Errorf("a TLD without an RDAP server: no error")
	}
	if n := bootRequests.Load(); n == 0 || n > 6 {
		t.Errorf("bootstrap files fetched %d times, want them cached", n)
	}
}
