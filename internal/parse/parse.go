// Package parse turns raw artifact lines into normalized events whose field
// names follow the Elastic Common Schema (source.ip, user.name,
// event.action, dns.question.name, …). One file per source; Parse
// dispatches by source name and falls back to generic parsing.
package parse

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/idna"

	"github.com/vigil-soc/vigil"
)

// Event is a flat map of ECS field names to values (string, int64,
// float64, bool or []string).
type Event map[string]any

// Result is what parsing one raw line yields.
type Result struct {
	// Event holds the normalized fields; never nil.
	Event Event
	// Time is the event time found in the line, zero if it carries none.
	Time time.Time
	// Parsed reports whether a parser understood the line. An unparsed line
	// still has a minimal Event (event.original is never copied, the raw
	// stays in the artifact) and is stored and searchable.
	Parsed bool
	// Parser names the parser that produced Event ("suricata", "generic").
	Parser string
}

// parserFunc parses one line of one source. ref is the artifact's own
// timestamp, used to resolve year-less dates. ok is false when the line is
// not of this source's formats.
type parserFunc func(raw []byte, ref time.Time) (ev Event, ts time.Time, ok bool)

// parsers maps source names to their parser. Aliases let common sensor
// names reach the right parser.
var parsers = map[string]parserFunc{
	"suricata":     parseSuricata,
	"eve":          parseSuricata,
	"auth":         parseAuth,
	"sshd":         parseAuth,
	"secure":       parseAuth,
	"sudo":         parseAuth,
	"su":           parseAuth,
	"pam":          parseAuth,
	"authpriv":     parseAuth,
	"auth.log":     parseAuth,
	"firewall":     parseFirewall,
	"iptables":     parseFirewall,
	"ufw":          parseFirewall,
	"pf":           parseFirewall,
	"pfsense":      parseFirewall,
	"opnsense":     parseFirewall,
	"filterlog":    parseFirewall,
	"netfilter":    parseFirewall,
	"nftables":     parseFirewall,
	"proxmox":      parseFirewall,
	"pve-firewall": parseFirewall,
	"edgeos":       parseFirewall,
	"ubiquiti":     parseFirewall,
	"dns":          parseDNS,
	"bind":         parseDNS,
	"named":        parseDNS,
	"dnsmasq":      parseDNS,
	"zeek":         parseDNS,
	"windows":      parseWindows,
	"winlogbeat":   parseWindows,
	"wineventlog":  parseWindows,
	"evtx":         parseWindows,
}

// Known reports whether source has a dedicated parser.
func Known(source string) bool { _, ok := parsers[source]; return ok }

// Parse parses raw as a line of source. It never fails: a line that no
// parser understands yields Parsed false and whatever the generic parser
// could take from it. It never writes into raw, which may be the bytes of
// a string (the pipeline passes its artifacts' lines uncopied), and the
// event keeps no part of it: its strings are copies.
//
// No field name or value of the event holds a NUL character: each is
// replaced by U+FFFD. Fields become node values, descriptions and keys,
// which PostgreSQL's text columns refuse with a NUL (the worker would
// fail the batch on every try); the raw line keeps it.
func Parse(source string, raw []byte, ref time.Time) Result {
	res := parse(source, raw, ref)
	// A NUL reaches the event only from the line, as a byte or as JSON's
	// \u0000: only then are the fields scanned (a map walk per line that
	// cost 1.5 % of the worker's instructions).
	if (bytes.IndexByte(raw, 0) >= 0 || bytes.Contains(raw, jsonNUL)) && hasNUL(res.Event) {
		res.Event = withoutNUL(res.Event)
	}
	return res
}

var jsonNUL = []byte(`\u0000`)

// TimeOr returns the time written in the line, in UTC, when it has a
// valid one, else ref: the timestamp of an artifact sent without one
// (ingest and the rule test give a line the same).
func (r Result) TimeOr(ref time.Time) time.Time {
	if vigil.ValidTimestamp(r.Time) {
		return r.Time.UTC()
	}
	return ref
}

