package parse

import (
	"strings"
	"testing"
)

func TestGenericGolden(t *testing.T) { checkGolden(t, "generic", "generic") }

func TestParseGeneric(t *testing.T) {
	tests := []struct {
		name string
		line string
		ok   bool
		time string
		want map[string]any
	}{
		{
			name: "json flattened",
			line: `{"@timestamp":"2026-02-03T04:05:06Z","source":{"ip":"192.0.2.1","port":80},"tags":["x",2],"f":1.5,"b":true,"n":null}`,
			ok:   true, time: "2026-02-03T04:05:06Z",
			want: map[string]any{"source.ip": "192.0.2.1", "source.port": int64(80), "tags": []string{"x", "2"},
				"f": 1.5, "b": true, "n": nil},
		},
		{
			name: "json aliases",
			line: `{"ts":1700000000,"src_ip":"198.51.100.7","dport":443,"user":"bob","src":"not-an-ip"}`,
			ok:   true, time: "2023-11-14T22:13:20Z",
			want: map[string]any{"source.ip": "198.51.100.7", "destination.port": int64(443), "user.name": "bob",
				"src": "not-an-ip"},
		},
		{
			name: "kv",
			line: `srcip=192.0.2.20 dstport=22 action=deny User=carol msg="Login failed, bad password" vd=root`,
			ok:   true,
			want: map[string]any{"source.ip": "192.0.2.20", "destination.port": int64(22), "event.action": "deny",
				"user.name": "carol", "message": "Login failed, bad password", "vd": "root"},
		},
		{
			name: "syslog only",
			line: "Feb 27 10:00:01 host2 ntpd[99]: time reset +0.2 s",
			ok:   true, time: "2026-02-27T10:00:01Z",
			want: map[string]any{"host.name": "host2", "process.name": "ntpd", "process.pid": int64(99),
				"message": "time reset +0.2 s"},
		},
		{
			name: "one pair is not enough",
			line: "only=one pair here",
			want: map[string]any{"only": nil},
		},
		{
			name: "invalid json falls through",
			line: `{"broken": "json",`,
			want: map[string]any{"broken": nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, ts, ok := parseGeneric([]byte(tt.line), goldenRef)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ev == nil {
				t.Fatal("nil event")
			}
			if tt.time != "" && !ts.Equal(mustTime(t, tt.time)) {
				t.Errorf("time = %v, want %s", ts, tt.time)
			}
			wantFields(t, ev, tt.want)
			checkEventValues(t, ev)
		})
	}
}

func TestParseGenericLimits(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("{")
	for i := 0; i < 2000; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`"k`)
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(string(rune('a' + i%26)))
		sb.WriteString(`":`)
		sb.WriteString("1")
	}
	sb.WriteString("}")
	deep := strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)
	for _, line := range []string{sb.String(), deep, strings.Repeat("k=v ", 300000)} {
		ev, _, _ := parseGeneric([]byte(line), goldenRef)
		if len(ev) > genericMaxFields {
			t.Errorf("%d fields, want at most %d", len(ev), genericMaxFields)
		}
	}
}

func FuzzParseGeneric(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, _, _ := parseGeneric(line, goldenRef)
		if ev == nil {
			t.Fatal("nil event")
		}
		if len(ev) > genericMaxFields+6 { // the syslog header may add a few
			t.Fatalf("%d fields", len(ev))
		}
		checkEventValues(t, ev)
	})
}

func BenchmarkParseGeneric(b *testing.B) { benchmarkParse(b, "generic") }
