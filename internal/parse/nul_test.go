package parse

import (
	"strings"
	"testing"
	"time"
)

// nulCases are lines holding a NUL, as a byte or as JSON's \u0000.
var nulCases = []struct{ source, raw string }{
	{"auth", "Nov 25 10:00:00 web-1 sshd[42]: Failed password for ro\x00ot from 203.0.113.9 port 22 ssh2"},
	{"suricata", `{"timestamp":"2026-11-25T10:00:00.000000+0000","event_type":"alert","src_ip":"203.0.113.9","src_port":4444,"dest_ip":"10.0.0.5","dest_port":80,"proto":"TCP","alert":{"signature":"ET TROJAN a\u0000b","category":"x\u0000","severity":1},"tags":["a\u0000"]}`},
	{"dns", `{"ts":1764064800.0,"uid":"C1","id.orig_h":"10.0.0.5","id.orig_p":5353,"id.resp_h":"10.0.0.53","id.resp_p":53,"proto":"udp","query":"ev\u0000il.example","qtype_name":"A"}`},
	{"firewall", "Nov 25 10:00:00 fw\x00 kernel: [UFW BLOCK] IN=eth0 OUT= SRC=203.0.113.9 DST=10.0.0.5 PROTO=TCP SPT=1 DPT=22"},
	{"custom", `{"user":"a\u0000b","list":["x\u0000"]}`},
	{"custom", "user=a\x00b host=h"},
}

// TestParseNoNUL: no field of an event holds a NUL character, whatever the
// line held (a NUL byte, or a \u0000 escape in a JSON line): event fields
// become node values, descriptions and keys that PostgreSQL's text columns
// refuse with NUL, and the worker would fail the batch on every try. The
// raw line keeps it.
func TestParseNoNUL(t *testing.T) {
	for _, tc := range nulCases {
		requireNoNUL(t, tc.source, []byte(tc.raw))
	}
}

// FuzzParseNoNUL: whatever the line, no field of Parse's event holds a
// NUL (Parse scans the fields only when the line holds one).
func FuzzParseNoNUL(f *testing.F) {
	for _, tc := range nulCases {
		f.Add(tc.source, []byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, source string, raw []byte) {
		requireNoNUL(t, source, raw)
	})
}

func requireNoNUL(t *testing.T, source string, raw []byte) {
	t.Helper()
	res := Parse(source, raw, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	checkNoNUL(t, source, raw, res.Event)
}

// checkNoNUL fails t when a field name or value of ev, parsed from raw of
// source, holds a NUL.
func checkNoNUL(t *testing.T, source string, raw []byte, ev Event) {
	t.Helper()
	for k, v := range ev {
		var vals []string
		switch v := v.(type) {
		case string:
			vals = []string{v}
		case []string:
			vals = v
		}
		for _, s := range append(vals, k) {
			if strings.ContainsRune(s, 0) {
				t.Errorf("%s %q: field %s = %q holds NUL", source, raw, k, s)
			}
		}
	}
}
