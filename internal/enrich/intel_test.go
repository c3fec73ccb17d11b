package enrich

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
)

// loadIntel loads a feed directory into an index.
func loadIntel(tb testing.TB, dir string) (*intel, *metrics) {
	tb.Helper()
	m := newMetrics(prometheus.NewRegistry())
	in := newIntel(dir, nil, m, slog.New(slog.DiscardHandler))
	if _, err := in.reloadDir(true); err != nil {
		tb.Fatal(err)
	}
	return in, m
}

func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		copyFile(tb, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
	return dst
}

// matchNode matches a node the way an enrichment pass does.
func matchNode(x *intelIndex, ref vigil.NodeRef) []IntelMatch {
	p := &pass{memo: map[nodeKey]*nodeOutcome{}, steps: []passStep{{run: x.step(), provider: ProviderIntel}}}
	out := p.node(ref)
	if out == nil {
		return nil
	}
	return out.info.Intel
}

func TestIntelHitsFromEveryFormat(t *testing.T) {
	in, m := loadIntel(t, intelDir)
	x := in.idx.Load()
	tests := []struct {
		name string
		node vigil.NodeRef
		want []IntelMatch
	}{
		// plain list
		{"list ip", ip("198.51.100.23"), []IntelMatch{{"blocklist.txt", "198.51.100.23", "ip"}}},
		{"list cidr", ip("203.0.113.200"), []IntelMatch{{"blocklist.txt", "203.0.113.0/24", "cidr"}}},
		{"list v6 cidr", ip("2001:db8:dead:1::5"), []IntelMatch{{"blocklist.txt", "2001:db8:dead::/48", "cidr"}}},
		{"list domain", domain("evil.example"), []IntelMatch{{"blocklist.txt", "evil.example", "domain"}}},
		{"list parent domain", domain("a.b.evil.example"), []IntelMatch{{"blocklist.txt", "evil.example", "domain"}}},
		{"list hosts file", domain("tracker.example"), []IntelMatch{{"blocklist.txt", "tracker.example", "domain"}}},
		{"list hosts file, both levels", domain("ads.tracker.example"), []IntelMatch{
			{"blocklist.txt", "ads.tracker.example", "domain"}, {"blocklist.txt", "tracker.example", "domain"}}},
		{"list defanged url", urlNode("HTTP://Phish.Example:80/login#top"), []IntelMatch{
			{"blocklist.txt", "http://phish.example/login", "url"}}},
		{"list md5", hash("44d88612fea8a8f36de82e1278abb02f"), []IntelMatch{{"blocklist.txt", "44d88612fea8a8f36de82e1278abb02f", "md5"}}},
		// CSV with a type column
		{"csv ip", ip("192.0.2.77"), []IntelMatch{{"c2.csv", "192.0.2.77", "ip"}}},
		{"csv private cidr", ip("10.66.1.2"), []IntelMatch{{"c2.csv", "10.66.0.0/16", "cidr"}}},
		{"csv domain parent", domain("cdn.malware.example"), []IntelMatch{{"c2.csv", "malware.example", "domain"}}},
		{"csv url", urlNode("http://dl.example/payload.exe"), []IntelMatch{{"c2.csv", "http://dl.example/payload.exe", "url"}}},
		{"csv sha256", hash("275A021BBFB6489E54D471899F7DB9D1663FC695EC2FE2A2C4538AABF651FD0F"), []IntelMatch{
			{"c2.csv", "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f", "sha256"}}},
		// CSV with the header in a comment (abuse.ch)
		{"urlhaus url", urlNode("http://198.51.100.99/bins/x86"), []IntelMatch{{"urlhaus-style.csv", "http://198.51.100.99/bins/x86", "url"}}},
		{"urlhaus https url", urlNode("https://drop.example/a/b.zip"), []IntelMatch{{"urlhaus-style.csv", "https://drop.example/a/b.zip", "url"}}},
		// STIX
		{"stix ipv4", ip("198.51.100.55"), []IntelMatch{{"bundle.stix.json", "198.51.100.55", "ip"}}},
		{"stix ipv6 cidr", ip("2001:db8:bad::1"), []IntelMatch{{"bundle.stix.json", "2001:db8:bad::/48", "cidr"}}},
		{"stix domain from an OR", domain("x.c2.stix.example"), []IntelMatch{{"bundle.stix.json", "c2.stix.example", "domain"}}},
		{"stix url from an OR", urlNode("https://stix.example/gate.php"), []IntelMatch{{"bundle.stix.json", "https://stix.example/gate.php", "url"}}},
		{"stix sha256", hash("ef537f25c895bfa782526529a9b63d97aa631564d5d789c2b765448c8635fb6c"), []IntelMatch{
			{"bundle.stix.json", "ef537f25c895bfa782526529a9b63d97aa631564d5d789c2b765448c8635fb6c", "sha256"}}},
		{"stix md5", hash("d41d8cd98f00b204e9800998ecf8427e"), []IntelMatch{{"bundle.stix.json", "d41d8cd98f00b204e9800998ecf8427e", "md5"}}},
		{"stix AND pattern ignored", ip("198.51.100.66"), nil},
		{"stix revoked ignored", ip("198.51.100.67"), nil},
		// MISP
		{"misp ip-dst", ip("192.0.2.200"), []IntelMatch{{"misp-event.json", "192.0.2.200", "ip"}}},
		{"misp ip-dst|port", ip("192.0.2.201"), []IntelMatch{{"misp-event.json", "192.0.2.201", "ip"}}},
		{"misp to_ids false ignored", ip("192.0.2.250"), nil},
		{"misp cidr", ip("198.19.4.4"), []IntelMatch{{"misp-event.json", "198.18.0.0/15", "cidr"}}},
		{"misp domain parent", domain("login.misp.example"), []IntelMatch{{"misp-event.json", "misp.example", "domain"}}},
		{"misp url", urlNode("http://login.misp.example/verify?id=1"), []IntelMatch{
			{"misp-event.json", "http://login.misp.example/verify?id=1", "url"}, {"misp-event.json", "misp.example", "domain"}}},
		{"misp sha1", hash("3395856ce81f2b7382dee72602f798b642f14140"), []IntelMatch{{"misp-event.json", "3395856ce81f2b7382dee72602f798b642f14140", "sha1"}}},
		{"misp object domain|ip (ip)", ip("192.0.2.202"), []IntelMatch{{"misp-event.json", "192.0.2.202", "ip"}}},
		{"misp object domain|ip (domain)", domain("obj.misp.example"), []IntelMatch{
			{"misp-event.json", "obj.misp.example", "domain"}, {"misp-event.json", "misp.example", "domain"}}},
		{"misp object filename|sha256", hash("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), []IntelMatch{
			{"misp-event.json", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256"}}},
		// URL hosts are matched as addresses and domains
		{"url host ip", urlNode("http://192.0.2.77:8080/x"), []IntelMatch{{"c2.csv", "192.0.2.77", "ip"}}},
		{"url host domain", urlNode("https://www.evil.example/"), []IntelMatch{{"blocklist.txt", "evil.example", "domain"}}},
		// misses
		{"miss ip", ip("198.51.100.24"), nil},
		{"miss domain", domain("notevil.example"), nil},
		{"tld alone is no match", domain("example"), nil},
		{"miss hash", hash("00000000000000000000000000000000"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matchNode(x, tt.node); !slices.Equal(got, tt.want) {
				t.Errorf("%s %s: got %+v, want %+v", tt.node.Type, tt.node.Value, got, tt.want)
			}
		})
	}
	wantCounts := map[string]float64{"blocklist.txt": 8, "c2.csv": 5, "urlhaus-style.csv": 2, "bundle.stix.json": 6, "misp-event.json": 9}
	for feed, want := range wantCounts {
		if got := gaugeOf(t, m.indicators, feed); got != want {
			t.Errorf("indicators loaded from %s = %v, want %v", feed, got, want)
		}
	}
}

func gaugeOf(tb testing.TB, vec *prometheus.GaugeVec, label string) float64 {
	tb.Helper()
	return gauge(tb, vec.WithLabelValues(label))
}

func TestIntelIndexSetsAndPrefixes(t *testing.T) {
	b := newIndexBuilder()
	f1, f2 := b.addFeed("one"), b.addFeed("two")
	b.finish()
	for _, ind := range []struct {
		feed uint16
		v    string
	}{{f1, "10.0.0.0/8"}, {f1, "10.1.0.0/16"}, {f2, "10.1.0.0/16"}, {f2, "10.1.2.3"}, {f1, "10.1.2.3"},
		{f2, "10.1.2.3"}, {f1, "evil.example"}, {f2, "evil.example"}, {f1, "::/0"}} {
		i, ok := normIndicator(hintAuto, ind.v)
		if !ok {
			t.Fatalf("%s not an indicator", ind.v)
		}
		b.add(ind.feed, i)
	}
	x := b.build()
	got := x.matchIP(nil, mustAddr("10.1.2.3"))
	want := []IntelMatch{
		{"one", "10.1.2.3", "ip"}, {"two", "10.1.2.3", "ip"},
		{"one", "10.1.0.0/16", "cidr"}, {"two", "10.1.0.0/16", "cidr"},
		{"one", "10.0.0.0/8", "cidr"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("matchIP = %+v\nwant %+v", got, want)
	}
	if got := x.matchIP(nil, mustAddr("2001:db8::1")); !slices.Equal(got, []IntelMatch{{"one", "::/0", "cidr"}}) {
		t.Errorf("v6 = %+v", got)
	}
	if got := x.matchDomain(nil, "evil.example"); len(got) != 2 {
		t.Errorf("domain in two feeds = %+v", got)
	}
	// Three distinct feed sets: {one}, {two}, {one, two}.
	if len(x.sets) != 3 {
		t.Errorf("sets = %v", x.sets)
	}
}

func TestIntelReloadOnChange(t *testing.T) {
	dir := copyDir(t, intelDir)
	h := newHarness(t, Config{ThreatIntelDir: dir})
	s := settings(func(s *vigil.EnrichmentSettings) { s.DNSEnabled = false })
	hits := func(v string) []vigil.IntelHit {
		res := h.e.Enrich(context.Background(), testOrg, s, []*vigil.Artifact{{ID: "a"}}, [][]vigil.NodeRef{{ip(v)}})
		return res[0].Hits
	}
	if len(hits("198.51.100.200")) != 0 {
		t.Fatal("hit before the feed exists")
	}
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("198.51.100.200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Markdown beside the feeds is not a feed.
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("see evil.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hits("198.51.100.200"); len(got) != 1 || got[0].Feed != "new.txt" {
		t.Errorf("after adding a feed: %+v", got)
	}
	if err := os.Remove(filepath.Join(dir, "blocklist.txt")); err != nil {
		t.Fatal(err)
	}
	// Polling notices the removal.
	h.e.cfg.PollInterval = 10 * 1e6
	h.start()
	waitFor(t, "feed removal", func() bool { return len(hits("198.51.100.23")) == 0 })

	// A broken JSON feed is left out; the others stay.
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"type": "bundle", "objects": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := counter(t, h.e.m.loadErrors, "intel")
	waitFor(t, "broken feed reported", func() bool { return counter(t, h.e.m.loadErrors, "intel") > errs })
	if len(hits("198.51.100.200")) != 1 {
		t.Errorf("a broken feed took the others down")
	}
}

func TestIntelURLFeeds(t *testing.T) {
	var requests, notModified atomic.Int64
	body := "# remote list\n198.51.100.123\nremote.example\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/feeds/list.txt":
			if r.Header.Get("If-None-Match") == `"v1"` {
				notModified.Add(1)
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", `"v1"`)
			io.WriteString(w, body)
		case "/feeds/iocs":
			w.Header().Set("Content-Type", "text/csv")
			io.WriteString(w, "ioc,type\nremote-csv.example,domain\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	h := newHarness(t, Config{ThreatIntelURLs: []string{srv.URL + "/feeds/list.txt", srv.URL + "/feeds/iocs?key=secret", srv.URL + "/feeds/gone"}})
	if err := h.e.Reload(context.Background()); err == nil {
		t.Errorf("a 404 feed: no error")
	}
	s := settings(func(s *vigil.EnrichmentSettings) { s.DNSEnabled = false })
	res := h.e.Enrich(context.Background(), testOrg, s, []*vigil.Artifact{{ID: "a"}},
		[][]vigil.NodeRef{{ip("198.51.100.123"), domain("www.remote.example"), domain("remote-csv.example")}})
	host := srv.Listener.Addr().String()
	want := []vigil.IntelHit{
		{Feed: host + "/feeds/list.txt", Indicator: "198.51.100.123", IndicatorType: "ip", NodeType: vigil.NodeIP, NodeValue: "198.51.100.123"},
		{Feed: host + "/feeds/list.txt", Indicator: "remote.example", IndicatorType: "domain", NodeType: vigil.NodeDomain, NodeValue: "www.remote.example"},
		{Feed: host + "/feeds/iocs", Indicator: "remote-csv.example", IndicatorType: "domain", NodeType: vigil.NodeDomain, NodeValue: "remote-csv.example"},
	}
	if !slices.Equal(res[0].Hits, want) {
		t.Errorf("hits = %+v\nwant %+v", res[0].Hits, want)
	}
	// A second fetch is conditional and keeps the feed.
	h.e.Reload(context.Background())
	if notModified.Load() != 1 {
		t.Errorf("conditional requests answered 304: %d", notModified.Load())
	}
	res = h.e.Enrich(context.Background(), testOrg, s, []*vigil.Artifact{{ID: "a"}}, [][]vigil.NodeRef{{ip("198.51.100.123")}})
	if len(res[0].Hits) != 1 {
		t.Errorf("feed lost after a 304")
	}
}

func TestNormIndicator(t *testing.T) {
	tests := []struct {
		h    hint
		in   string
		want string // "type value", "" for rejected
	}{
		{hintAuto, "1.2.3.4", "ip 1.2.3.4"},
		{hintAuto, "::ffff:1.2.3.4", "ip 1.2.3.4"},
		{hintAuto, "1.2.3.4/32", "ip 1.2.3.4"},
		{hintAuto, "1.2.3.77/24", "cidr 1.2.3.0/24"},
		{hintAuto, "::ffff:1.2.3.0/120", "cidr 1.2.3.0/24"},
		{hintAuto, "2001:DB8::/32", "cidr 2001:db8::/32"},
		{hintAuto, "fe80::1%eth0", ""},
		{hintAuto, "1[.]2[.]3[.]4", "ip 1.2.3.4"},
		{hintAuto, "Evil[.]Example", "domain evil.example"},
		{hintAuto, "*.evil.example", "domain evil.example"},
		{hintAuto, "hxxps://evil[.]example/a?b=c#frag", "url https://evil.example/a?b=c"},
		{hintAuto, "https://EVIL.example:443", "url https://evil.example/"},
		{hintAuto, "http://[2001:db8::1]:8080/x", "url http://[2001:db8::1]:8080/x"},
		{hintAuto, "D41D8CD98F00B204E9800998ECF8427E", "md5 d41d8cd98f00b204e9800998ecf8427e"},
		{hintAuto, "da39a3ee5e6b4b0d3255bfef95601890afd80709", "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{hintAuto, "notahash0000000000000000000000zz", ""},
		{hintAuto, "localhost", ""},
		{hintAuto, "", ""},
		{hintIP, "evil.example", ""},
		{hintDomain, "1.2.3.4", ""},
		{hintURL, "evil.example/path", ""},
		{hintHash, "1.2.3.4", ""},
	}
	for _, tt := range tests {
		got := ""
		if ind, ok := normIndicator(tt.h, tt.in); ok {
			got = ind.Type.String() + " " + ind.Value
		}
		if got != tt.want {
			t.Errorf("normIndicator(%d, %q) = %q, want %q", tt.h, tt.in, got, tt.want)
		}
	}
}

// checkIndicators is the invariant every parser keeps, checked by the
// fuzzers: what comes out is normalized (normalizing it again changes
// nothing) and indexable.
func checkIndicators(t *testing.T, inds []Indicator) {
	t.Helper()
	b := newIndexBuilder()
	f := b.addFeed("fuzz")
	b.finish()
	for _, ind := range inds {
		again, ok := normIndicator(hintAuto, ind.Value)
		if !ok || again != ind {
			t.Fatalf("indicator %+v not normalized: again %+v %v", ind, again, ok)
		}
		b.add(f, ind)
	}
	if x := b.build(); x.counts[0] != len(inds) {
		t.Fatalf("indexed %d of %d", x.counts[0], len(inds))
	}
}

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(intelDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestParseFeedDispatch(t *testing.T) {
	tests := []struct{ file, format string }{
		{"blocklist.txt", formatList}, {"c2.csv", formatCSV}, {"urlhaus-style.csv", formatCSV},
		{"bundle.stix.json", formatSTIX}, {"misp-event.json", formatMISP},
	}
	for _, tt := range tests {
		_, _, format, err := parseFeed(tt.file, readTestdata(t, tt.file))
		if err != nil || format != tt.format {
			t.Errorf("%s: format %s err %v, want %s", tt.file, format, err, tt.format)
		}
	}
	// JSON without a known shape is an error, not an empty feed.
	if _, _, _, err := parseFeed("x.json", []byte(`{"hello": "world"}`)); err == nil {
		t.Errorf("unknown JSON: no error")
	}
	if _, _, _, err := parseFeed("x.json", []byte(`[1, 2, 3]`)); err == nil {
		t.Errorf("unknown JSON array: no error")
	}
	if _, _, format, _ := parseFeed("x", []byte(fmt.Sprintf("%s\n", "1.2.3.4"))); format != formatList {
		t.Errorf("extension-less list = %s", format)
	}
}

// TestIntelURLFeedErrorsHideCredentials: a feed that fails (an HTTP error,
// a server that is not there, a bad feed) is logged and reported without
// the key in its query or the token in its user info.
func TestIntelURLFeedErrorsHideCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad.json" {
			io.WriteString(w, "{not a feed")
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	urls := []string{srv.URL + "/gone?key=SEKRIT1", gone.URL + "/feed?key=SEKRIT2",
		strings.Replace(srv.URL, "http://", "http://SEKRIT3@", 1) + "/gone", srv.URL + "/bad.json?apikey=SEKRIT4"}
	var logs strings.Builder
	in := newIntel("", urls, newMetrics(prometheus.NewRegistry()), slog.New(slog.NewJSONHandler(&logs, nil)))
	err := in.fetch(context.Background())
	if err == nil {
		t.Fatal("fetch of failing feeds: no error")
	}
	for _, s := range []string{"SEKRIT1", "SEKRIT2", "SEKRIT3", "SEKRIT4"} {
		if strings.Contains(logs.String(), s) || strings.Contains(err.Error(), s) {
			t.Errorf("%s shown:\nlog: %s\nerror: %v", s, logs.String(), err)
		}
	}
	if n := strings.Count(logs.String(), "threat intel feed not fetched"); n != 4 {
		t.Errorf("%d feeds logged as not fetched, want 4:\n%s", n, logs.String())
	}
}
