package parse

import (
	"net/netip"
	"strings"
	"time"
)

// parseSuricata parses one Suricata EVE JSON object (any Suricata version:
// 3.x wrote "\/" escapes and one DNS record per line, 4.1+ DNS "answers"
// and "grouped", 8 DNS "queries"). An object that arrived through syslog
// ("Jan 30 10:29:41 ids suricata[42]: {…}") is accepted too.
//
// Every event carries suricata.eve.event_type and event.kind; the members
// common to all event types (addresses, ports, flow id, interface, VLAN)
// and the protocol blocks (alert, dns, http, tls, ssh, fileinfo, flow,
// anomaly, stats) are mapped to ECS whatever the event type, because an
// alert carries the http or tls block of the transaction that fired it.
// The block named by an event type without a mapping (smb, krb5, dhcp,
// quic, …) is flattened under suricata.eve.<event_type>.
//
// Times in the Event (event.start, tls.server.not_before, …) are RFC 3339
// strings in UTC; ts, the event's @timestamp, is the "timestamp" member.
// ok is false only for text that is not one JSON object or that has no
// event_type.
func parseSuricata(raw []byte, ref time.Time) (Event, time.Time, bool) {
	var hdr SyslogHeader
	wrapped := false
	body := raw
	if c := firstNonBlank(raw); c != '{' {
		h, msg, ok := parseSyslog(raw, ref)
		if !ok || firstNonBlank(msg) != '{' {
			return nil, time.Time{}, false
		}
		hdr, body, wrapped = h, msg, true
	}
	l := jsonLexer{b: body}
	if !l.object() {
		return nil, time.Time{}, false
	}
	ev := make(Event, 24)
	var (
		ts    time.Time
		etype []byte
		// Object members no mapping claimed, kept as spans to flatten the
		// one named by event_type once it is known (it need not come
		// first: a re-serialised line may sort its keys).
		other [6]struct {
			key        []byte
			start, end int
		}
		nOther int
		action string
	)
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			break
		}
		switch string(k) {
		case "timestamp":
			if t, _, ok := parseISOTime(l.raw()); ok {
				ts = t
			}
		case "event_type":
			etype = l.raw()
		case "flow_id":
			// Flow ids use all 64 bits: kept as their decimal text, not
			// a float that would round them.
			if t := l.num(); t != nil {
				ev["suricata.eve.flow_id"] = string(t)
			}
		case "src_ip":
			ev.setIP("source.ip", l.raw())
		case "dest_ip":
			ev.setIP("destination.ip", l.raw())
		case "src_port":
			if v, ok := l.int(); ok {
				ev["source.port"] = v
			}
		case "dest_port":
			if v, ok := l.int(); ok {
				ev["destination.port"] = v
			}
		case "proto":
			ev.set("network.transport", transport(l.raw()))
		case "app_proto":
			if p := transport(l.raw()); p != "failed" && p != "unknown" {
				ev.set("network.protocol", p)
			}
		case "community_id":
			ev.set("network.community_id", l.str())
		case "in_iface":
			ev.set("observer.ingress.interface.name", l.str())
		case "host", "sensor_name":
			ev.set("observer.hostname", l.str())
		case "vlan":
			eveVLAN(&l, ev)
		case "icmp_type":
			if v, ok := l.int(); ok {
				ev["suricata.eve.icmp_type"] = v
			}
		case "icmp_code":
			if v, ok := l.int(); ok {
				ev["suricata.eve.icmp_code"] = v
			}
		case "ether":
			eveEther(&l, ev)
		case "alert":
			action = eveAlert(&l, ev)
		case "dns":
			eveDNS(&l, ev)
		case "http":
			eveHTTP(&l, ev)
		case "tls":
			eveTLS(&l, ev)
		case "ssh":
			eveSSH(&l, ev)
		case "fileinfo":
			eveFileinfo(&l, ev)
		case "flow":
			eveFlow(&l, ev)
		case "anomaly":
			action = eveAnomaly(&l, ev)
		case "stats":
			eveStats(&l, ev)
		default:
			if l.peek() == '{' && nOther < len(other) {
				start := l.i
				l.skip()
				other[nOther].key, other[nOther].start, other[nOther].end = k, start, l.i
				nOther++
				continue
			}
			l.skip()
		}
	}
	if !l.end() || len(etype) == 0 {
		return nil, time.Time{}, false
	}
	et := commonToken(etype)
	ev["suricata.eve.event_type"] = et
	if wrapped {
		ev.setSyslogHeader(hdr)
		if ts.IsZero() {
			ts = hdr.Time
		}
	}
	ev.set("event.action", action)
	switch et {
	case "alert":
		ev["event.kind"] = "alert"
		ev["event.category"] = "intrusion_detection"
		switch action {
		case "blocked":
			ev["event.type"] = "denied"
		case "allowed":
			ev["event.type"] = "allowed"
		default:
			ev["event.type"] = "info"
		}
	case "stats":
		ev["event.kind"] = "metric"
	case "flow", "netflow":
		ev["event.kind"] = "event"
		ev["event.category"] = "network"
		ev["event.type"] = "connection"
	case "drop":
		ev["event.kind"] = "event"
		ev["event.category"] = "network"
		ev["event.type"] = "denied"
	case "fileinfo", "anomaly":
		ev["event.kind"] = "event"
		ev["event.category"] = "network"
		ev["event.type"] = "info"
	case "dns", "http", "tls", "ssh":
		ev["event.kind"] = "event"
		ev["event.category"] = "network"
		ev["event.type"] = "protocol"
	default:
		ev["event.kind"] = "event"
		ev["event.category"] = "network"
		ev["event.type"] = "protocol"
		for _, o := range other[:nOther] {
			if string(o.key) == et && flatKeyOK(o.key) {
				sub := jsonLexer{b: body[:o.end], i: o.start}
				sub.flatten(ev, "suricata.eve."+et)
				break
			}
		}
	}
	return ev, ts, true
}