func hasNUL(ev Event) bool {
	for k, v := range ev {
		if strings.IndexByte(k, 0) >= 0 {
			return true
		}
		switch x := v.(type) {
		case string:
			if strings.IndexByte(x, 0) >= 0 {
				return true
			}
		case []string:
			for _, s := range x {
				if strings.IndexByte(s, 0) >= 0 {
					return true
				}
			}
		}
	}
	return false
}

func parse(source string, raw []byte, ref time.Time) Result {
	if p, ok := parsers[source]; ok {
		if ev, ts, ok := p(raw, ref); ok {
			return Result{Event: ev, Time: ts, Parsed: true, Parser: source}
		}
		ev, ts, _ := parseGeneric(raw, ref)
		return Result{Event: ev, Time: ts, Parsed: false, Parser: "generic"}
	}
	ev, ts, ok := parseGeneric(raw, ref)
	return Result{Event: ev, Time: ts, Parsed: ok, Parser: "generic"}
}

// withoutNUL returns ev with NUL characters in names and values replaced.
func withoutNUL(ev Event) Event {
	const nul, repl = "\x00", "\uFFFD"
	out := make(Event, len(ev))
	for k, v := range ev {
		switch x := v.(type) {
		case string:
			v = strings.ReplaceAll(x, nul, repl)
		case []string:
			y := make([]string, len(x))
			for i, s := range x {
				y[i] = strings.ReplaceAll(s, nul, repl)
			}
			v = y
		}
		out[strings.ReplaceAll(k, nul, repl)] = v
	}
	return out
}

// Fields of an event that name nodes, by node type.
var nodeFields = []struct {
	field  string
	typ    string
	domain string // of a User node's field: the account's domain
}{
	{field: "source.ip", typ: vigil.NodeIP},
	{field: "destination.ip", typ: vigil.NodeIP},
	{field: "client.ip", typ: vigil.NodeIP},
	{field: "server.ip", typ: vigil.NodeIP},
	{field: "related.ip", typ: vigil.NodeIP},
	{field: "dns.resolved_ip", typ: vigil.NodeIP},
	{field: "source.domain", typ: vigil.NodeDomain},
	{field: "destination.domain", typ: vigil.NodeDomain},
	{field: "dns.question.name", typ: vigil.NodeDomain},
	{field: "url.domain", typ: vigil.NodeDomain},
	{field: "tls.client.server_name", typ: vigil.NodeDomain},
	{field: "host.name", typ: vigil.NodeHost},
	{field: "host.hostname", typ: vigil.NodeHost},
	{field: "related.hosts", typ: vigil.NodeHost},
	{field: "user.name", typ: vigil.NodeUser, domain: "user.domain"},
	{field: "user.target.name", typ: vigil.NodeUser, domain: "user.target.domain"},
	{field: "url.full", typ: vigil.NodeURL},
	{field: "url.original", typ: vigil.NodeURL},
	{field: "file.hash.md5", typ: vigil.NodeHash},
	{field: "file.hash.sha1", typ: vigil.NodeHash},
	{field: "file.hash.sha256", typ: vigil.NodeHash},
	{field: "process.hash.md5", typ: vigil.NodeHash},
	{field: "process.hash.sha1", typ: vigil.NodeHash},
	{field: "process.hash.sha256", typ: vigil.NodeHash},
	{field: "tls.server.ja3s", typ: vigil.NodeHash},
	{field: "tls.client.ja3", typ: vigil.NodeHash},
}

// nodesScanned is how many nodes Nodes looks through for a repeat
// before it keeps a set of them.
const nodesScanned = 16

