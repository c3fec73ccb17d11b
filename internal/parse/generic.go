package parse

// The generic parser takes what it can from a line of any source, in this
// order:
//
//  1. a JSON object (alone or after a syslog header), flattened into
//     dotted keys: {"a":{"b":1}} → "a.b": 1. Arrays of scalars become
//     []string of their text; objects inside arrays are dropped. Nesting
//     deeper than genericMaxDepth is dropped, and at most
//     genericMaxFields fields are kept. Keys keep their case.
//  2. key=value pairs (k=v, k="quoted v", k='quoted v'), at least two,
//     keys of [A-Za-z0-9_.-], stored under the lower-cased key.
//  3. the syslog header alone, with the text after it in message.
//
// In 1 and 2 a few common names are stored under their ECS field when the
// value fits (src, src_ip, srcip → source.ip; dst, dst_ip → destination.ip;
// spt, sport, src_port → source.port; dpt, dport, dst_port →
// destination.port; user, username → user.name; host, hostname →
// host.name; action → event.action; proto, protocol → network.transport;
// msg → message); see genericAliases. The event time comes from
// @timestamp, timestamp, time or ts: RFC 3339 text or epoch seconds (a
// number too large for seconds is read as milliseconds, microseconds or
// nanoseconds).

import (
	"bytes"
	"math"
	"strconv"
	"time"
)

const (
	genericMaxDepth  = 8
	genericMaxFields = 500
)

func parseGeneric(raw []byte, ref time.Time) (Event, time.Time, bool) {
	h, msg, okS := parseSyslog(raw, ref)
	body := raw
	if okS {
		body = msg
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		if ev, ok := genericJSON(body); ok {
			ts := genericTime(ev)
			if okS {
				for k, v := range headerEvent(h) {
					if _, dup := ev[k]; !dup {
						ev[k] = v
					}
				}
				if ts.IsZero() {
					ts = h.Time
				}
			}
			return ev, ts, true
		}
	}
	ev := make(Event, 8)
	if okS {
		ev.setSyslogHeader(h)
	}
	if genericKV(ev, body) >= 2 {
		ts := genericTime(ev)
		if ts.IsZero() {
			ts = h.Time
		}
		return ev, ts, true
	}
	if okS {
		// Drop whatever a lone k=v left behind.
		ev = headerEvent(h)
		ev.set("message", capText(body))
		return ev, h.Time, true
	}
	return Event{}, time.Time{}, false
}

func headerEvent(h SyslogHeader) Event {
	ev := make(Event, 6)
	ev.setSyslogHeader(h)
	return ev
}

// genericAliases maps common names to ECS fields; the value must suit
// the field (an address, a port) or it stays under its own name.
var genericAliases = map[string]string{
	"src": "source.ip", "src_ip": "source.ip", "srcip": "source.ip", "source_ip": "source.ip",
	"sip": "source.ip", "client_ip": "source.ip",
	"dst": "destination.ip", "dst_ip": "destination.ip", "dstip": "destination.ip",
	"destination_ip": "destination.ip", "dip": "destination.ip",
	"spt": "source.port", "sport": "source.port", "src_port": "source.port", "srcport": "source.port",
	"source_port": "source.port",
	"dpt":         "destination.port", "dport": "destination.port", "dst_port": "destination.port",
	"dstport": "destination.port", "destination_port": "destination.port",
	"user": "user.name", "username": "user.name", "user_name": "user.name",
	"host": "host.name", "hostname": "host.name",
	"action": "event.action",
	"proto":  "network.transport", "protocol": "network.transport",
	"msg": "message",
}

// storeGeneric stores a string value under key, or under its ECS alias
// when alias is set. Empty and "-" values are dropped.
func (ev Event) storeGeneric(key []byte, v []byte, alias bool) {
	if len(v) == 0 || (len(v) == 1 && v[0] == '-') {
		return
	}
	if a, ok := genericAliases[string(key)]; ok && alias {
		switch a {
		case "source.ip", "destination.ip":
			if ev.setIP(a, v) {
				return
			}
		case "source.port", "destination.port":
			if p, ok := atoiBytes(v); ok && p <= 65535 {
				ev[a] = p
				return
			}
		case "network.transport":
			if t := transportName(v); t != "" {
				ev[a] = t
				return
			}
		default:
			ev[a] = jsonString(v)
			return
		}
	}
	ev[string(key)] = jsonString(v)
}

// genericKV reads key=value pairs into ev and returns how many it saw.
func genericKV(ev Event, b []byte) int {
	pairs := 0
	var kbuf [128]byte
	for i := 0; i < len(b); {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == ',' || b[i] == ';') {
			i++
		}
		ks := i
		for i < len(b) && isKeyByte(b[i]) {
			i++
		}
		if i == ks || i >= len(b) || b[i] != '=' || i-ks > len(kbuf) {
			// Not a pair: skip the word (and a quoted run in it).
			for i < len(b) && b[i] != ' ' && b[i] != '\t' {
				i++
			}
			continue
		}
		key := kbuf[:0]
		for _, c := range b[ks:i] {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			key = append(key, c)
		}
		i++ // '='
		var v []byte
		if i < len(b) && (b[i] == '"' || b[i] == '\'') {
			q := b[i]
			i++
			vs := i
			esc := false
			for i < len(b) && b[i] != q {
				if b[i] == '\\' && i+1 < len(b) {
					esc = true
					i++
				}
				i++
			}
			v = b[vs:min(i, len(b))]
			if i < len(b) {
				i++
			}
			if esc {
				v = unescapeKV(v)
			}
		} else {
			vs := i
			for i < len(b) && b[i] != ' ' && b[i] != '\t' {
				i++
			}
			v = bytes.TrimRight(b[vs:i], ",;")
		}
		pairs++
		if len(ev) < genericMaxFields {
			ev.storeGeneric(key, v, true)
		}
	}
	return pairs
}

