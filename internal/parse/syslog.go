package parse

import (
	"bytes"
	"net/netip"
	"time"
)

// SyslogHeader is the header of an RFC 3164 or RFC 5424 line.
type SyslogHeader struct {
	Time     time.Time // zero if none
	Host     string
	Program  string // app name / tag without pid, e.g. "sshd", "kernel", "filterlog"
	PID      string
	Priority int // -1 if absent
}

// parseSyslog parses an optional "<PRI>" then an RFC 5424 header ("1
// 2026-01-02T03:04:05Z host app procid msgid [sd]") or an RFC 3164 header
// ("Jun 14 15:16:01 host prog[123]: "), also tolerating ISO-8601 timestamps
// in 3164 position ("2019-06-14T15:16:01.123+02:00 host prog: ") and lines
// with no host/program. It returns the header and the message after it; ok
// is false when no timestamp-led header is found (then msg is the whole
// line).
//
// Year-less RFC 3164 dates are placed in ref's year, or the year before
// when that would put them more than a day after ref: logs do not come
// from the future, and a December line read in January is last year's.
// A zero ref means now. Times are returned in UTC; a timestamp without a
// zone is taken as UTC.
//
// A tag qualified in parentheses, as old PAM wrote it ("sshd(pam_unix)"),
// yields Program "sshd". A facility.severity token some devices put after
// the host ("user.info") is skipped.
func parseSyslog(line []byte, ref time.Time) (h SyslogHeader, msg []byte, ok bool) {
	h.Priority = -1
	s := line
	// A UTF-8 BOM or stray leading blanks do not make a line unparseable.
	if len(s) >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF {
		s = s[3:]
	}
	s = trimLeftBlank(s)
	if len(s) > 2 && s[0] == '<' {
		pri, n := 0, 1
		for n < len(s) && n <= 4 && isDigit(s[n]) {
			pri = pri*10 + int(s[n]-'0')
			n++
		}
		if n > 1 && n < len(s) && s[n] == '>' && pri <= 191 {
			h.Priority = pri
			s = s[n+1:]
		}
	}
	if len(s) >= 2 && s[0] == '1' && s[1] == ' ' {
		if m, ok5 := parse5424(s[2:], &h); ok5 {
			return h, m, true
		}
	}
	t, n, okTS := parseSyslogTime(s, ref)
	if !okTS {
		return SyslogHeader{Priority: h.Priority}, line, false
	}
	h.Time = t
	rest := trimLeftBlank(s[n:])

	// Host, then tag; either may be missing.
	tok, after := nextToken(rest)
	if len(tok) == 0 {
		return h, rest, true
	}
	if name, pid, tagOK := syslogTag(tok); tagOK {
		h.Program, h.PID = name, pid
		return h, trimLeftBlank(after), true
	}
	if n := len(tok); n > 3 && tok[0] == '[' && tok[n-2] == ']' && tok[n-1] == ':' && isTagName(tok[1:n-2]) {
		// "[sshd]: message": a bracketed program and no host.
		h.Program = string(tok[1 : n-2])
		return h, trimLeftBlank(after), true
	}
	if tok[0] == '[' || bytes.IndexByte(tok, '=') >= 0 {
		// "[UFW BLOCK] IN=…", "IN=eth0 …": the message starts right
		// after the time.
		return h, rest, true
	}
	h.Host = string(tok)
	rest = trimLeftBlank(after)
	tok, after = nextToken(rest)
	if isFacilitySeverity(tok) {
		rest = trimLeftBlank(after)
		tok, after = nextToken(rest)
	}
	if name, pid, tagOK := syslogTag(tok); tagOK {
		h.Program, h.PID = name, pid
		return h, trimLeftBlank(after), true
	}
	// "syslogd 1.4.1: restart.": a program followed by its version.
	if ver, after2 := nextToken(trimOneSpace(after)); len(ver) > 1 && isDigit(ver[0]) &&
		ver[len(ver)-1] == ':' && isTagName(tok) {
		h.Program = string(tok)
		return h, trimLeftBlank(after2), true
	}
	return h, rest, true
}