// Nodes returns the entities named by ev, deduplicated, in field order,
// each typed by what its value is (see NodeOf): an address is an IP node
// whichever field holds it (an HTTP Host header, a TLS server name, a
// host name), and a Domain node's value is a valid domain name. Roles
// (key or context) are decided by detectors; here every node is context.
func Nodes(ev Event) []vigil.NodeRef {
	var out []vigil.NodeRef
	var seen map[vigil.NodeRef]bool // once out is past nodesScanned
	add := func(typ, v string) {
		typ, v = NodeOf(typ, v)
		if v == "" {
			return
		}
		n := vigil.NodeRef{Type: typ, Value: v}
		// An event names a few nodes: a look through them costs less
		// than a set. An array of thousands (related.ip of a _bulk
		// document) gets a set, so that the look stays linear.
		switch {
		case seen != nil:
			if seen[n] {
				return
			}
			seen[n] = true
		case slices.Contains(out, n):
			return
		case len(out) == nodesScanned:
			seen = make(map[vigil.NodeRef]bool, 2*nodesScanned)
			for _, o := range out {
				seen[o] = true
			}
			seen[n] = true
		}
		out = append(out, n)
	}
	for _, nf := range nodeFields {
		switch v := ev[nf.field].(type) {
		case string:
			if nf.domain != "" {
				// A Windows account: DOMAIN\user, one node whatever form
				// the event gave (WindowsAccount).
				if d, ok := ev[nf.domain].(string); ok {
					v = WindowsAccount(v, d)
				}
			}
			add(nf.typ, v)
		case []string:
			for _, s := range v {
				add(nf.typ, s)
			}
		}
	}
	return out
}

// NodeOf returns the node a value of a field of node type typ names, in
// the canonical form that makes one entity one node, or "" for a value
// that names nothing:
//   - an IP address in its canonical text (IPv4-mapped IPv6 unmapped,
//     zone dropped);
//   - a Domain or Host value that is an address, bracketed or not, with
//     or without a port ("127.0.0.1", "[::1]:8443", an HTTP Host header
//     of an address), is an IP node;
//   - a domain in lower case, without a trailing dot or a port,
//     internationalized names in their xn-- form, and only when it is a
//     valid domain name (labels of 1..63 letters, digits, '-' or '_', at
//     most 253 characters): NBSTAT's "*", a name with spaces or an empty
//     label is none;
//   - a host name in lower case without a trailing dot;
//   - a hash in lower case.
func NodeOf(typ, v string) (string, string) {
	v = strings.TrimSpace(v)
	if v == "" || v == "-" || v == "(none)" {
		return typ, ""
	}
	switch typ {
	case vigil.NodeIP:
		a, err := netip.ParseAddr(v)
		if err != nil {
			return typ, ""
		}
		return typ, a.Unmap().WithZone("").String()
	case vigil.NodeDomain, vigil.NodeHost:
		v = strings.ToLower(strings.TrimSuffix(v, "."))
		if v == "" || v == "*" {
			return typ, ""
		}
		if a, ok := hostAddr(v); ok {
			return vigil.NodeIP, a.Unmap().WithZone("").String()
		}
		if typ == vigil.NodeHost {
			return typ, v
		}
		if h, port, ok := strings.Cut(v, ":"); ok && validPort(port) {
			v = h // "example.com:8080", an HTTP Host header
		}
		if !asciiOnly(v) {
			a, err := idna.Lookup.ToASCII(v)
			if err != nil {
				return typ, ""
			}
			v = a
		}
		if d, issue := vigil.NormalizeNodeValue(vigil.NodeDomain, v); issue == "" {
			return typ, d
		}
		return typ, ""
	case vigil.NodeHash:
		return typ, strings.ToLower(v)
	}
	return typ, v
}

// hostAddr returns the address a host value names: "192.0.2.1",
// "[2001:db8::1]", or either with a port.
func hostAddr(v string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(v); err == nil {
		return a, true
	}
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap.Addr(), true
	}
	if len(v) > 2 && v[0] == '[' && v[len(v)-1] == ']' {
		if a, err := netip.ParseAddr(v[1 : len(v)-1]); err == nil {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// validPort reports whether s is a port number.
func validPort(s string) bool {
	n, ok := atoiBytes([]byte(s))
	return ok && n <= 65535
}

// asciiOnly reports whether s is all ASCII.
func asciiOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// set stores v under k unless v is empty; it keeps events free of blank
// fields.
func (ev Event) set(k, v string) {
	if v != "" && v != "-" {
		ev[k] = v
	}
}
