package parse

import (
	"bytes"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// parseDNS parses one line of a DNS server or sensor log:
//
//   - BIND query log ("client @0x… 192.0.2.1#53333 (example.com): query:
//     example.com IN A +E(0)K (192.0.2.53)"), with or without BIND's own
//     "14-Jun-2019 10:00:00.000 queries: info:" prefix and with or without
//     a syslog header ("… named[123]: …");
//   - BIND security and xfer lines: query denied, zone transfer denied,
//     bad zone transfer request (NOTAUTH), update denied, query failed;
//   - dnsmasq query/forwarded/reply/cached/config lines, dnsmasq-dhcp
//     DHCP exchanges, and dnsmasq's start-up and configuration lines;
//   - Zeek dns.log, as JSON or as TSV (see parseZeekDNSTSV for lines
//     without their header).
//
// event.action takes one of these values:
//
//	query                  a question (BIND query log, dnsmasq query[T], Zeek)
//	query_denied           BIND refused a query by ACL (allow-query, -cache, -recursion)
//	query_failed           BIND query-errors: the answer was SERVFAIL, REFUSED, …
//	zone_transfer          BIND xfer-out: an AXFR/IXFR started or ended
//	zone_transfer_denied   BIND refused an AXFR/IXFR ("zone transfer … denied", or
//	                       "bad zone transfer request" for a zone it is not
//	                       authoritative for, dns.response_code NOTAUTH)
//	update_denied          BIND refused a dynamic update
//	forwarded              dnsmasq sent the question upstream
//	dnssec_query           dnsmasq asked upstream for DNSSEC records
//	reply                  dnsmasq got an answer from upstream
//	cached                 dnsmasq answered from its cache
//	config                 dnsmasq answered from its configuration (address=, …)
//	hosts                  dnsmasq answered from a hosts file
//	dnssec_validation      dnsmasq's DNSSEC verdict on a name
//	dhcp_<message>         dnsmasq-dhcp exchange: dhcp_discover, dhcp_offer,
//	                       dhcp_request, dhcp_ack, dhcp_nak, dhcp_release,
//	                       dhcp_inform, dhcp_decline, and DHCPv6 dhcp_solicit, …
//	dhcp_no_range          no DHCP range for the interface the request came on
//	dhcp_no_address        a DHCP packet came on an interface without address
//	dhcp_range             the DHCP range configured at start-up
//	started, stopped       dnsmasq started (service.version) or exited
//	compile_options        dnsmasq's build options at start-up
//	nameserver             an upstream server dnsmasq will use
//	read_file              dnsmasq read a configuration file (resolv.conf, hosts)
//	no_servers             dnsmasq found no upstream server
//	warning                any other dnsmasq warning
//	zeek_header            a "#fields", "#types", … header line of a Zeek TSV log;
//	                       it carries no other field but is a well-formed line
//	                       of the source, so it counts as parsed
//
// A BIND "client …" line of another kind keeps its client address and
// query name and has no event.action.
//
// event.outcome is failure for denials and refusals (query_denied,
// zone_transfer_denied, update_denied, query_failed, REFUSED, NOTAUTH,
// Zeek's rejected, DHCPNAK); an NXDOMAIN answer is a successful lookup of
// a name that does not exist, so it gets no outcome.
//
// BIND's own timestamp, which has a year and milliseconds, wins over the
// syslog header's; both are zone-less and taken as UTC.
func parseDNS(raw []byte, ref time.Time) (Event, time.Time, bool) {
	s := bytes.TrimRight(trimLeftBlank(raw), " \t\r\n")
	if len(s) == 0 {
		return nil, time.Time{}, false
	}
	switch {
	case s[0] == '{':
		return parseZeekDNSJSON(s, ref)
	case s[0] == '#':
		return zeekHeader(s)
	case isZeekTS(s):
		return parseZeekDNSTSV(s)
	}
	return parseDNSText(s, ref)
}

// dnsName normalizes a query name: lower case, no trailing dot. The root
// stays ".".
func dnsName(s string) string {
	if s == "" || s == "." || s == "-" {
		return s
	}
	s = strings.TrimSuffix(s, ".")
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// dnsEventBase sets the fields every DNS (not DHCP, not service) event has.
func dnsEventBase(ev Event, action string) {
	ev["event.kind"] = "event"
	ev["event.category"] = "network"
	ev["network.protocol"] = "dns"
	ev.set("event.action", action)
	switch action {
	case "query_denied", "zone_transfer_denied", "update_denied":
		ev["event.type"] = "denied"
		ev["event.outcome"] = "failure"
	case "query_failed":
		ev["event.type"] = "protocol"
		ev["event.outcome"] = "failure"
	default:
		ev["event.type"] = "protocol"
	}
}

// ---- Zeek ----------------------------------------------------------------

// zeekHeaders are the directives that open a Zeek TSV log.
var zeekHeaders = []string{"#separator", "#set_separator", "#empty_field", "#unset_field",
	"#path", "#open", "#close", "#fields", "#types"}

func zeekHeader(s []byte) (Event, time.Time, bool) {
	for _, h := range zeekHeaders {
		if bytes.HasPrefix(s, []byte(h)) && (len(s) == len(h) || s[len(h)] == ' ' || s[len(h)] == '\t') {
			return Event{"event.action": "zeek_header"}, time.Time{}, true
		}
	}
	return nil, time.Time{}, false
}

// isZeekTS reports whether s opens with a Zeek epoch timestamp and a tab.
func isZeekTS(s []byte) bool {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 || i >= len(s) {
		return false
	}
	if s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i < len(s) && s[i] == '\t'
}

// zeekDNSRecord is a dns.log row before mapping, its values aliasing the
// line. A nil or "-" value is unset.
type zeekDNSRecord struct {
	ts                                      time.Time
	uid, origH, origP, respH, respP, proto  []byte
	transID, rtt, query, qclass, qclassName []byte
	qtype, qtypeName, rcode, rcodeName      []byte
	aa, tc, rd, ra                          int8 // 0 unset, 1 false, 2 true
	rejected                                int8
	answers                                 []string
	answersCSV                              []byte // TSV: the vector as written
	haveRTT                                 bool
	rttValue                                float64
}

// zeekDNSFields is the column order of a default Zeek dns.log.
const zeekDNSFields = 24

// parseZeekDNSTSV maps one data row of a Zeek dns.log in TSV form. The
// parser sees one line at a time, without the "#fields" header that
// names the columns, so it assumes the default column order (ts uid
// id.orig_h id.orig_p id.resp_h id.resp_p proto trans_id rtt query qclass
// qclass_name qtype qtype_name rcode rcode_name AA TC RD RA Z answers TTLs
// rejected) and takes the line only when it has at least that many
// columns and the uid and ports look right; columns added after these by
// local scripts are ignored.
func parseZeekDNSTSV(s []byte) (Event, time.Time, bool) {
	var col [zeekDNSFields][]byte
	n := 0
	for rest := s; n < zeekDNSFields; n++ {
		i := bytes.IndexByte(rest, '\t')
		if i < 0 {
			col[n] = rest
			n++
			break
		}
		col[n], rest = rest[:i], rest[i+1:]
	}
	if n < zeekDNSFields {
		return nil, time.Time{}, false
	}
	if (!zeekUnset(col[1]) && col[1][0] != 'C') || !zeekPort(col[3]) || !zeekPort(col[5]) {
		return nil, time.Time{}, false
	}
	ts, ok := zeekEpoch(col[0])
	if !ok {
		return nil, time.Time{}, false
	}
	r := zeekDNSRecord{
		ts: ts, uid: col[1], origH: col[2], origP: col[3], respH: col[4], respP: col[5],
		proto: col[6], transID: col[7], rtt: col[8], query: col[9], qclass: col[10],
		qclassName: col[11], qtype: col[12], qtypeName: col[13], rcode: col[14], rcodeName: col[15],
		aa: zeekBool(col[16]), tc: zeekBool(col[17]), rd: zeekBool(col[18]), ra: zeekBool(col[19]),
		answersCSV: col[21], rejected: zeekBool(col[23]),
	}
	if !zeekUnset(r.rtt) {
		if f, err := strconv.ParseFloat(string(r.rtt), 64); err == nil {
			r.rttValue, r.haveRTT = f, true
		}
	}
	return r.event(), r.ts, true
}

func zeekUnset(b []byte) bool {
	return len(b) == 0 || (len(b) == 1 && b[0] == '-') || string(b) == "(empty)"
}

func zeekPort(b []byte) bool {
	if zeekUnset(b) {
		return true
	}
	_, ok := atoiBytes(b)
	return ok && len(b) <= 5
}

func zeekBool(b []byte) int8 {
	switch string(b) {
	case "T", "true":
		return 2
	case "F", "false":
		return 1
	}
	return 0
}

// zeekEpoch parses "1521911720.865716".
func zeekEpoch(b []byte) (time.Time, bool) {
	sec, frac, _ := bytes.Cut(b, []byte("."))
	s, ok := atoiBytes(sec)
	if !ok || s > 1<<40 {
		return time.Time{}, false
	}
	var ns int64
	scale := int64(100000000)
	for _, c := range frac {
		if !isDigit(c) {
			return time.Time{}, false
		}
		ns += int64(c-'0') * scale
		scale /= 10
	}
	return time.Unix(s, ns).UTC(), true
}

// parseZeekDNSJSON maps a Zeek dns.log row written as JSON. A JSON line
// that turns out to be Suricata EVE goes to parseSuricata.
func parseZeekDNSJSON(s []byte, ref time.Time) (Event, time.Time, bool) {
	l := jsonLexer{b: s}
	if !l.object() {
		return nil, time.Time{}, false
	}
	var r zeekDNSRecord
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			break
		}
		switch string(k) {
		case "ts":
			if l.peek() == '"' {
				r.ts, _, _ = parseISOTime(l.raw())
			} else if f, ok := l.float(); ok && f > 0 && f < 1<<40 {
				sec, frac := math.Modf(f)
				r.ts = time.Unix(int64(sec), int64(math.Round(frac*1e6))*1000).UTC()
			}
		case "uid":
			r.uid = l.raw()
		case "id.orig_h":
			r.origH = l.raw()
		case "id.orig_p":
			r.origP = l.num()
		case "id.resp_h":
			r.respH = l.raw()
		case "id.resp_p":
			r.respP = l.num()
		case "proto":
			r.proto = l.raw()
		case "trans_id":
			r.transID = l.num()
		case "rtt":
			r.rttValue, r.haveRTT = l.float()
		case "query":
			r.query = l.raw()
		case "qclass_name":
			r.qclassName = l.raw()
		case "qclass":
			r.qclass = l.num()
		case "qtype_name":
			r.qtypeName = l.raw()
		case "qtype":
			r.qtype = l.num()
		case "rcode_name":
			r.rcodeName = l.raw()
		case "rcode":
			r.rcode = l.num()
		case "AA":
			r.aa = zeekJSONBool(&l)
		case "TC":
			r.tc = zeekJSONBool(&l)
		case "RD":
			r.rd = zeekJSONBool(&l)
		case "RA":
			r.ra = zeekJSONBool(&l)
		case "rejected":
			r.rejected = zeekJSONBool(&l)
		case "answers":
			if !l.array() {
				l.skip()
				continue
			}
			for m := 0; l.elem(&m); {
				if v := l.str(); v != "" && len(r.answers) < flattenMaxList {
					r.answers = append(r.answers, v)
				}
			}
		case "event_type":
			return parseSuricata(s, ref)
		default:
			l.skip()
		}
	}
	if !l.end() || (r.query == nil && r.uid == nil && r.origH == nil) {
		return nil, time.Time{}, false
	}
	return r.event(), r.ts, true
}