func firstNonBlank(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
	return 0
}

// eveVLAN reads "vlan": a number in Suricata 3–4, an array (outer first)
// since 5. ECS keeps VLAN ids as keywords.
func eveVLAN(l *jsonLexer, ev Event) {
	if !l.array() {
		if t := l.num(); t != nil {
			ev["network.vlan.id"] = string(t)
		}
		return
	}
	for n := 0; l.elem(&n); {
		t := l.num()
		switch {
		case t == nil:
		case n == 1:
			ev["network.vlan.id"] = string(t)
		case n == 2:
			ev["network.inner.vlan.id"] = string(t)
		}
	}
}

func eveEther(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "src_mac":
			ev.set("source.mac", ecsMAC(l.raw()))
		case "dest_mac":
			ev.set("destination.mac", ecsMAC(l.raw()))
		default:
			l.skip()
		}
	}
}

// ecsMAC writes a MAC address as ECS wants it, "00-1B-17-00-01-18"; it
// returns "" for anything that is not six colon- or dash-separated octets.
func ecsMAC(b []byte) string {
	if len(b) != 17 {
		return ""
	}
	var out [17]byte
	for i, c := range b {
		if i%3 == 2 {
			if c != ':' && c != '-' {
				return ""
			}
			out[i] = '-'
			continue
		}
		switch {
		case isDigit(c), c >= 'A' && c <= 'F':
		case c >= 'a' && c <= 'f':
			c -= 'a' - 'A'
		default:
			return ""
		}
		out[i] = c
	}
	return string(out[:])
}

