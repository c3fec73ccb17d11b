package parse

// The firewall parser reads three families of lines:
//
//   - netfilter LOG/NFLOG lines (iptables, nftables, UFW, EdgeOS/Ubiquiti),
//     with or without a syslog header and a kernel uptime "[  341.399450]",
//     with the log prefix before IN= kept as rule.name;
//   - the same lines as Proxmox VE writes them to pve-firewall.log
//     ("0 3 PVEFW-HOST-IN 20/Jun/2022:13:09:14 +0200 policy DROP: IN=…"),
//     whose chain becomes rule.name;
//   - pfSense/OPNsense filterlog CSV, in BSD or RFC 5424 syslog.
//
// Fields: source/destination .ip .port .mac, network.transport
// (tcp, udp, icmp, ipv6-icmp, esp, …), network.type (ipv4, ipv6),
// network.bytes (IP packet length), observer.ingress/egress.interface.name,
// rule.name, rule.id, event.action (block, drop, reject, pass, accept, log),
// event.outcome (failure when denied, success when allowed), event.category
// network, tcp.flags, tcp.window, icmp.type, icmp.code, ip.ttl.
//
// The action comes from the log prefix: BLOCK and DENY → block, DROP →
// drop, REJECT → reject, ACCEPT and ALLOW → accept, PASS → pass; an EdgeOS
// rule name ending in -A, -D or -R → accept, drop, reject; anything else
// (AUDIT, plain "[netfilter-INPUT]") → log.

import (
	"bytes"
	"strings"
	"time"
)

func parseFirewall(raw []byte, ref time.Time) (Event, time.Time, bool) {
	h, msg, ok := parseSyslog(raw, ref)
	ts := h.Time
	if !ok {
		msg = raw
	}
	msg = trimLeftBlank(bytes.TrimRight(msg, " \t\r\n"))
	ev := make(Event, 24)
	if ok {
		ev.setSyslogHeader(h)
	}
	if h.Program == "filterlog" || looksFilterlog(msg) {
		if fwFilterlog(ev, msg) {
			return ev, ts, true
		}
		return nil, time.Time{}, false
	}
	var chain []byte
	if c, t, rest, okP := fwProxmox(msg); okP {
		chain, msg = c, rest
		if ts.IsZero() {
			ts = t
		}
	}
	msg = trimUptime(msg)
	start := netfilterStart(msg)
	if start < 0 {
		return nil, time.Time{}, false
	}
	prefix := bytes.TrimSpace(msg[:start])
	prefix = bytes.TrimSpace(bytes.TrimRight(prefix, ":"))
	if len(prefix) >= 2 && prefix[0] == '[' && prefix[len(prefix)-1] == ']' {
		prefix = bytes.TrimSpace(prefix[1 : len(prefix)-1])
	}
	if bytes.IndexByte(prefix, '=') >= 0 {
		prefix = nil
	}
	if len(prefix) == 0 && chain == nil && h.Host == "" && h.Program != "" && h.Program != "kernel" {
		// "Jan  8 03:37:09 DENY: IN=…": the prefix was read as a tag.
		prefix = []byte(h.Program)
		delete(ev, "process.name")
	}
	if !fwNetfilter(ev, msg[start:]) {
		return nil, time.Time{}, false
	}
	action := fwAction(prefix)
	switch {
	case chain != nil:
		ev["rule.name"] = string(chain)
	case len(prefix) > 0:
		ev["rule.name"] = string(prefix)
		if id := edgeRuleNumber(prefix); id != nil {
			ev["rule.id"] = string(id)
		}
	}
	ev.setFirewallAction(action)
	return ev, ts, true
}

// setFirewallAction stores event.action, its outcome and the category.
func (ev Event) setFirewallAction(action string) {
	ev["event.category"] = "network"
	ev["event.action"] = action
	switch action {
	case "block", "drop", "reject":
		ev["event.outcome"] = "failure"
	case "pass", "accept":
		ev["event.outcome"] = "success"
	}
}

// netfilterStart returns where the key=value part starts: the first of
// IN=, OUT=, SRC= at a word start (a log prefix may end in ']' or ':'
// with no space, "[wan-lan-default-D]IN=eth0").
func netfilterStart(b []byte) int {
	best := -1
	for _, k := range [...]string{"IN=", "OUT=", "SRC="} {
		off := 0
		for off < len(b) {
			i := indexStr(b[off:], k)
			if i < 0 {
				break
			}
			i += off
			if i == 0 || b[i-1] == ' ' || b[i-1] == ']' || b[i-1] == ':' {
				if best < 0 || i < best {
					best = i
				}
				break
			}
			off = i + len(k)
		}
	}
	return best
}

