package detect

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func TestRegistrable(t *testing.T) {
	for _, c := range []struct{ name, label, domain string }{
		{"www.example.com", "example", "example.com"},
		{"news.bbc.co.uk", "bbc", "bbc.co.uk"},
		{"shop.example.com.au", "example", "example.com.au"},
		{"www.bmw.de", "bmw", "bmw.de"},
		{"watt.kiev.ua", "kiev", "kiev.ua"},
		{"e1234.dscb.akamaiedge.net", "akamaiedge", "akamaiedge.net"},
		{"example.com", "example", "example.com"},
		{"co.uk", "", ""},
		{"wpad", "", ""},
		{"printer.local", "", ""},
		{"mirror.coastal.edu.localdomain", "", ""},
		{"1.0.168.192.in-addr.arpa", "", ""},
		{"_ldap._tcp.dc._msdcs.example.com", "", ""},
		{"*", "", ""},
		{"192.0.2.1", "", ""},
		{"a..b.com", "", ""},
	} {
		label, domain, ok := registrable(c.name)
		if label != c.label || domain != c.domain || ok != (c.label != "") {
			t.Errorf("registrable(%q) = %q, %q, %v; want %q, %q", c.name, label, domain, ok, c.label, c.domain)
		}
	}
}

func dnsQuery(client, name string) parse.Event {
	return parse.Event{"event.action": "query", "dns.question.name": name, "source.ip": client}
}

func TestDGASignals(t *testing.T) {
	suricata := parse.Event{"suricata.eve.event_type": "dns", "dns.type": "query", "dns.question.name": "kq3v9z7xwm2p.net", "source.ip": "172.17.0.2"}
	answer := parse.Event{"suricata.eve.event_type": "dns", "dns.type": "answer", "dns.question.name": "kq3v9z7xwm2p.net", "source.ip": "172.17.0.254"}
	forwarded := parse.Event{"event.action": "forwarded", "dns.question.name": "xjwqpvkzrmdl.com", "destination.ip": "192.0.2.53"}
	cases := []signalCase{
		{name: "random letters", fields: dnsQuery("10.0.0.8", "xjwqpvkzrmdl.com"), key: "10.0.0.8", member: "xjwqpvkzrmdl.com",
			nodes: []string{"IP:10.0.0.8*", "Domain:xjwqpvkzrmdl.com"}},
		{name: "sub-domain of a random one", fields: dnsQuery("10.0.0.8", "WWW.Xjwqpvkzrmdl.com."), key: "10.0.0.8", member: "xjwqpvkzrmdl.com",
			nodes: []string{"IP:10.0.0.8*", "Domain:xjwqpvkzrmdl.com"}},
		{name: "suricata query", fields: suricata, key: "172.17.0.2", member: "kq3v9z7xwm2p.net", nodes: []string{"IP:172.17.0.2*", "Domain:kq3v9z7xwm2p.net"}},
		{name: "suricata answer", fields: answer},
		{name: "loopback client: the host is the key", fields: parse.Event{"event.action": "query", "dns.question.name": "xjwqpvkzrmdl.com",
			"source.ip": "127.0.0.1", "host.name": "WS-07"}, key: "127.0.0.1 on ws-07", member: "xjwqpvkzrmdl.com",
			nodes: []string{"Host:ws-07*", "IP:127.0.0.1", "Domain:xjwqpvkzrmdl.com"}},
		{name: "dnsmasq forwarded", fields: forwarded},
	}
	// Machine-made names of CDNs, clouds and local services never count.
	for _, name := range []string{
		"e1234.dscb.akamaiedge.net", "a1915.dscg.akamai.net", "img-prod-cms-rt-microsoft-com.akamaized.net",
		"d1a2b3c4d5e6f7.cloudfront.net", "ec2-54-231-1-17.compute-1.amazonaws.com", "s3-1-w.amazonaws.com",
		"shield-normandy-elb-prod-2099053585.us-west-2.elb.amazonaws.com",
		"lh3.googleusercontent.com", "doc-0k-4c-docs.googleusercontent.com", "lhr25s34-in-f14.1e100.net",
		"r4---sn-4g5e6nzz.googlevideo.com", "a-0001.a-msedge.net", "l-0005.l-msedge.net", "dual-s-msedge.net",
		"fp-afd.azureedge.net", "cs9.wpc.v0cdn.net", "0988253c66242502070643933dd49e88.clo.footprintdns.com",
		"cosmic-germanywestcentral-ns-1e0da07ed86c.trafficmanager.net", "www.msftncsi.com", "bcp.crwdcntrl.net",
		"cdn.jsdelivr.net", "1.0.20.172.in-addr.arpa", "b.f.3.e.2.2.e.f.f.f.b.d.2.0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.e.f.ip6.arpa",
		"_ldap._tcp.dc._msdcs.wrccdc.local", "_http._tcp.security.debian.org", "*", "wpad", "wpad.localdomain",
		"isatap.home", "nougat [28:d2:44:0f:4c:e9]._workstation._tcp.local", "xn--bcher-kva.example",
		"helpdeskgeek.com", "duckduckgo.com", "googlesyndication.com", "microsoftpersonalcontent.com",
	} {
		cases = append(cases, signalCase{name: name, fields: dnsQuery("10.0.0.8", name)})
	}
	runSignalCases(t, DGA{}, cases)
}