// eveAlert maps the alert block and returns its action (allowed, blocked).
func eveAlert(l *jsonLexer, ev Event) (action string) {
	if !l.object() {
		l.skip()
		return ""
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return action
		}
		switch string(k) {
		case "action":
			action = commonToken(l.raw())
		case "signature":
			ev.set("rule.name", l.str())
		case "signature_id":
			if t := l.num(); t != nil {
				ev["rule.id"] = string(t)
			}
		case "category":
			ev.set("rule.category", l.str())
		case "severity":
			if v, ok := l.int(); ok {
				ev["event.severity"] = v
			}
		case "gid":
			if v, ok := l.int(); ok {
				ev["suricata.eve.alert.gid"] = v
			}
		case "rev":
			if t := l.num(); t != nil {
				ev["rule.version"] = string(t)
			}
		case "metadata":
			eveRuleMetadata(l, ev)
		default:
			l.skip()
		}
	}
}

// eveRuleMetadata keeps the rule's metadata keywords whose values are
// strings or lists of strings as rule.metadata.<key> ([]string).
func eveRuleMetadata(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	kept := 0
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		if kept >= flattenMaxFields || !flatKeyOK(k) {
			l.skip()
			continue
		}
		var vals []string
		if l.array() {
			for m := 0; l.elem(&m); {
				if v, ok := l.scalarText(); ok && len(vals) < flattenMaxList {
					vals = append(vals, v)
				}
			}
		} else if v, ok := l.scalarText(); ok {
			vals = []string{v}
		}
		if len(vals) > 0 {
			ev["rule.metadata."+string(k)] = vals
			kept++
		}
	}
}

// eveDNSRecord gathers a dns block before mapping it, because what rrname
// means depends on members that may follow it (type, answers, version).
type eveDNSRecord struct {
	typ, id, rrname, rrtype, rcode, rdata string
	qname, qtype                          string // Suricata 8 "queries"
	version                               int64
	multi                                 bool // answers/grouped present (v2+)
	fromGrouped                           bool // data came from "grouped"
	data, dataType, resolved, flags       []string
}

func eveDNS(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	var r eveDNSRecord
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			break
		}
		switch string(k) {
		case "type":
			r.typ = commonToken(l.raw())
		case "id":
			if t := l.num(); t != nil {
				r.id = string(t)
			}
		case "version":
			r.version, _ = l.int()
		case "rrname":
			r.rrname = l.str()
		case "rrtype":
			r.rrtype = commonToken(l.raw())
		case "rcode":
			r.rcode = commonToken(l.raw())
		case "rdata":
			r.rdata = l.str()
		case "aa", "tc", "rd", "ra", "ad", "cd":
			if v, _ := l.bool(); v {
				r.flags = append(r.flags, dnsFlagName(k))
			}
		case "queries":
			if !l.array() {
				l.skip()
				continue
			}
			for m := 0; l.elem(&m); {
				name, typ := eveDNSAnswer(l, nil)
				if m == 1 {
					r.qname, r.qtype = name, typ
				}
			}
		case "answers":
			r.multi = true
			if !l.array() {
				l.skip()
				continue
			}
			if r.fromGrouped { // "answers" carries the same records, typed
				r.data, r.dataType, r.resolved, r.fromGrouped = nil, nil, nil, false
			}
			for m := 0; l.elem(&m); {
				eveDNSAnswer(l, &r)
			}
		case "grouped":
			r.multi = true
			eveDNSGrouped(l, &r)
		default:
			l.skip()
		}
	}
	switch r.typ {
	case "query", "request":
		ev["dns.type"] = "query"
	case "answer", "response":
		ev["dns.type"] = "answer"
	}
	ev.set("dns.id", r.id)
	ev.set("dns.response_code", r.rcode)
	if len(r.flags) > 0 {
		ev["dns.header_flags"] = r.flags
	}
	qname, qtype := r.rrname, r.rrtype
	switch {
	case r.qname != "" || r.qtype != "":
		qname, qtype = r.qname, r.qtype
	case r.typ == "answer" && !r.multi && r.version < 2 && r.rdata != "":
		// Suricata before 4.1 logged each answer record on its own line;
		// there rrname is the record's owner, not the question.
		ev["dns.answers.name"] = nonEmpty(r.rrname)
		ev["dns.answers.type"] = nonEmpty(r.rrtype)
		r.data = append(r.data, r.rdata)
		if r.rrtype == "A" || r.rrtype == "AAAA" {
			r.resolved = appendIP(r.resolved, r.rdata)
		}
		qname, qtype = "", ""
	}
	ev.set("dns.question.name", dnsName(qname))
	ev.set("dns.question.type", qtype)
	if len(r.data) > 0 {
		ev["dns.answers.data"] = r.data
		if len(r.dataType) == len(r.data) {
			ev["dns.answers.type"] = r.dataType
		}
	}
	if len(r.resolved) > 0 {
		ev["dns.resolved_ip"] = r.resolved
	}
}