func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '.' || c == '-'
}

// unescapeKV removes backslash escapes from a quoted value.
func unescapeKV(v []byte) []byte {
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		out = append(out, v[i])
	}
	return out
}

// jsonFlattener flattens one JSON object into an Event.
type jsonFlattener struct {
	l   jsonLexer
	ev  Event
	key []byte
}

// genericJSON flattens the JSON object b; ok is false when b is not one
// valid JSON object.
func genericJSON(b []byte) (Event, bool) {
	f := jsonFlattener{l: jsonLexer{b: b}, ev: make(Event, 16), key: make([]byte, 0, 64)}
	if !f.l.object() {
		return nil, false
	}
	f.object(1)
	if !f.l.end() {
		return nil, false
	}
	return f.ev, true
}

func (f *jsonFlattener) object(depth int) {
	n := 0
	for !f.l.bad {
		name, ok := f.l.key(&n)
		if !ok {
			return
		}
		mark := len(f.key)
		if mark > 0 {
			f.key = append(f.key, '.')
		}
		f.key = append(f.key, name...)
		f.value(depth)
		f.key = f.key[:mark]
	}
}

func (f *jsonFlattener) value(depth int) {
	full := len(f.ev) >= genericMaxFields
	switch c := f.l.peek(); c {
	case '{':
		if depth >= genericMaxDepth {
			f.l.skip()
			return
		}
		f.l.object()
		f.object(depth + 1)
	case '[':
		f.array(full)
	case '"':
		b, ok := f.l.stringBytes()
		if ok && !full {
			f.ev.storeGeneric(f.key, b, depth == 1)
		}
	case 't', 'f':
		v, ok := f.l.bool()
		if ok && !full {
			f.ev[string(f.key)] = v
		}
	case 'n':
		f.l.literal("null")
	default:
		t := f.l.number()
		if t == nil || full {
			return
		}
		if depth == 1 {
			if a, ok := genericAliases[string(f.key)]; ok && (a == "source.port" || a == "destination.port") {
				if p, ok := atoiBytes(t); ok && p <= 65535 {
					f.ev[a] = p
					return
				}
			}
		}
		f.ev[string(f.key)] = jsonNumber(t)
	}
}

// array stores an array of scalars as []string; nested containers are
// skipped.
func (f *jsonFlattener) array(full bool) {
	f.l.array()
	var out []string
	n := 0
	for f.l.elem(&n) {
		switch c := f.l.peek(); c {
		case '"':
			if b, ok := f.l.stringBytes(); ok {
				out = append(out, jsonString(b))
			}
		case 't', 'f':
			if v, ok := f.l.bool(); ok {
				out = append(out, strconv.FormatBool(v))
			}
		case 'n':
			f.l.literal("null")
		case '{', '[':
			f.l.skip()
		default:
			if t := f.l.number(); t != nil {
				out = append(out, string(t))
			}
		}
	}
	if len(out) > 0 && !full {
		f.ev[string(f.key)] = out
	}
}

// jsonNumber converts JSON number text to int64 when it is an integer
// that fits, else float64.
func jsonNumber(t []byte) any {
	if !bytes.ContainsAny(t, ".eE") {
		if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return n
		}
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil && !math.IsInf(f, 0) {
		return string(t)
	}
	if math.IsInf(f, 0) {
		return string(t) // keep the text of out-of-range numbers
	}
	return f
}

// genericTime finds the event time in the usual fields.
func genericTime(ev Event) time.Time {
	for _, k := range [...]string{"@timestamp", "timestamp", "time", "ts"} {
		switch v := ev[k].(type) {
		case string:
			if t, n, ok := parseISOTime([]byte(v)); ok && n == len(v) {
				return t
			}
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				return t.UTC()
			}
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				if t, ok := epochInt(n); ok {
					return t
				}
			} else if f, err := strconv.ParseFloat(v, 64); err == nil {
				if t, ok := epochTime(f); ok {
					return t
				}
			}
		case int64:
			if t, ok := epochInt(v); ok {
				return t
			}
		case float64:
			if t, ok := epochTime(v); ok {
				return t
			}
		}
	}
	// "date=2026-02-03 time=04:05:06", as FortiGate writes it.
	d, _ := ev["date"].(string)
	c, _ := ev["time"].(string)
	if len(d) == 10 && len(c) >= 8 {
		if t, n, ok := parseISOTime([]byte(d + "T" + c)); ok && n == len(d)+1+len(c) {
			return t
		}
	}
	return time.Time{}
}

// epochInt is epochTime for integers, without float rounding.
func epochInt(n int64) (time.Time, bool) {
	if n <= 0 {
		return time.Time{}, false
	}
	for _, scale := range [...]int64{1, 1e3, 1e6, 1e9} {
		if s := n / scale; s < 1e11 {
			return time.Unix(s, (n%scale)*(1e9/scale)).UTC(), true
		}
	}
	return time.Time{}, false
}

// epochTime reads a Unix time in seconds, or in ms, µs or ns when the
// number is too large to be seconds (1e11 s is the year 5138).
func epochTime(f float64) (time.Time, bool) {
	if math.IsNaN(f) || f <= 0 {
		return time.Time{}, false
	}
	for _, scale := range [...]float64{1, 1e3, 1e6, 1e9} {
		s := f / scale
		if s < 1e11 {
			sec, frac := math.Modf(s)
			return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
		}
	}
	return time.Time{}, false
}