func zeekJSONBool(l *jsonLexer) int8 {
	v, ok := l.bool()
	switch {
	case !ok:
		return 0
	case v:
		return 2
	}
	return 1
}

// zeekClasses maps Zeek's class names to the mnemonics BIND and ECS use.
var zeekClasses = map[string]string{
	"C_INTERNET": "IN", "C_CHAOS": "CH", "C_HESIOD": "HS", "C_NONE": "NONE", "C_ANY": "ANY", "C_CSNET": "CS",
}

func (r *zeekDNSRecord) event() Event {
	ev := make(Event, 24)
	dnsEventBase(ev, "query")
	zset := func(k string, v []byte) {
		if !zeekUnset(v) {
			ev[k] = jsonString(v)
		}
	}
	zset("zeek.uid", r.uid)
	if !zeekUnset(r.origH) {
		ev.setIP("source.ip", r.origH)
	}
	if !zeekUnset(r.respH) {
		ev.setIP("destination.ip", r.respH)
	}
	if !zeekUnset(r.origP) {
		ev.setInt("source.port", r.origP)
	}
	if !zeekUnset(r.respP) {
		ev.setInt("destination.port", r.respP)
	}
	if !zeekUnset(r.proto) {
		ev["network.transport"] = transport(r.proto)
	}
	zset("dns.id", r.transID)
	if r.haveRTT {
		ev["zeek.dns.rtt"] = r.rttValue
	}
	if !zeekUnset(r.query) {
		ev["dns.question.name"] = dnsName(jsonString(r.query))
	}
	switch {
	case !zeekUnset(r.qclassName):
		c, ok := zeekClasses[string(r.qclassName)]
		if !ok {
			c = jsonString(r.qclassName)
		}
		ev["dns.question.class"] = c
	case !zeekUnset(r.qclass):
		ev["dns.question.class"] = "CLASS" + jsonString(r.qclass)
	}
	switch {
	case !zeekUnset(r.qtypeName):
		ev["dns.question.type"] = commonToken(r.qtypeName)
	case !zeekUnset(r.qtype):
		ev["dns.question.type"] = "TYPE" + jsonString(r.qtype)
	}
	rcode := ""
	if !zeekUnset(r.rcodeName) {
		rcode = commonToken(r.rcodeName)
		ev["dns.response_code"] = rcode
	}
	if rcode != "" || !zeekUnset(r.rcode) {
		ev["dns.type"] = "answer"
	} else {
		ev["dns.type"] = "query"
	}
	var flags []string
	for _, f := range [...]struct {
		v    int8
		name string
	}{{r.aa, "AA"}, {r.tc, "TC"}, {r.rd, "RD"}, {r.ra, "RA"}} {
		if f.v == 2 {
			flags = append(flags, f.name)
		}
	}
	if len(flags) > 0 {
		ev["dns.header_flags"] = flags
	}
	answers := r.answers
	if !zeekUnset(r.answersCSV) {
		for rest := r.answersCSV; len(rest) > 0 && len(answers) < flattenMaxList; {
			var a []byte
			a, rest, _ = bytes.Cut(rest, []byte(","))
			if len(a) > 0 {
				answers = append(answers, jsonString(a))
			}
		}
	}
	if len(answers) > 0 {
		ev["dns.answers.data"] = answers
		// Zeek's answers carry no type: an address among them is an A or
		// AAAA answer.
		var ips []string
		for _, a := range answers {
			ips = appendIP(ips, a)
		}
		if len(ips) > 0 {
			ev["dns.resolved_ip"] = ips
		}
	}
	if r.rejected != 0 {
		ev["zeek.dns.rejected"] = r.rejected == 2
	}
	if r.rejected == 2 || rcode == "REFUSED" || rcode == "NOTAUTH" {
		ev["event.outcome"] = "failure"
	}
	return ev
}