// dnsFlagName upper-cases one of Suricata's DNS flag members.
func dnsFlagName(k []byte) string {
	switch string(k) {
	case "aa":
		return "AA"
	case "tc":
		return "TC"
	case "rd":
		return "RD"
	case "ra":
		return "RA"
	case "ad":
		return "AD"
	}
	return "CD"
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// eveDNSAnswer reads one {rrname, rrtype, rdata} record; with r it adds
// the record to r's answers, without it returns the name and type.
func eveDNSAnswer(l *jsonLexer, r *eveDNSRecord) (name, typ string) {
	if !l.object() {
		l.skip()
		return "", ""
	}
	var data string
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			break
		}
		switch string(k) {
		case "rrname":
			name = l.str()
		case "rrtype":
			typ = commonToken(l.raw())
		case "rdata":
			if r != nil {
				data = l.str()
				continue
			}
			l.skip()
		default:
			l.skip()
		}
	}
	if r != nil && data != "" && len(r.data) < flattenMaxList {
		r.data = append(r.data, data)
		r.dataType = append(r.dataType, typ)
		if typ == "A" || typ == "AAAA" {
			r.resolved = appendIP(r.resolved, data)
		}
	}
	return name, typ
}

// eveDNSGrouped reads "grouped": {"A": ["1.2.3.4"], "CNAME": ["x."]}.
// Its data is used only when the line has no "answers" list, which
// carries the same records.
func eveDNSGrouped(l *jsonLexer, r *eveDNSRecord) {
	if !l.object() {
		l.skip()
		return
	}
	fromAnswers := len(r.data) > 0
	r.fromGrouped = !fromAnswers
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		if fromAnswers || !l.array() {
			l.skip()
			continue
		}
		typ := commonToken(k)
		for m := 0; l.elem(&m); {
			if l.peek() != '"' {
				l.skip() // SOA, SRV, … are objects
				continue
			}
			v := l.str()
			if v == "" || len(r.data) >= flattenMaxList {
				continue
			}
			r.data = append(r.data, v)
			r.dataType = append(r.dataType, typ)
			if typ == "A" || typ == "AAAA" {
				r.resolved = appendIP(r.resolved, v)
			}
		}
	}
}

// appendIP appends s in canonical form if it is an IP address.
func appendIP(list []string, s string) []string {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return list
	}
	return append(list, a.Unmap().WithZone("").String())
}

func eveHTTP(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "hostname":
			ev.set("url.domain", l.str())
		case "url":
			u := l.str()
			ev.set("url.original", u)
			path, query := urlPathQuery(u)
			ev.set("url.path", path)
			ev.set("url.query", query)
		case "http_method":
			ev.set("http.request.method", commonToken(l.raw()))
		case "status":
			// A number, or a string in some Suricata versions.
			if l.peek() == '"' {
				ev.setInt("http.response.status_code", l.raw())
			} else if v, ok := l.int(); ok {
				ev["http.response.status_code"] = v
			}
		case "http_user_agent":
			ev.set("user_agent.original", l.str())
		case "http_refer":
			ev.set("http.request.referrer", l.str())
		case "http_content_type":
			ev.set("http.response.mime_type", l.str())
		case "length":
			if v, ok := l.int(); ok {
				ev["http.response.body.bytes"] = v
			}
		case "protocol":
			switch p := l.raw(); string(p) {
			case "HTTP/1.1":
				ev["http.version"] = "1.1"
			case "HTTP/1.0":
				ev["http.version"] = "1.0"
			default:
				ev.set("http.version", strings.TrimPrefix(jsonString(p), "HTTP/"))
			}
		case "redirect":
			ev.set("suricata.eve.http.redirect", l.str())
		case "http_port":
			if v, ok := l.int(); ok {
				ev["url.port"] = v
			}
		default:
			l.skip()
		}
	}
}

