package detect

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// DGA fires on DNS look-ups of names that look made by a domain
// generation algorithm (Conficker, CryptoLocker, Necurs: a random string
// of letters, or of letters and digits, as the registrable label): a
// malware observation, medium, one per client address and burst, once
// the client looked up Names distinct such names within Span (default 1
// name, 1 h). The client is the key node: it is the infected host (the
// host that logged the look-up when the client is one of its own
// addresses, see sourceActor — the same in BIND's file and syslog
// formats and dnsmasq's). The names are context: each is used once. The
// count is of look-ups: the lines BIND writes about one query count once
// (lookupUnit).
//
// A name is scored on its registrable label only (see registrable), so
// the machine-made labels of CDNs and clouds below it
// (e1234.dscb.akamaiedge.net, 0988…e88.clo.footprintdns.com) never count;
// reverse look-ups, SRV and NBSTAT names, single-label and local names
// are skipped. See dgaLike for the score.
type DGA struct {
	Names int
	Span  time.Duration
	Local string // LocalReport or LocalIgnore
}

// NameDGA is the detector's name.
const NameDGA = "dns_dga"

func (d DGA) Name() string { return NameDGA }

func (d DGA) Window() Window {
	n := orInt(d.Names, 1)
	return Window{Span: orDur(d.Span, time.Hour), MinCount: n, MinDistinct: n}
}

func (d DGA) Signals(ev *Event) []vigil.Signal {
	client, name, ok := dnsLookup(ev.Fields)
	if !ok {
		return nil
	}
	label, domain, ok := registrable(name)
	if !ok || wellKnownDomains[domain] || !dgaLike(label) {
		return nil
	}
	who, ok := sourceActor(ev.Fields, client, d.Local)
	if !ok {
		return nil
	}
	return []vigil.Signal{{Key: who.key,
		Member: domain,
		Unit:   lookupUnit(ev.Fields, client, name),
		Nodes:  nodes(who.nodes, node(vigil.NodeDomain, domain, false)),
	}}
}

// lookupUnit names the query a line records when another line may record
// it too: BIND logs a refused query as "query: …" (querylog) and again as
// "query failed (REFUSED) for …" or "query (cache) '…' denied", each with
// the client's address and source port, so (address, port, name, type)
// is the query. A client's retransmission (same port) is the same query.
// Lines without a port (dnsmasq, which logs a query once) have no unit.
func lookupUnit(f map[string]any, client, name string) string {
	port, ok := num(f, "source.port")
	if !ok || port == 0 {
		return ""
	}
	return client + "#" + strconv.FormatInt(port, 10) + " " + name + " " + strings.ToUpper(str(f, "dns.question.type"))
}

func (d DGA) Describe(key string, w vigil.WindowState) vigil.Finding {
	title := "DGA-like DNS look-ups by " + key
	if w.Distinct > 0 {
		title += " (" + w.Members[0] + ")"
	}
	desc := fmt.Sprintf("DGA-like DNS look-ups: %s by %s of %s (%s), %s",
		plural(w.Count, "look-up"), key, plural(w.Distinct, "name"), list(w.Members, w.Distinct), span(w))
	return vigil.Finding{Type: "malware", Severity: vigil.SeverityMedium, Title: title, Description: desc, Rollup: "DGA-like DNS look-ups"}
}

// dnsLookup returns the client address and the lower-case question name
// of a DNS look-up: a query of a server's or sensor's log (BIND, dnsmasq,
// Zeek), a refused or failed one (BIND), or a Suricata DNS query record.
// dnsmasq's forwarded/reply/cached lines repeat a query and do not count.
func dnsLookup(f map[string]any) (client, name string, ok bool) {
	switch str(f, "event.action") {
	case "query", "query_denied", "query_failed":
	case "":
		if str(f, "dns.type") != "query" {
			return "", "", false
		}
	default:
		return "", "", false
	}
	name = strings.ToLower(strings.TrimSuffix(str(f, "dns.question.name"), "."))
	if name == "" {
		return "", "", false
	}
	client, ok = validIP(str(f, "source.ip"))
	return client, name, ok
}

// localTLDs are top-level labels of names that never leave the site.
var localTLDs = map[string]bool{
	"local": true, "localdomain": true, "localhost": true, "lan": true, "home": true, "internal": true,
	"intranet": true, "corp": true, "private": true, "arpa": true, "test": true, "example": true,
	"invalid": true, "onion": true, "alt": true,
}

// secondLevels are labels that, under a two-letter country code, form a
// public suffix with it (co.uk, com.au, ac.jp, gov.br, …).
var secondLevels = map[string]bool{
	"co": true, "com": true, "net": true, "org": true, "gov": true, "edu": true, "ac": true, "or": true,
	"ne": true, "go": true, "gob": true, "mil": true, "nic": true, "ltd": true, "plc": true, "sch": true,
	"info": true, "biz": true, "nom": true, "gen": true, "firm": true, "web": true, "int": true,
}