// ---- text logs: BIND and dnsmasq ------------------------------------------

// bindCategories are BIND logging categories and severities that may
// lead a message ("security: error:", "queries: info:"). A syslog parser
// can mistake the first for a program name.
var bindCategories = map[string]bool{
	"queries": true, "query-errors": true, "security": true, "xfer-in": true, "xfer-out": true,
	"update": true, "update-security": true, "general": true, "default": true, "notify": true,
	"resolver": true, "lame-servers": true, "edns-disabled": true, "rate-limit": true,
	"dnssec": true, "network": true, "config": true, "database": true, "unmatched": true,
	"critical": true, "error": true, "warning": true, "notice": true, "info": true, "debug": true,
	"dynamic": true,
}

func parseDNSText(s []byte, ref time.Time) (Event, time.Time, bool) {
	hdr := SyslogHeader{Priority: -1}
	msg := s
	if h, m, ok := parseSyslog(s, ref); ok {
		hdr, msg = h, m
		if h.PID == "" && bindCategories[h.Program] {
			// "Oct 23 02:06:39 security: info: client …": a BIND
			// category, not a program.
			hdr.Program = ""
		}
	} else if h, m, ok := bareDNSTag(s); ok {
		hdr, msg = h, m
	}
	ts := hdr.Time
	if t, n, ok := bindTime(msg); ok {
		ts, msg = t, trimLeftBlank(msg[n:])
	}
	var ev Event
	if strings.HasPrefix(hdr.Program, "dnsmasq") || (hdr.Program == "" && looksDnsmasq(msg)) {
		ev = parseDnsmasq(msg)
	} else if msg = skipBINDCategories(msg); bytes.HasPrefix(msg, []byte("client ")) {
		ev = parseBINDClient(msg[len("client "):])
	}
	if ev == nil {
		return nil, time.Time{}, false
	}
	ev.setSyslogHeader(hdr)
	return ev, ts, true
}