// urlPathQuery splits a request target ("/a/b?x=1", or absolute-form
// "http://h/a?x") into path and query.
func urlPathQuery(u string) (path, query string) {
	if i := strings.Index(u, "://"); i >= 0 && !strings.HasPrefix(u, "/") {
		rest := u[i+3:]
		j := strings.IndexAny(rest, "/?#")
		if j < 0 {
			return "", ""
		}
		u = rest[j:]
	}
	if i := strings.IndexByte(u, '#'); i >= 0 {
		u = u[:i]
	}
	path, query, _ = strings.Cut(u, "?")
	return path, query
}

func eveTLS(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "sni":
			ev.set("tls.client.server_name", l.str())
		case "subject":
			ev.set("tls.server.subject", l.str())
		case "issuerdn":
			ev.set("tls.server.issuer", l.str())
		case "serial":
			ev.set("tls.server.x509.serial_number", strings.ReplaceAll(l.str(), ":", ""))
		case "fingerprint":
			ev.set("tls.server.hash.sha1", strings.ToUpper(strings.ReplaceAll(l.str(), ":", "")))
		case "version":
			proto, ver := tlsVersion(l.str())
			ev.set("tls.version_protocol", proto)
			ev.set("tls.version", ver)
		case "notbefore":
			if t, _, ok := parseISOTime(l.raw()); ok {
				ev["tls.server.not_before"] = t.Format(time.RFC3339Nano)
			}
		case "notafter":
			if t, _, ok := parseISOTime(l.raw()); ok {
				ev["tls.server.not_after"] = t.Format(time.RFC3339Nano)
			}
		case "ja3":
			ev.set("tls.client.ja3", eveHashOf(l))
		case "ja3s":
			ev.set("tls.server.ja3s", eveHashOf(l))
		case "ja4":
			ev.set("tls.client.ja4", l.str())
		case "session_resumed":
			if v, ok := l.bool(); ok {
				ev["tls.resumed"] = v
			}
		default:
			l.skip()
		}
	}
}

// tlsVersion splits Suricata's "TLS 1.2", "TLSv1.3" or "SSLv3" into the
// ECS protocol and version ("tls", "1.2"). Unknown text ("UNDETERMINED")
// yields nothing.
func tlsVersion(v string) (proto, ver string) {
	u := strings.ToUpper(v)
	switch {
	case strings.HasPrefix(u, "TLS"):
		proto, ver = "tls", strings.TrimLeft(u[3:], " V")
	case strings.HasPrefix(u, "SSL"):
		proto, ver = "ssl", strings.TrimLeft(u[3:], " V")
	default:
		return "", ""
	}
	if len(ver) == 1 && isDigit(ver[0]) {
		ver += ".0"
	}
	return proto, ver
}

// eveHashOf returns the "hash" member of a {hash, string} object.
func eveHashOf(l *jsonLexer) (hash string) {
	if !l.object() {
		l.skip()
		return ""
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return hash
		}
		if string(k) == "hash" {
			hash = l.str()
			continue
		}
		l.skip()
	}
}

func eveSSH(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "client":
			eveSSHPeer(l, ev, "ssh.client.")
		case "server":
			eveSSHPeer(l, ev, "ssh.server.")
		default:
			l.skip()
		}
	}
}