// dgaSamples reads testdata/dga.txt.
func dgaSamples(t *testing.T) []string {
	f, err := os.Open(filepath.Join("testdata", "dga.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestDGASamples: the DGA-style names of testdata fire. Random strings of
// 8–11 letters are the hardest (some read like words); longer ones and
// letter-digit mixes nearly always fire.
func TestDGASamples(t *testing.T) {
	samples := dgaSamples(t)
	missed := 0
	for _, name := range samples {
		label, _, ok := registrable(name)
		score, dga := dgaScore(label)
		if !ok || !dga {
			missed++
			t.Logf("missed %-28s score %.2f", name, score)
		}
	}
	for _, name := range []string{"xjwqpvkzrmdl.com", "kq3v9z7xwm2p.net"} {
		if len(DGA{}.Signals(event(dnsQuery("10.0.0.8", name)))) != 1 {
			t.Errorf("%s does not fire", name)
		}
	}
	t.Logf("%d of %d DGA samples fire", len(samples)-missed, len(samples))
	if missed*10 > len(samples) {
		t.Errorf("%d of %d samples missed, want at most 10 %%", missed, len(samples))
	}
}

// dnsDatasets are the real files of DNS look-ups, by parser source.
var dnsDatasets = []struct{ file, source string }{
	{"dns/wrccdc2018-zeek-dns.log", "dns"},
	{"dns/dnsmasq-hotspot.log", "dns"},
	{"dns/crowdsec-hub-bind9-tests.log", "dns"},
	{"dns/fail2ban-named-refused.log", "dns"},
	{"suricata/surevego-eve.json", "suricata"},
}

// TestDGADatasets: the benign names of every DNS dataset give no DGA
// signal; the count of false positives per file is logged.
func TestDGADatasets(t *testing.T) {
	for _, c := range dnsDatasets {
		evs := parseFile(t, c.source, c.file)
		lookups, names := 0, map[string]bool{}
		for _, ev := range evs {
			if _, name, ok := dnsLookup(ev.Fields); ok {
				lookups++
				names[name] = true
			}
		}
		hits, members := countSignals(DGA{}, evs)
		var fp []string
		for m := range members {
			fp = append(fp, m)
		}
		sort.Strings(fp)
		t.Logf("%-36s %6d look-ups of %4d names: %d false positives %v", c.file, lookups, len(names), hits, fp)
		if hits != 0 {
			t.Errorf("%s: %d DGA signals (%v), want none", c.file, hits, fp)
		}
		if lookups == 0 {
			t.Errorf("%s: no look-up found", c.file)
		}
	}
}

func TestDGADescribe(t *testing.T) {
	f := DGA{}.Describe("10.0.0.8", window(4, []string{"kq3v9z7xwm2p.net", "xjwqpvkzrmdl.com"}))
	if f.Type != "malware" || f.Severity != vigil.SeverityMedium || f.Title != "DGA-like DNS look-ups by 10.0.0.8 (kq3v9z7xwm2p.net)" ||
		!strings.Contains(f.Description, "4 look-ups by 10.0.0.8 of 2 names (kq3v9z7xwm2p.net, xjwqpvkzrmdl.com)") {
		t.Errorf("finding %+v", f)
	}
	if w := (DGA{Names: 3}).Window(); w.MinDistinct != 3 || w.Span.Hours() != 1 {
		t.Errorf("window %+v", w)
	}
}

func TestLanguageScore(t *testing.T) {
	for _, c := range []struct {
		s      string
		lo, hi float64
	}{
		{"google", -4.5, -2}, {"microsoft", -4.5, -2}, {"cloudfront", -4.5, -2},
		{"odnoklassniki", -4.5, -2}, // as Russian: −4.95 as English
		{"xjwqpvkzrmdl", -12, -6}, {"qqqqzzzz", -12, -6},
	} {
		if got := languageScore(c.s); got < c.lo || got > c.hi {
			t.Errorf("languageScore(%q) = %.2f, want in [%.1f, %.1f]", c.s, got, c.lo, c.hi)
		}
	}
	if e := entropy("aaaa"); e != 0 {
		t.Errorf("entropy(aaaa) = %v", e)
	}
	if e := entropy("abcd"); e != 2 {
		t.Errorf("entropy(abcd) = %v", e)
	}
}

// TestDGARandomStrings measures the share of random labels that dgaLike
// catches, by length, as dgaLike's comment states it.
func TestDGARandomStrings(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const letters, alnum = "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz0123456789"
	for _, c := range []struct {
		lo, hi   int
		alphabet string
		min      float64
	}{
		{8, 11, letters, 0.60}, {12, 15, letters, 0.98}, {16, 25, letters, 0.99}, {10, 16, alnum, 0.90},
	} {
		hit := 0
		const n = 2000
		for range n {
			b := make([]byte, c.lo+r.IntN(c.hi-c.lo+1))
			for i := range b {
				b[i] = c.alphabet[r.IntN(len(c.alphabet))]
			}
			if dgaLike(string(b)) {
				hit++
			}
		}
		rate := float64(hit) / n
		t.Logf("random %d–%d characters of %d symbols: %.1f %% caught", c.lo, c.hi, len(c.alphabet), 100*rate)
		if rate < c.min {
			t.Errorf("%d–%d: %.2f caught, want at least %.2f", c.lo, c.hi, rate, c.min)
		}
	}
}

// TestWordCover: long labels whose letter pairs are only somewhat unlikely
// are judged by the dictionary words inside them.
func TestWordCover(t *testing.T) {
	for _, c := range []struct {
		label string
		cover int
		dga   bool
	}{
		{"helpdeskgeek", 12, false}, // −5.29 bits: words all through
		{"bootstrapcdn", 9, false},  // −5.08
		{"connectedpdf", 9, false},  // −4.87
		{"footprintdns", 9, false},  // −4.58
		{"dynonitnptig", 0, true},   // −4.71: random letters of the real-sensor corpus (dns_bind)
		{"swiftypecdn", 5, false},   // 11 letters: too short for word cover
		{"googleusercontent", 17, false},
	} {
		if got := wordCover(c.label); got != c.cover {
			t.Errorf("wordCover(%q) = %d, want %d", c.label, got, c.cover)
		}
		if got := dgaLike(c.label); got != c.dga {
			t.Errorf("dgaLike(%q) = %v, want %v", c.label, got, c.dga)
		}
	}
	if !isWord("desk") || isWord("desq") || isWord("") {
		t.Error("isWord: the list is not what it should be")
	}
}