// bareDNSTag recognizes a line without timestamp that starts with
// "prog[pid]: " or "host prog[pid]: ", as some collectors forward them.
func bareDNSTag(s []byte) (SyslogHeader, []byte, bool) {
	h := SyslogHeader{Priority: -1}
	tok, rest := nextToken(s)
	if name, pid, ok := syslogTag(tok); ok && pid != "" {
		h.Program, h.PID = name, pid
		return h, trimLeftBlank(rest), true
	}
	tok2, rest2 := nextToken(trimLeftBlank(rest))
	if name, pid, ok := syslogTag(tok2); ok && (pid != "" || name == "named" || strings.HasPrefix(name, "dnsmasq")) {
		h.Host, h.Program, h.PID = string(tok), name, pid
		return h, trimLeftBlank(rest2), true
	}
	return SyslogHeader{}, nil, false
}

// bindTime parses BIND's "19-Oct-2022 05:34:02.425" and returns the bytes
// it used.
func bindTime(s []byte) (time.Time, int, bool) {
	if len(s) < 20 || s[2] != '-' || s[6] != '-' || s[11] != ' ' {
		return time.Time{}, 0, false
	}
	day, ok1 := digitsN(s, 2)
	mon := monthOf(s[3], s[4], s[5])
	year, ok2 := digitsN(s[7:], 4)
	if !ok1 || !ok2 || mon == 0 || day < 1 || day > 31 {
		return time.Time{}, 0, false
	}
	hh, mm, ss, ns, n, ok := parseClock(s[12:])
	if !ok {
		return time.Time{}, 0, false
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, ss, ns, time.UTC)
	if t.Day() != day {
		return time.Time{}, 0, false
	}
	return t, 12 + n, true
}