func eveSSHPeer(l *jsonLexer, ev Event, prefix string) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "software_version":
			ev.set(prefix+"software", l.str())
		case "proto_version":
			ev.set(prefix+"proto_version", l.str())
		case "hassh":
			ev.set(prefix+"hassh", eveHashOf(l))
		default:
			l.skip()
		}
	}
}

func eveFileinfo(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "filename":
			// Over HTTP the "file name" is the request path: ECS wants the
			// last element in file.name and the whole in file.path.
			f := l.str()
			if i := strings.LastIndexByte(f, '/'); i >= 0 {
				ev.set("file.path", f)
				f = f[i+1:]
			}
			ev.set("file.name", f)
		case "size":
			if v, ok := l.int(); ok {
				ev["file.size"] = v
			}
		case "md5":
			ev.set("file.hash.md5", l.str())
		case "sha1":
			ev.set("file.hash.sha1", l.str())
		case "sha256":
			ev.set("file.hash.sha256", l.str())
		case "magic":
			// libmagic's description ("PE32 executable …") is not a MIME
			// type; only a type/subtype value is one.
			m := l.str()
			ev.set("suricata.eve.fileinfo.magic", m)
			if isMIMEType(m) {
				ev["file.mime_type"] = m
			}
		case "state":
			ev.set("suricata.eve.fileinfo.state", commonToken(l.raw()))
		case "stored":
			if v, ok := l.bool(); ok {
				ev["suricata.eve.fileinfo.stored"] = v
			}
		case "gaps":
			if v, ok := l.bool(); ok {
				ev["suricata.eve.fileinfo.gaps"] = v
			}
		default:
			l.skip()
		}
	}
}

func isMIMEType(s string) bool {
	typ, sub, ok := strings.Cut(s, "/")
	return ok && typ != "" && sub != "" && !strings.ContainsAny(s, " \t,")
}

func eveFlow(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	var pts, ptc, bts, btc int64
	var havePkts, haveBytes bool
	var start, end time.Time
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			break
		}
		switch string(k) {
		case "pkts_toserver":
			v, ok := l.int()
			pts, havePkts = v, havePkts || ok
		case "pkts_toclient":
			v, ok := l.int()
			ptc, havePkts = v, havePkts || ok
		case "bytes_toserver":
			v, ok := l.int()
			bts, haveBytes = v, haveBytes || ok
		case "bytes_toclient":
			v, ok := l.int()
			btc, haveBytes = v, haveBytes || ok
		case "start":
			start, _, _ = parseISOTime(l.raw())
		case "end":
			end, _, _ = parseISOTime(l.raw())
		case "state":
			ev.set("suricata.eve.flow.state", commonToken(l.raw()))
		case "reason":
			ev.set("suricata.eve.flow.reason", commonToken(l.raw()))
		case "alerted":
			if v, ok := l.bool(); ok {
				ev["suricata.eve.flow.alerted"] = v
			}
		case "age":
			if v, ok := l.int(); ok {
				ev["suricata.eve.flow.age"] = v
			}
		default:
			l.skip()
		}
	}
	if havePkts {
		ev["source.packets"] = pts
		ev["destination.packets"] = ptc
		ev["network.packets"] = pts + ptc
	}
	if haveBytes {
		ev["source.bytes"] = bts
		ev["destination.bytes"] = btc
		ev["network.bytes"] = bts + btc
	}
	if !start.IsZero() {
		ev["event.start"] = start.Format(time.RFC3339Nano)
	}
	if !end.IsZero() {
		ev["event.end"] = end.Format(time.RFC3339Nano)
		if !start.IsZero() && !end.Before(start) {
			ev["event.duration"] = int64(end.Sub(start))
		}
	}
}