// wellKnownDomains are registrable domains of CDNs and clouds whose
// machine-made names must never count, whatever their score.
var wellKnownDomains = map[string]bool{
	"akamai.net": true, "akamaiedge.net": true, "akamaized.net": true, "akamaihd.net": true, "akadns.net": true,
	"edgekey.net": true, "edgesuite.net": true, "cloudfront.net": true, "amazonaws.com": true, "awsdns.com": true,
	"googleusercontent.com": true, "googleapis.com": true, "googlevideo.com": true, "gstatic.com": true,
	"1e100.net": true, "gvt1.com": true, "gvt2.com": true, "msedge.net": true, "azureedge.net": true,
	"azurefd.net": true, "trafficmanager.net": true, "cloudapp.net": true, "windows.net": true,
	"footprintdns.com": true, "msftncsi.com": true, "msftconnecttest.com": true, "fastly.net": true,
	"cloudflare.net": true, "fbcdn.net": true, "edgecastcdn.net": true, "llnwd.net": true, "rackcdn.com": true,
	"crwdcntrl.net": true, "jsdelivr.net": true,
}

// registrable returns the label a name was registered under and that
// domain ("bbc" and "bbc.co.uk" for news.bbc.co.uk), approximating the
// public suffix list: the last label, or the last two when the last is a
// country code and the one before it a generic second level (co.uk,
// com.au) or two letters. It is false for names that are not public DNS
// names: single labels, local zones and reverse look-ups, SRV and
// service-discovery names (_ldap._tcp…), NBSTAT "*", addresses.
func registrable(name string) (label, domain string, ok bool) {
	if name == "" || strings.ContainsAny(name, "_* []:/\\@") {
		return "", "", false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "", "", false
	}
	labels := strings.Split(name, ".")
	n := len(labels)
	if n < 2 || localTLDs[labels[n-1]] {
		return "", "", false
	}
	for _, l := range labels {
		if l == "" {
			return "", "", false
		}
	}
	suffix := 1
	if tld := labels[n-1]; len(tld) == 2 && (secondLevels[labels[n-2]] || len(labels[n-2]) <= 2) {
		suffix = 2
	}
	if n <= suffix {
		return "", "", false
	}
	return labels[n-suffix-1], strings.Join(labels[n-suffix-1:], "."), true
}

// dgaLike reports whether a registrable label looks machine-made: the
// longest of its hyphen-separated parts has at least 8 characters, is not
// a repeated few letters (entropy), and reads as no language: its mean
// log-probability per letter under letter-trigram models of English and
// of 21 other languages written in ASCII letters (trigramScores: German,
// French, Spanish, Italian, Portuguese, Dutch, Polish, Swedish,
// Norwegian, Danish, Catalan, Czech, Turkish, Romanian, Hungarian,
// Indonesian, Russian and Ukrainian transliterated, Vietnamese, Chinese
// pinyin, Japanese romaji; another language than English costs 0.5 bit
// a letter) falls below a threshold that loosens with length, as longer
// strings give a steadier mean. A label of 12 letters or more that reads
// best as English, scoring between that threshold and −4.4 bits, counts
// when English dictionary words cover less than half of it (wordCover).
// Letters and digits mixed four times or more in 10 or more characters
// ("kq3v9z7xwm2p") count too.
//
// The thresholds were set on random strings (TestDGARandomStrings: 73 %
// of random 8–11 letter strings caught, 99.4 % of 12–15, all of 16–25,
// 97 % of 10–16 letters and digits) and checked on real names: the registrable labels of every
// DNS name in ../shared/datasets (none over), the real-sensor corpus's
// 30 random names (testdata/realsensors: all caught, among them
// dynonitnptig, English-like by its letter triples but holding no
// word) and the top sites of Privacy Badger's crawl (docs/detections.md,
// DGA: the figures and how to measure them). A name people chose in
// another language reads as one: odnoklassniki scores −4.95 bits as
// English but −4.30 as transliterated Russian, eksisozluk −3.72 as
// Turkish. Word cover is not used below 12 letters: there brand names
// such as swiftypecdn (5 of 11 letters in words) sit among random
// strings.
func dgaLike(label string) bool {
	_, ok := dgaScore(label)
	return ok
}

// dgaScore returns the trigram score of label's longest part (0 when it
// is too short to judge) and whether it looks machine-made.
func dgaScore(label string) (float64, bool) {
	if strings.HasPrefix(label, "xn--") {
		return 0, false // an internationalized name: its letters are not ASCII
	}
	part := ""
	for _, p := range strings.Split(label, "-") {
		if len(p) > len(part) {
			part = p
		}
	}
	if len(part) < 8 {
		return 0, false
	}
	for i := 0; i < len(part); i++ {
		if c := part[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return 0, false
		}
	}
	if entropy(part) < 2.5 {
		return 0, false
	}
	english, other := trigramScores(part)
	s := max(english, other) // languageScore
	var limit float64
	switch n := len(part); {
	case n < 10:
		limit = -5.55
	case n < 12:
		limit = -5.6
	case n < 16:
		limit = -4.95
	default:
		limit = -5.0
	}
	if s < limit {
		return s, true
	}
	// Between a language's usual −2.5 to −4.4 bits and the limit, a long
	// label people chose in English is made of words ("helpdeskgeek",
	// "bootstrapcdn": 9 of 12 letters or more); a random one is not
	// ("dynonitnptig": none). A label that reads better in another
	// language is not judged by English words.
	if len(part) >= 12 && s < -4.4 && english >= other && wordCover(part)*2 < len(part) {
		return s, true
	}
	mixes := 0
	for i := 1; i < len(part); i++ {
		if isDigit(part[i]) != isDigit(part[i-1]) {
			mixes++
		}
	}
	return s, len(part) >= 10 && mixes >= 4
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// entropy is the Shannon entropy of s's bytes, in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}