// skipBINDCategories drops leading "security: error: "-style words.
func skipBINDCategories(s []byte) []byte {
	for k := 0; k < 3; k++ {
		tok, rest := nextToken(s)
		if len(tok) < 2 || tok[len(tok)-1] != ':' || !bindCategories[string(tok[:len(tok)-1])] {
			return s
		}
		s = trimLeftBlank(rest)
	}
	return s
}

// parseBINDClient parses what follows "client ": "[@0x…] ADDR#PORT[/key
// NAME] [(NAME)]: [view V: ]TEXT".
func parseBINDClient(s []byte) Event {
	if bytes.HasPrefix(s, []byte("@0x")) {
		_, s = nextToken(s)
		s = trimLeftBlank(s)
	}
	hash := bytes.IndexByte(s, '#')
	if hash <= 0 {
		return nil
	}
	if sp := bytes.IndexByte(s[:hash], ' '); sp >= 0 {
		return nil
	}
	ev := make(Event, 20)
	ev.setIP("source.ip", s[:hash])
	s = s[hash+1:]
	p := 0
	for p < len(s) && isDigit(s[p]) {
		p++
	}
	ev.setInt("source.port", s[:p])
	s = s[p:]
	if rest, ok := bytes.CutPrefix(s, []byte("/key ")); ok { // TSIG
		_, s = nextToken(rest)
	}
	var paren string
	s = trimLeftBlank(s)
	if len(s) > 0 && s[0] == '(' {
		end := bytes.Index(s, []byte("): "))
		if end < 0 {
			if bytes.HasSuffix(s, []byte("):")) {
				end = len(s) - 2
			} else {
				return nil
			}
		}
		paren = string(s[1:end])
		s = s[end+1:]
	}
	if len(s) == 0 || s[0] != ':' {
		return nil
	}
	s = trimLeftBlank(s[1:])
	if bytes.HasPrefix(s, []byte("view ")) {
		if i := bytes.Index(s, []byte(": ")); i > 0 {
			ev.set("bind.view", string(s[5:i]))
			s = s[i+2:]
		}
	}
	action := ""
	switch {
	case bytes.HasPrefix(s, []byte("query: ")):
		action = "query"
		bindQuery(ev, s[len("query: "):])
	case bytes.HasPrefix(s, []byte("query ")) && bytes.Contains(s, []byte("' denied")):
		action = "query_denied"
		bindQuoted(ev, s, true)
	case bytes.HasPrefix(s, []byte("zone transfer ")) && bytes.Contains(s, []byte("' denied")):
		action = "zone_transfer_denied"
		bindQuoted(ev, s, true)
	case bytes.HasPrefix(s, []byte("update ")) && bytes.Contains(s, []byte("' denied")):
		action = "update_denied"
		bindQuoted(ev, s, false)
	case bytes.HasPrefix(s, []byte("bad zone transfer request: ")):
		action = "zone_transfer_denied"
		bindQuoted(ev, s, false)
		if code := bindParenCode(s); code != "" {
			ev["dns.response_code"] = code
		}
		if _, reason, ok := bytes.Cut(s, []byte("': ")); ok {
			if i := bytes.LastIndex(reason, []byte(" (")); i > 0 {
				reason = reason[:i]
			}
			ev.set("event.reason", capReason(reason))
		}
	case bytes.HasPrefix(s, []byte("query failed (")):
		action = "query_failed"
		code := s[len("query failed ("):]
		if i := bytes.IndexByte(code, ')'); i > 0 {
			ev["dns.response_code"] = string(code[:i])
		}
		if _, q, ok := bytes.Cut(s, []byte(" for ")); ok {
			q, _, _ = bytes.Cut(q, []byte(" "))
			// query-errors writes name/class/type.
			if i := bytes.LastIndexByte(q, '/'); i > 0 {
				ev.set("dns.question.type", string(q[i+1:]))
				q = q[:i]
				if j := bytes.LastIndexByte(q, '/'); j > 0 {
					ev.set("dns.question.class", string(q[j+1:]))
					q = q[:j]
				}
				ev.set("dns.question.name", dnsName(string(q)))
			}
		}
	case bytes.HasPrefix(s, []byte("transfer of '")):
		action = "zone_transfer"
		bindQuoted(ev, s, false)
		if _, after, ok := bytes.Cut(s, []byte("': ")); ok {
			if t, _ := nextToken(after); string(t) == "AXFR" || string(t) == "IXFR" {
				ev["dns.question.type"] = string(t)
			}
		}
	}
	if _, ok := ev["dns.question.name"]; !ok && paren != "" {
		ev["dns.question.name"] = dnsName(paren)
	}
	if action == "" && len(ev) == 0 {
		return nil
	}
	if action == "query_denied" || action == "zone_transfer_denied" || action == "update_denied" {
		if _, reason, ok := bytes.Cut(s, []byte("' denied (")); ok {
			ev.set("event.reason", capReason(bytes.TrimSuffix(reason, []byte(")"))))
		}
	}
	dnsEventBase(ev, action)
	if code, _ := ev["dns.response_code"].(string); code == "REFUSED" || code == "NOTAUTH" {
		ev["event.outcome"] = "failure"
	}
	return ev
}