// fwNetfilter reads the key=value fields of a netfilter LOG line. It
// stops at '[' where an ICMP error quotes the offending packet's header,
// so that header's SRC/DST do not override the outer ones. It reports
// whether SRC or DST was found.
func fwNetfilter(ev Event, b []byte) bool {
	var flags []string
	found, haveLen := false, false
	var proto []byte
	for len(b) > 0 {
		var tok []byte
		tok, b = nextToken(trimLeftBlank(b))
		if len(tok) == 0 {
			continue
		}
		if tok[0] == '[' {
			break
		}
		eq := bytes.IndexByte(tok, '=')
		if eq < 0 {
			if f := tcpFlagName(tok); f != "" {
				flags = append(flags, f)
			}
			continue
		}
		v := tok[eq+1:]
		switch string(tok[:eq]) {
		case "IN":
			ev.set("observer.ingress.interface.name", string(v))
		case "OUT":
			ev.set("observer.egress.interface.name", string(v))
		case "MAC":
			// destination MAC, source MAC, EtherType
			if len(v) >= 35 {
				ev.set("destination.mac", ecsMAC(v[:17]))
				ev.set("source.mac", ecsMAC(v[18:35]))
			}
		case "SRC":
			if ev.setIP("source.ip", v) {
				found = true
			}
		case "DST":
			if ev.setIP("destination.ip", v) {
				found = true
			}
		case "LEN":
			if !haveLen { // the second LEN is the UDP length
				haveLen = ev.setInt("network.bytes", v)
			}
		case "TTL", "HOPLIMIT":
			ev.setInt("ip.ttl", v)
		case "PROTO":
			proto = v
		case "SPT":
			ev.setPort("source.port", v)
		case "DPT":
			ev.setPort("destination.port", v)
		case "WINDOW":
			ev.setInt("tcp.window", v)
		case "TYPE":
			ev.setInt("icmp.type", v)
		case "CODE":
			ev.setInt("icmp.code", v)
		}
	}
	if t := transportName(proto); t != "" {
		ev["network.transport"] = t
	}
	if len(flags) > 0 {
		ev["tcp.flags"] = flags
	}
	ev.setNetworkType()
	return found
}

// setNetworkType derives network.type from the addresses.
func (ev Event) setNetworkType() {
	ip, _ := ev["source.ip"].(string)
	if ip == "" {
		ip, _ = ev["destination.ip"].(string)
	}
	if ip == "" {
		return
	}
	if strings.IndexByte(ip, ':') >= 0 {
		ev["network.type"] = "ipv6"
	} else {
		ev["network.type"] = "ipv4"
	}
}

// tcpFlagName returns the canonical name of a netfilter TCP flag token.
func tcpFlagName(b []byte) string {
	switch string(b) {
	case "SYN":
		return "SYN"
	case "ACK":
		return "ACK"
	case "FIN":
		return "FIN"
	case "RST":
		return "RST"
	case "PSH":
		return "PSH"
	case "URG":
		return "URG"
	case "ECE":
		return "ECE"
	case "CWR":
		return "CWR"
	}
	return ""
}

// transportName maps a protocol name or IANA number to the lower-case
// name ECS uses for network.transport.
func transportName(p []byte) string {
	if len(p) == 0 || len(p) > 32 {
		return ""
	}
	var buf [32]byte
	for i, c := range p {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	switch s := string(buf[:len(p)]); s {
	case "tcp", "6":
		return "tcp"
	case "udp", "17":
		return "udp"
	case "icmp", "1":
		return "icmp"
	case "icmpv6", "ipv6-icmp", "icmp6", "58":
		return "ipv6-icmp"
	case "igmp", "2":
		return "igmp"
	case "gre", "47":
		return "gre"
	case "esp", "50":
		return "esp"
	case "ah", "51":
		return "ah"
	case "sctp", "132":
		return "sctp"
	case "udplite", "136":
		return "udplite"
	case "carp", "112":
		return "carp"
	default:
		for _, c := range p {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '-') {
				return ""
			}
		}
		return s
	}
}