// parse5424 parses the RFC 5424 header after "<PRI>1 ". The timestamp may
// be the nil value "-".
func parse5424(s []byte, h *SyslogHeader) (msg []byte, ok bool) {
	var t time.Time
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	} else {
		var n int
		t, n, ok = parseISOTime(s)
		if !ok {
			return nil, false
		}
		s = s[n:]
	}
	if len(s) == 0 || s[0] != ' ' {
		return nil, false
	}
	var host, app, procid []byte
	host, s = nextToken(s[1:])
	app, s = nextToken(trimOneSpace(s))
	procid, s = nextToken(trimOneSpace(s))
	_, s = nextToken(trimOneSpace(s)) // msgid
	if len(host) == 0 || len(app) == 0 || len(procid) == 0 {
		return nil, false
	}
	s = trimOneSpace(s)
	// Structured data: "-" or one or more [id k="v" ...] elements whose
	// values may hold escaped quotes and brackets.
	switch {
	case len(s) == 0:
	case s[0] == '-':
		s = s[1:]
	case s[0] == '[':
		i := 0
		for i < len(s) && s[i] == '[' {
			inQuote := false
			i++
			for ; i < len(s); i++ {
				c := s[i]
				if c == '\\' && inQuote {
					i++
					continue
				}
				if c == '"' {
					inQuote = !inQuote
					continue
				}
				if c == ']' && !inQuote {
					i++
					break
				}
			}
		}
		s = s[min(i, len(s)):]
	default:
		return nil, false
	}
	// One space ends the header; rsyslog's RFC 5424 template
	// (RSYSLOG_SyslogProtocol23Format) adds it to a message that kept the
	// space it had after the RFC 3164 tag, so blanks are trimmed as after
	// a tag.
	s = trimLeftBlank(s)
	if len(s) >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF {
		s = s[3:]
	}
	h.Time = t
	h.Host = nilDash(host)
	h.Program = nilDash(app)
	h.PID = nilDash(procid)
	return s, true
}

// parseSyslogTime parses the timestamp that opens a line: RFC 3164
// ("Jun  4 15:16:01", optionally with fractional seconds or a year before
// the time) or ISO 8601. n is the number of bytes consumed.
func parseSyslogTime(s []byte, ref time.Time) (t time.Time, n int, ok bool) {
	if len(s) >= 10 && isDigit(s[0]) && s[4] == '-' {
		return parseISOTime(s)
	}
	if len(s) < 14 {
		return time.Time{}, 0, false
	}
	mon := monthOf(s[0], s[1], s[2])
	if mon == 0 || s[3] != ' ' {
		return time.Time{}, 0, false
	}
	i := 4
	if s[i] == ' ' { // space-padded day
		i++
	}
	day := 0
	j := i
	for j < len(s) && j < i+2 && isDigit(s[j]) {
		day = day*10 + int(s[j]-'0')
		j++
	}
	if j == i || day < 1 || day > 31 || j >= len(s) || s[j] != ' ' {
		return time.Time{}, 0, false
	}
	i = j + 1
	year := 0
	// "Jun 14 2019 15:16:01" (Cisco and others put the year here).
	if i+5 <= len(s) && s[i+4] == ' ' {
		if y, okY := digitsN(s[i:], 4); okY {
			year = y
			i += 5
		}
	}
	hh, mm, ss, nsec, m, okC := parseClock(s[i:])
	if !okC {
		return time.Time{}, 0, false
	}
	i += m
	if year == 0 {
		if ref.IsZero() {
			ref = time.Now()
		}
		ref = ref.UTC()
		year = ref.Year()
		t = time.Date(year, time.Month(mon), day, hh, mm, ss, nsec, time.UTC)
		if t.After(ref.Add(24 * time.Hour)) {
			year--
			t = time.Date(year, time.Month(mon), day, hh, mm, ss, nsec, time.UTC)
		}
		// Feb 29 only exists in leap years: step back to the last one.
		for k := 0; k < 4 && t.Day() != day; k++ {
			year--
			t = time.Date(year, time.Month(mon), day, hh, mm, ss, nsec, time.UTC)
		}
	} else {
		t = time.Date(year, time.Month(mon), day, hh, mm, ss, nsec, time.UTC)
	}
	if t.Day() != day {
		return time.Time{}, 0, false
	}
	return t, i, true
}