// bindQuery parses "NAME CLASS TYPE FLAGS (SERVER)" of a query log line.
// Flags: + recursion desired, T over TCP, D DNSSEC OK, C checking
// disabled, S signed, E(n) EDNS version, K/V cookie.
func bindQuery(ev Event, s []byte) {
	name, s := nextToken(s)
	class, s := nextToken(trimLeftBlank(s))
	typ, s := nextToken(trimLeftBlank(s))
	flags, s := nextToken(trimLeftBlank(s))
	ev.set("dns.question.name", dnsName(string(name)))
	ev.set("dns.question.class", commonToken(class))
	ev.set("dns.question.type", commonToken(typ))
	ev["dns.type"] = "query"
	if len(flags) > 0 && (flags[0] == '+' || flags[0] == '-') {
		var hf []string
		if flags[0] == '+' {
			hf = append(hf, "RD")
		}
		transport := "udp"
		for _, c := range flags[1:] {
			switch c {
			case 'T':
				transport = "tcp"
			case 'D':
				hf = append(hf, "DO")
			case 'C':
				hf = append(hf, "CD")
			}
		}
		ev["network.transport"] = transport
		if len(hf) > 0 {
			ev["dns.header_flags"] = hf
		}
	}
	s = trimLeftBlank(s)
	if len(s) > 2 && s[0] == '(' {
		if i := bytes.IndexByte(s, ')'); i > 1 {
			ev.setIP("destination.ip", s[1:i])
		}
	}
}

// bindQuoted reads the first 'NAME/TYPE/CLASS' (typed) or 'NAME/CLASS'
// quoted in s. Names may hold '/', so it splits from the right.
func bindQuoted(ev Event, s []byte, typed bool) {
	_, q, ok := bytes.Cut(s, []byte("'"))
	if !ok {
		return
	}
	q, _, ok = bytes.Cut(q, []byte("'"))
	if !ok {
		return
	}
	i := bytes.LastIndexByte(q, '/')
	if i <= 0 {
		ev.set("dns.question.name", dnsName(string(q)))
		return
	}
	ev.set("dns.question.class", commonToken(q[i+1:]))
	q = q[:i]
	if typed {
		if j := bytes.LastIndexByte(q, '/'); j > 0 {
			ev.set("dns.question.type", commonToken(q[j+1:]))
			q = q[:j]
		}
	}
	ev.set("dns.question.name", dnsName(string(q)))
}

// bindParenCode returns the rcode in a trailing "(NOTAUTH)".
func bindParenCode(s []byte) string {
	if len(s) < 3 || s[len(s)-1] != ')' {
		return ""
	}
	i := bytes.LastIndexByte(s, '(')
	if i < 0 {
		return ""
	}
	code := s[i+1 : len(s)-1]
	for _, c := range code {
		if c < 'A' || c > 'Z' {
			return ""
		}
	}
	return string(code)
}