// fwAction derives event.action from a log prefix.
func fwAction(prefix []byte) string {
	if len(prefix) >= 2 && prefix[len(prefix)-2] == '-' {
		// EdgeOS "[WAN_IN-2000-D]", "[wan-lan-default-A]".
		switch prefix[len(prefix)-1] {
		case 'A':
			return "accept"
		case 'D':
			return "drop"
		case 'R':
			return "reject"
		}
	}
	switch {
	case containsFold(prefix, "BLOCK"), containsFold(prefix, "DENY"):
		return "block"
	case containsFold(prefix, "REJECT"):
		return "reject"
	case containsFold(prefix, "DROP"):
		return "drop"
	case containsFold(prefix, "ACCEPT"), containsFold(prefix, "ALLOW"):
		return "accept"
	case containsFold(prefix, "PASS"):
		return "pass"
	}
	return "log"
}

// edgeRuleNumber returns the rule number of an EdgeOS prefix
// "NAME-2000-A", nil otherwise.
func edgeRuleNumber(p []byte) []byte {
	n := len(p)
	if n < 5 || p[n-2] != '-' {
		return nil
	}
	i := n - 3
	for i >= 0 && isDigit(p[i]) {
		i--
	}
	if i < 1 || i == n-3 || p[i] != '-' {
		return nil
	}
	return p[i+1 : n-2]
}

// containsFold reports whether b contains the upper-case ASCII word s,
// ignoring case.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		j := 0
		for ; j < len(s); j++ {
			c := b[i+j]
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			if c != s[j] {
				break
			}
		}
		if j == len(s) {
			return true
		}
	}
	return false
}

// trimUptime drops a kernel timestamp "[  341.399450] ".
func trimUptime(b []byte) []byte {
	if len(b) < 3 || b[0] != '[' {
		return b
	}
	i := 1
	for i < len(b) && b[i] == ' ' {
		i++
	}
	d := i
	for i < len(b) && (isDigit(b[i]) || b[i] == '.') {
		i++
	}
	if i == d || i >= len(b) || b[i] != ']' {
		return b
	}
	return trimLeftBlank(b[i+1:])
}

// fwProxmox recognizes the pve-firewall.log prefix "VMID LEVEL CHAIN
// 20/Jun/2022:13:09:14 +0200 " and returns the chain, the time and the
// rest.
func fwProxmox(b []byte) (chain []byte, t time.Time, rest []byte, ok bool) {
	vmid, r := nextToken(b)
	level, r := nextToken(trimOneSpace(r))
	chain, r = nextToken(trimOneSpace(r))
	ts, r := nextToken(trimOneSpace(r))
	zone, r := nextToken(trimOneSpace(r))
	if len(vmid) == 0 || len(level) == 0 || len(chain) == 0 || !isNumber(vmid) || !isNumber(level) {
		return nil, time.Time{}, nil, false
	}
	// 20/Jun/2022:13:09:14
	if len(ts) != 20 || ts[2] != '/' || ts[6] != '/' || ts[11] != ':' {
		return nil, time.Time{}, nil, false
	}
	day, ok1 := digitsN(ts, 2)
	mon := monthOf(ts[3], ts[4], ts[5])
	year, ok2 := digitsN(ts[7:], 4)
	hh, mm, ss, _, _, ok3 := parseClock(ts[12:])
	if !ok1 || !ok2 || !ok3 || mon == 0 || day < 1 || day > 31 {
		return nil, time.Time{}, nil, false
	}
	t = time.Date(year, time.Month(mon), day, hh, mm, ss, 0, time.UTC)
	if len(zone) == 5 && (zone[0] == '+' || zone[0] == '-') {
		zh, okh := digitsN(zone[1:], 2)
		zm, okm := digitsN(zone[3:], 2)
		if okh && okm {
			off := time.Duration(zh)*time.Hour + time.Duration(zm)*time.Minute
			if zone[0] == '-' {
				off = -off
			}
			t = t.Add(-off)
		}
	}
	return chain, t, trimLeftBlank(r), true
}

func isNumber(b []byte) bool {
	_, ok := atoiBytes(b)
	return ok
}

// looksFilterlog reports whether b starts like a filterlog record: a rule
// number, then a comma.
func looksFilterlog(b []byte) bool {
	i := 0
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i > 0 && i < len(b) && b[i] == ','
}