// parseISOTime parses "2006-01-02T15:04:05[.frac][Z|±07:00|±0700]" (a space
// may stand for the T) and returns it in UTC.
func parseISOTime(s []byte) (t time.Time, n int, ok bool) {
	if len(s) < 19 {
		return time.Time{}, 0, false
	}
	year, ok1 := digitsN(s, 4)
	mon, ok2 := digitsN(s[5:], 2)
	day, ok3 := digitsN(s[8:], 2)
	if !ok1 || !ok2 || !ok3 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') {
		return time.Time{}, 0, false
	}
	if mon < 1 || mon > 12 || day < 1 || day > 31 {
		return time.Time{}, 0, false
	}
	hh, mm, ss, nsec, m, okC := parseClock(s[11:])
	if !okC {
		return time.Time{}, 0, false
	}
	n = 11 + m
	var off int
	if n < len(s) {
		switch c := s[n]; c {
		case 'Z', 'z':
			n++
		case '+', '-':
			oh, okH := digitsN(s[n+1:], 2)
			if !okH {
				break
			}
			k := n + 3
			if k < len(s) && s[k] == ':' {
				k++
			}
			om, okM := digitsN(s[k:], 2)
			if !okM || oh > 23 || om > 59 {
				break
			}
			off = (oh*60 + om) * 60
			if c == '-' {
				off = -off
			}
			n = k + 2
		}
	}
	t = time.Date(year, time.Month(mon), day, hh, mm, ss, nsec, time.UTC)
	if t.Day() != day {
		return time.Time{}, 0, false
	}
	if off != 0 {
		t = t.Add(-time.Duration(off) * time.Second)
	}
	return t, n, true
}

// parseClock parses "15:04:05" with optional fractional seconds.
func parseClock(s []byte) (hh, mm, ss, nsec, n int, ok bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, 0, 0, 0, 0, false
	}
	var ok1, ok2, ok3 bool
	hh, ok1 = digitsN(s, 2)
	mm, ok2 = digitsN(s[3:], 2)
	ss, ok3 = digitsN(s[6:], 2)
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 60 {
		return 0, 0, 0, 0, 0, false
	}
	if ss == 60 { // a leap second is the last instant of the minute
		ss = 59
		nsec = 999999999
	}
	n = 8
	if n+1 < len(s) && (s[n] == '.' || s[n] == ',') && isDigit(s[n+1]) {
		n++
		scale := 100000000
		f := 0
		for n < len(s) && isDigit(s[n]) {
			f += int(s[n]-'0') * scale
			scale /= 10
			n++
		}
		if nsec == 0 {
			nsec = f
		}
	}
	return hh, mm, ss, nsec, n, true
}

// syslogTag recognizes "prog:", "prog[pid]:" and "prog[pid]" and returns
// the program without any parenthesised qualifier.
func syslogTag(tok []byte) (name, pid string, ok bool) {
	if len(tok) < 2 {
		return "", "", false
	}
	colon := tok[len(tok)-1] == ':'
	if colon {
		tok = tok[:len(tok)-1]
	}
	if n := len(tok); n > 2 && tok[n-1] == ']' {
		open := -1
		for i := n - 2; i > 0; i-- {
			if tok[i] == '[' {
				open = i
				break
			}
		}
		if open <= 0 {
			return "", "", false
		}
		p := tok[open+1 : n-1]
		if len(p) == 0 || len(p) > 20 {
			return "", "", false
		}
		for _, c := range p {
			if !isDigit(c) {
				return "", "", false
			}
		}
		pid = string(p)
		tok = tok[:open]
	} else if !colon {
		return "", "", false
	}
	if !isTagName(tok) {
		return "", "", false
	}
	// "sshd(pam_unix)" → "sshd".
	if tok[len(tok)-1] == ')' {
		for i := 1; i < len(tok); i++ {
			if tok[i] == '(' {
				tok = tok[:i]
				break
			}
		}
	}
	return string(tok), pid, true
}

// isTagName reports whether b can be a syslog program name.
func isTagName(b []byte) bool {
	if len(b) == 0 || len(b) > 64 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || c == '[' || c == ']' || c == ':' || c == '=' || c == '"' {
			return false
		}
	}
	return true
}