// looksDnsmasq reports whether a message without a program name is one
// of dnsmasq's query or DHCP lines.
func looksDnsmasq(s []byte) bool {
	for _, p := range [...]string{"query[", "forwarded ", "reply ", "cached ", "config ", "DHCP"} {
		if bytes.HasPrefix(s, []byte(p)) {
			return true
		}
	}
	return false
}

// dnsmasqAnswer are the dnsmasq words that log an answer: "WORD NAME is DATA".
var dnsmasqAnswer = map[string]string{
	"reply": "reply", "cached": "cached", "config": "config", "validation": "dnssec_validation",
	"cached-stale": "cached",
}

// parseDnsmasq parses a dnsmasq or dnsmasq-dhcp message.
func parseDnsmasq(s []byte) Event {
	ev := make(Event, 16)
	// log-queries=extra: "<serial> <addr>/<port> query[A] …".
	if tok, rest := nextToken(s); len(tok) > 0 && allDigits(tok) {
		tok2, rest2 := nextToken(trimLeftBlank(rest))
		if a, p, ok := bytes.Cut(tok2, []byte("/")); ok && ev.setIP("source.ip", a) {
			ev.setInt("source.port", p)
			s = trimLeftBlank(rest2)
		}
	}
	w, rest := nextToken(s)
	rest = trimLeftBlank(rest)
	switch {
	case bytes.HasPrefix(w, []byte("query[")) || bytes.HasPrefix(w, []byte("dnssec-query[")):
		// query[A] NAME from CLIENT; dnssec-query[DS] NAME to SERVER
		typ := w[bytes.IndexByte(w, '[')+1:]
		typ = bytes.TrimSuffix(typ, []byte("]"))
		name, r := nextToken(rest)
		dir, r := nextToken(trimLeftBlank(r))
		peer, _ := nextToken(trimLeftBlank(r))
		action := "query"
		if w[0] == 'd' {
			action = "dnssec_query"
		}
		dnsEventBase(ev, action)
		ev["dns.type"] = "query"
		ev.set("dns.question.type", commonToken(typ))
		ev.set("dns.question.name", dnsName(string(name)))
		switch string(dir) {
		case "from":
			dnsmasqPeer(ev, "source", peer)
		case "to":
			dnsmasqPeer(ev, "destination", peer)
		}
	case string(w) == "forwarded":
		// forwarded NAME to SERVER
		name, r := nextToken(rest)
		dir, r := nextToken(trimLeftBlank(r))
		peer, _ := nextToken(trimLeftBlank(r))
		dnsEventBase(ev, "forwarded")
		ev["dns.type"] = "query"
		ev.set("dns.question.name", dnsName(string(name)))
		if string(dir) == "to" {
			dnsmasqPeer(ev, "destination", peer)
		}
	case dnsmasqAnswer[string(w)] != "" || (len(w) > 1 && w[0] == '/'):
		// reply NAME is DATA; /etc/hosts NAME is ADDR
		name, r := nextToken(rest)
		is, data := nextToken(trimLeftBlank(r))
		if string(is) != "is" {
			return nil
		}
		action := dnsmasqAnswer[string(w)]
		if action == "" {
			action = "hosts"
		}
		dnsEventBase(ev, action)
		ev.set("dns.question.name", dnsName(string(name)))
		if action != "dnssec_validation" {
			ev["dns.type"] = "answer"
			dnsmasqData(ev, trimLeftBlank(data))
		}
	case bytes.HasPrefix(w, []byte("DHCP")) && bytes.IndexByte(w, '(') > 4:
		dnsmasqDHCP(ev, w, rest)
	default:
		action := ""
		switch word := string(w); {
		case word == "started,":
			action = "started"
			if v, ok := bytes.CutPrefix(rest, []byte("version ")); ok {
				v, _ = nextToken(v)
				ev.set("service.version", string(v))
			}
		case word == "exiting":
			action = "stopped"
		case word == "compile":
			action = "compile_options"
		case word == "using" && bytes.HasPrefix(rest, []byte("nameserver ")):
			action = "nameserver"
		case word == "reading" || (word == "read" && len(rest) > 0 && rest[0] == '/'):
			action = "read_file"
		case word == "no" && bytes.HasPrefix(rest, []byte("servers found")):
			action = "no_servers"
		case word == "no" && bytes.HasPrefix(rest, []byte("address range available")):
			action = "dhcp_no_range"
		case word == "DHCP" && bytes.HasPrefix(rest, []byte("packet received")):
			action = "dhcp_no_address"
		case word == "DHCP," && bytes.HasPrefix(rest, []byte("IP range")):
			action = "dhcp_range"
		case word == "warning:":
			action = "warning"
		}
		if action == "" {
			return nil
		}
		ev["event.kind"] = "event"
		ev["event.action"] = action
		switch action {
		case "started":
			ev["event.category"] = "process"
			ev["event.type"] = "start"
		case "stopped":
			ev["event.category"] = "process"
			ev["event.type"] = "end"
		case "dhcp_no_range", "dhcp_no_address":
			ev["event.category"] = "network"
			ev["event.type"] = "protocol"
			ev["network.protocol"] = "dhcp"
			ev["event.outcome"] = "failure"
			if _, iface, ok := bytes.Cut(rest, []byte(" via ")); ok {
				ev.set("observer.ingress.interface.name", string(iface))
			} else if _, iface, ok := bytes.Cut(rest, []byte("received on ")); ok {
				iface, _ = nextToken(iface)
				ev.set("observer.ingress.interface.name", string(iface))
			}
		default:
			ev["event.category"] = "configuration"
			ev["event.type"] = "info"
		}
	}
	return ev
}