// eveAnomaly maps the anomaly block and returns the anomaly's name (its
// event, else its type) for event.action.
func eveAnomaly(l *jsonLexer, ev Event) (action string) {
	if !l.object() {
		l.skip()
		return ""
	}
	var typ, event string
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			break
		}
		switch string(k) {
		case "type":
			typ = l.str()
		case "event":
			event = l.str()
		case "layer":
			ev.set("suricata.eve.anomaly.layer", l.str())
		case "code":
			if v, ok := l.int(); ok {
				ev["suricata.eve.anomaly.code"] = v
			}
		default:
			l.skip()
		}
	}
	ev.set("suricata.eve.anomaly.type", typ)
	ev.set("suricata.eve.anomaly.event", event)
	if event != "" {
		return event
	}
	return typ
}

// eveStats keeps a few engine totals of a stats record; the hundreds of
// other counters are skipped.
func eveStats(l *jsonLexer, ev Event) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		switch string(k) {
		case "uptime":
			if v, ok := l.int(); ok {
				ev["suricata.eve.stats.uptime"] = v
			}
		case "capture":
			eveCounters(l, ev, "suricata.eve.stats.capture.", "kernel_packets", "kernel_drops")
		case "decoder":
			eveCounters(l, ev, "suricata.eve.stats.decoder.", "pkts", "bytes", "invalid")
		case "detect":
			eveCounters(l, ev, "suricata.eve.stats.detect.", "alert")
		case "tcp":
			eveCounters(l, ev, "suricata.eve.stats.tcp.", "sessions")
		default:
			l.skip()
		}
	}
}

func eveCounters(l *jsonLexer, ev Event, prefix string, names ...string) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		found := false
		for _, name := range names {
			if string(k) == name {
				if v, ok := l.int(); ok {
					ev[prefix+name] = v
				}
				found = true
				break
			}
		}
		if !found {
			l.skip()
		}
	}
}

// commonToken returns b as a string, without allocating for the
// enumerated values that fill most events (protocols, record types,
// rcodes, methods, actions, states). b must be valid UTF-8 or is
// repaired.
func commonToken(b []byte) string {
	switch string(b) {
	case "A":
		return "A"
	case "AAAA":
		return "AAAA"
	case "CNAME":
		return "CNAME"
	case "NS":
		return "NS"
	case "MX":
		return "MX"
	case "PTR":
		return "PTR"
	case "TXT":
		return "TXT"
	case "SRV":
		return "SRV"
	case "SOA":
		return "SOA"
	case "HTTPS":
		return "HTTPS"
	case "ANY":
		return "ANY"
	case "AXFR":
		return "AXFR"
	case "IN":
		return "IN"
	case "NOERROR":
		return "NOERROR"
	case "NXDOMAIN":
		return "NXDOMAIN"
	case "SERVFAIL":
		return "SERVFAIL"
	case "REFUSED":
		return "REFUSED"
	case "query":
		return "query"
	case "answer":
		return "answer"
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "HEAD":
		return "HEAD"
	case "allowed":
		return "allowed"
	case "blocked":
		return "blocked"
	case "new":
		return "new"
	case "established":
		return "established"
	case "closed":
		return "closed"
	case "timeout":
		return "timeout"
	case "shutdown":
		return "shutdown"
	case "CLOSED":
		return "CLOSED"
	case "TRUNCATED":
		return "TRUNCATED"
	case "alert":
		return "alert"
	case "dns":
		return "dns"
	case "http":
		return "http"
	case "tls":
		return "tls"
	case "ssh":
		return "ssh"
	case "flow":
		return "flow"
	case "fileinfo":
		return "fileinfo"
	case "stats":
		return "stats"
	case "anomaly":
		return "anomaly"
	case "tcp":
		return "tcp"
	case "udp":
		return "udp"
	}
	return jsonString(b)
}

// transport lower-cases a protocol name, without allocating for the
// common ones.
func transport(b []byte) string {
	switch string(b) {
	case "TCP", "tcp":
		return "tcp"
	case "UDP", "udp":
		return "udp"
	case "ICMP", "icmp":
		return "icmp"
	case "IPv6-ICMP", "ipv6-icmp":
		return "ipv6-icmp"
	case "SCTP", "sctp":
		return "sctp"
	}
	return strings.ToLower(jsonString(b))
}