var syslogFacilities = [...]string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
	"uucp", "cron", "authpriv", "ftp", "local0", "local1", "local2", "local3", "local4", "local5",
	"local6", "local7", "security"}

// isFacilitySeverity recognizes "user.info"-style tokens.
func isFacilitySeverity(tok []byte) bool {
	dot := -1
	for i, c := range tok {
		if c == '.' {
			dot = i
			break
		}
	}
	if dot <= 0 || dot == len(tok)-1 {
		return false
	}
	for _, f := range syslogFacilities {
		if string(tok[:dot]) == f {
			return true
		}
	}
	return false
}

// setSyslogHeader stores the header fields in ev using ECS names:
// host.name, process.name, process.pid and, when the line had a <PRI>,
// log.syslog.priority with its facility and severity codes.
func (ev Event) setSyslogHeader(h SyslogHeader) {
	ev.set("host.name", h.Host)
	ev.set("process.name", h.Program)
	if pid, ok := atoiBytes([]byte(h.PID)); ok {
		ev["process.pid"] = pid
	}
	if h.Priority >= 0 {
		ev["log.syslog.priority"] = int64(h.Priority)
		ev["log.syslog.facility.code"] = int64(h.Priority / 8)
		ev["log.syslog.severity.code"] = int64(h.Priority % 8)
	}
}

// setIP stores v under k if it is a valid IP address, in canonical form.
// It reports whether it stored it.
func (ev Event) setIP(k string, v []byte) bool {
	if len(v) == 0 || len(v) > 64 {
		return false
	}
	if isCanonicalIPv4(v) {
		// The common case, without netip's allocations.
		ev[k] = string(v)
		return true
	}
	a, err := netip.ParseAddr(string(v))
	if err != nil {
		return false
	}
	ev[k] = a.Unmap().String()
	return true
}

// isCanonicalIPv4 reports whether b is a dotted-quad IPv4 address in the
// form netip prints it: four decimal octets without leading zeros.
func isCanonicalIPv4(b []byte) bool {
	if len(b) < 7 || len(b) > 15 {
		return false
	}
	octets, n, digits := 0, 0, 0
	for i, c := range b {
		switch {
		case isDigit(c):
			if digits > 0 && n == 0 { // leading zero
				return false
			}
			n = n*10 + int(c-'0')
			digits++
			if n > 255 {
				return false
			}
		case c == '.' && digits > 0 && octets < 3 && i < len(b)-1:
			octets++
			n, digits = 0, 0
		default:
			return false
		}
	}
	return octets == 3 && digits > 0
}

// setInt stores v under k as an int64 if it is a decimal number.
func (ev Event) setInt(k string, v []byte) bool {
	n, ok := atoiBytes(v)
	if ok {
		ev[k] = n
	}
	return ok
}

// atoiBytes parses a non-negative decimal of at most 18 digits.
func atoiBytes(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func digitsN(s []byte, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for _, c := range s[:n] {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func monthOf(a, b, c byte) int {
	switch string([]byte{a | 0x20, b | 0x20, c | 0x20}) {
	case "jan":
		return 1
	case "feb":
		return 2
	case "mar":
		return 3
	case "apr":
		return 4
	case "may":
		return 5
	case "jun":
		return 6
	case "jul":
		return 7
	case "aug":
		return 8
	case "sep":
		return 9
	case "oct":
		return 10
	case "nov":
		return 11
	case "dec":
		return 12
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func trimLeftBlank(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func trimOneSpace(b []byte) []byte {
	if len(b) > 0 && b[0] == ' ' {
		return b[1:]
	}
	return b
}

// nextToken splits b at its first space or tab.
func nextToken(b []byte) (tok, rest []byte) {
	for i, c := range b {
		if c == ' ' || c == '\t' {
			return b[:i], b[i:]
		}
	}
	return b, nil
}

func nilDash(b []byte) string {
	if len(b) == 1 && b[0] == '-' {
		return ""
	}
	return string(b)
}

// ParseSyslogHeader parses the syslog header of line exactly as the
// parsers of this package do (see parseSyslog), for callers that choose a
// source from it: what they read is what the parser will read.
func ParseSyslogHeader(line []byte, ref time.Time) (h SyslogHeader, msg []byte, ok bool) {
	return parseSyslog(line, ref)
}