// fwFilterlog parses pfSense/OPNsense filterlog CSV (the field order of
// docs.netgate.com "Raw Filter Log Format"). It reports whether the
// record's common fields were there: rule, interface, action, direction
// and IP version.
func fwFilterlog(ev Event, b []byte) bool {
	var fa [40][]byte
	f := fa[:0]
	for len(f) < len(fa) {
		i := bytes.IndexByte(b, ',')
		if i < 0 {
			f = append(f, b)
			break
		}
		f = append(f, b[:i])
		b = b[i+1:]
	}
	if len(f) < 9 {
		return false
	}
	action := string(f[6])
	switch action {
	case "block", "pass", "reject", "match", "scrub", "nat", "rdr", "binat":
	default:
		return false
	}
	var p int // index of the first protocol-specific field
	var proto []byte
	switch string(f[8]) {
	case "4":
		if len(f) < 20 {
			return false
		}
		ev.setInt("ip.ttl", f[11])
		proto = f[16]
		if len(proto) == 0 {
			proto = f[15]
		}
		ev.setInt("network.bytes", f[17])
		ev.setIP("source.ip", f[18])
		ev.setIP("destination.ip", f[19])
		p = 20
	case "6":
		if len(f) < 17 {
			return false
		}
		ev.setInt("ip.ttl", f[11])
		proto = f[12]
		if len(proto) == 0 {
			proto = f[13]
		}
		ev.setInt("network.bytes", f[14])
		ev.setIP("source.ip", f[15])
		ev.setIP("destination.ip", f[16])
		p = 17
	default:
		return false
	}
	ev.setNetworkType()
	ev.setFirewallAction(action)
	if action == "match" {
		ev["event.action"] = "log"
	}
	if len(f[3]) > 0 && string(f[3]) != "0" {
		ev["rule.id"] = string(f[3])
	} else {
		ev.set("rule.id", string(f[0]))
	}
	ev.set("rule.ruleset", string(f[2]))
	switch string(f[7]) {
	case "in":
		ev.set("observer.ingress.interface.name", string(f[4]))
		ev["network.direction"] = "ingress"
	case "out":
		ev.set("observer.egress.interface.name", string(f[4]))
		ev["network.direction"] = "egress"
	}
	if r := string(f[5]); r != "match" {
		ev.set("event.reason", r)
	}
	t := transportName(proto)
	if t != "" {
		ev["network.transport"] = t
	}
	rest := f[p:]
	switch t {
	case "tcp":
		// sport, dport, data length, flags, seq, ack, window, urg, options
		if len(rest) >= 2 {
			ev.setPort("source.port", rest[0])
			ev.setPort("destination.port", rest[1])
		}
		if len(rest) >= 4 && len(rest[3]) > 0 {
			var flags []string
			for _, c := range rest[3] {
				if n := pfFlagName(c); n != "" {
					flags = append(flags, n)
				}
			}
			if len(flags) > 0 {
				ev["tcp.flags"] = flags
			}
		}
		if len(rest) >= 7 {
			ev.setInt("tcp.window", rest[6])
		}
	case "udp":
		if len(rest) >= 2 {
			ev.setPort("source.port", rest[0])
			ev.setPort("destination.port", rest[1])
		}
	case "icmp":
		if len(rest) >= 1 {
			if n, ok := icmpTypeNumber(string(rest[0])); ok {
				ev["icmp.type"] = n
			}
		}
	}
	return true
}

// pfFlagName names a pf TCP flag letter.
func pfFlagName(c byte) string {
	switch c {
	case 'S':
		return "SYN"
	case 'A':
		return "ACK"
	case 'F':
		return "FIN"
	case 'R':
		return "RST"
	case 'P':
		return "PSH"
	case 'U':
		return "URG"
	case 'E':
		return "ECE"
	case 'W', 'C':
		return "CWR"
	}
	return ""
}

// icmpTypeNumber maps pf's ICMP type words to their numbers.
func icmpTypeNumber(s string) (int64, bool) {
	switch s {
	case "reply":
		return 0, true
	case "unreach", "unreachproto", "unreachport", "needfrag":
		return 3, true
	case "redirect":
		return 5, true
	case "request":
		return 8, true
	case "routeradvert":
		return 9, true
	case "routersol":
		return 10, true
	case "timexceed":
		return 11, true
	case "paramprob":
		return 12, true
	case "tstamp":
		return 13, true
	case "tstampreply":
		return 14, true
	case "maskreq":
		return 17, true
	case "maskreply":
		return 18, true
	}
	return 0, false
}