// maxReason bounds the free text kept in event.reason.
const maxReason = 256

func capReason(b []byte) string {
	if len(b) > maxReason {
		b = b[:maxReason]
	}
	return jsonString(b)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return len(b) > 0
}

// dnsmasqPeer stores "ADDR" or "ADDR#PORT" as prefix.ip / prefix.port.
func dnsmasqPeer(ev Event, prefix string, peer []byte) {
	a, p, _ := bytes.Cut(peer, []byte("#"))
	if ev.setIP(prefix+".ip", a) && len(p) > 0 {
		ev.setInt(prefix+".port", p)
	}
}

// dnsmasqData maps the DATA of "reply NAME is DATA": an address, a name,
// "<CNAME>"-style record types whose data dnsmasq does not log, NODATA
// (NOERROR with no record) or an rcode.
func dnsmasqData(ev Event, d []byte) {
	switch {
	case len(d) == 0:
	case len(d) > 2 && d[0] == '<' && d[len(d)-1] == '>':
		ev["dns.answers.type"] = []string{string(d[1 : len(d)-1])}
	case bytes.HasPrefix(d, []byte("NODATA")):
		ev["dns.response_code"] = "NOERROR"
	case string(d) == "NXDOMAIN" || string(d) == "SERVFAIL" || string(d) == "REFUSED":
		ev["dns.response_code"] = string(d)
		if d[0] == 'R' {
			ev["event.outcome"] = "failure"
		}
	default:
		v := string(d)
		ev["dns.answers.data"] = []string{v}
		if a, err := netip.ParseAddr(v); err == nil {
			ev["dns.resolved_ip"] = []string{a.Unmap().String()}
			if a.Is4() {
				ev["dns.answers.type"] = []string{"A"}
			} else {
				ev["dns.answers.type"] = []string{"AAAA"}
			}
		}
	}
}

// dnsmasqDHCP maps "DHCPACK(eth0) 192.168.4.3 f8:e4:e3:45:08:1c host" and
// its kin: the address, the client's MAC (or DHCPv6 DUID, skipped), the
// client's name on ACK/REPLY, and the reason dnsmasq gives on the others.
func dnsmasqDHCP(ev Event, w, rest []byte) {
	open := bytes.IndexByte(w, '(')
	msgType := strings.ToLower(string(w[4:open]))
	iface := bytes.TrimSuffix(w[open+1:], []byte(")"))
	ev["event.kind"] = "event"
	ev["event.category"] = "network"
	ev["event.type"] = "protocol"
	ev["network.protocol"] = "dhcp"
	ev["event.action"] = "dhcp_" + msgType
	ev.set("observer.ingress.interface.name", string(iface))
	if msgType == "nak" || msgType == "decline" {
		ev["event.outcome"] = "failure"
	}
	tok, r := nextToken(rest)
	if ev.setIP("client.ip", tok) {
		rest = trimLeftBlank(r)
		tok, r = nextToken(rest)
	}
	if m := ecsMAC(tok); m != "" {
		ev["client.mac"] = m
		rest = trimLeftBlank(r)
	} else if bytes.Count(tok, []byte(":")) >= 5 { // a DUID
		rest = trimLeftBlank(r)
	}
	if len(rest) == 0 {
		return
	}
	switch msgType {
	case "ack", "reply":
		name, _ := nextToken(rest)
		ev.set("client.domain", string(name))
	case "nak", "decline", "release", "discover":
		ev.set("event.reason", capReason(rest))
	}
}
