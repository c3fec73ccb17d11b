package parse

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func mustTime(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatal(err)
	}
	return t.UTC()
}

func TestParseSyslog(t *testing.T) {
	ref := mustTime(t, "2026-03-01T12:00:00Z")
	tests := []struct {
		name string
		line string
		ref  time.Time
		want SyslogHeader
		msg  string
		ok   bool
	}{
		{
			name: "rfc3164",
			line: "Feb 20 08:35:22 bastion sshd[5774]: Failed password for root",
			want: SyslogHeader{Time: mustTime(t, "2026-02-20T08:35:22Z"), Host: "bastion", Program: "sshd", PID: "5774", Priority: -1},
			msg:  "Failed password for root", ok: true,
		},
		{
			name: "padded day and pri",
			line: "<161>Jun  4 07:25:12 Hostname kernel: [x]IN=eth0",
			want: SyslogHeader{Time: mustTime(t, "2025-06-04T07:25:12Z"), Host: "Hostname", Program: "kernel", Priority: 161},
			msg:  "[x]IN=eth0", ok: true,
		},
		{
			name: "unpadded day",
			line: "Nov 2 15:40:14 workshop sshd[28179]: x",
			want: SyslogHeader{Time: mustTime(t, "2025-11-02T15:40:14Z"), Host: "workshop", Program: "sshd", PID: "28179", Priority: -1},
			msg:  "x", ok: true,
		},
		{
			name: "fractional seconds",
			line: "Mar  1 00:00:01.250 h p: m",
			want: SyslogHeader{Time: mustTime(t, "2026-03-01T00:00:01.25Z"), Host: "h", Program: "p", Priority: -1},
			msg:  "m", ok: true,
		},
		{
			name: "new year: december line read in january is last year",
			line: "Dec 31 23:59:59 h cron: m",
			ref:  mustTime(t, "2027-01-01T00:00:10Z"),
			want: SyslogHeader{Time: mustTime(t, "2026-12-31T23:59:59Z"), Host: "h", Program: "cron", Priority: -1},
			msg:  "m", ok: true,
		},
		{
			name: "new year: january line read on new year's eve is within a day",
			line: "Jan  1 00:00:05 h cron: m",
			ref:  mustTime(t, "2026-12-31T23:59:50Z"),
			want: SyslogHeader{Time: mustTime(t, "2026-01-01T00:00:05Z").AddDate(0, 0, 0), Host: "h", Program: "cron", Priority: -1},
			msg:  "m", ok: true,
		},
		{
			name: "iso timestamp in 3164 position",
			line: "2019-06-14T15:16:01.123+02:00 host prog: hello",
			want: SyslogHeader{Time: mustTime(t, "2019-06-14T13:16:01.123Z"), Host: "host", Program: "prog", Priority: -1},
			msg:  "hello", ok: true,
		},
		{
			name: "rfc5424 with structured data",
			line: `<38>1 2026-02-08T17:40:17.954167-04:00 bastion.example.com sshd 5555 - [timeQuality tzKnown="1"][x@1 t="[b\"]"] Failed unknown`,
			want: SyslogHeader{Time: mustTime(t, "2026-02-08T21:40:17.954167Z"), Host: "bastion.example.com", Program: "sshd", PID: "5555", Priority: 38},
			msg:  "Failed unknown", ok: true,
		},
		{
			name: "rfc5424 as rsyslog's RSYSLOG_SyslogProtocol23Format writes it: two spaces before the message",
			line: `<86>1 2026-11-25T10:59:09.742562+00:00 vm sshd 29007 - -  Failed password for root`,
			want: SyslogHeader{Time: mustTime(t, "2026-11-25T10:59:09.742562Z"), Host: "vm", Program: "sshd", PID: "29007", Priority: 86},
			msg:  "Failed password for root", ok: true,
		},
		{
			name: "rfc5424 nil values",
			line: `<134>1 - - filterlog - - - 5,,,`,
			want: SyslogHeader{Program: "filterlog", Priority: 134},
			msg:  "5,,,", ok: true,
		},
		{
			name: "no host",
			line: "Nov 23 21:50:37 sshd[8148]: Connection closed by 192.0.2.1",
			want: SyslogHeader{Time: mustTime(t, "2025-11-23T21:50:37Z"), Program: "sshd", PID: "8148", Priority: -1},
			msg:  "Connection closed by 192.0.2.1", ok: true,
		},
		{
			name: "no host no program",
			line: "Jan  8 03:37:09 IN=eth0 OUT=",
			want: SyslogHeader{Time: mustTime(t, "2026-01-08T03:37:09Z"), Priority: -1},
			msg:  "IN=eth0 OUT=", ok: true,
		},
		{
			name: "old pam tag",
			line: "Jun 14 15:16:01 web1 gdm(pam_unix)[1234]: check pass; user unknown",
			want: SyslogHeader{Time: mustTime(t, "2025-06-14T15:16:01Z"), Host: "web1", Program: "gdm", PID: "1234", Priority: -1},
			msg:  "check pass; user unknown", ok: true,
		},
		{
			name: "facility.severity after host",
			line: "May  5 20:46:45 office-gw user.info kernel: TTL=126",
			want: SyslogHeader{Time: mustTime(t, "2025-05-05T20:46:45Z"), Host: "office-gw", Program: "kernel", Priority: -1},
			msg:  "TTL=126", ok: true,
		},
		{
			name: "bracketed program",
			line: "Mar  3 00:17:22 [sshd]: User admin",
			want: SyslogHeader{Time: mustTime(t, "2026-03-03T00:17:22Z").AddDate(-1, 0, 0), Program: "sshd", Priority: -1},
			msg:  "User admin", ok: true,
		},
		{
			name: "feb 29 goes to a leap year",
			line: "Feb 29 10:00:00 h p: m",
			want: SyslogHeader{Time: mustTime(t, "2024-02-29T10:00:00Z"), Host: "h", Program: "p", Priority: -1},
			msg:  "m", ok: true,
		},
		{
			name: "not syslog",
			line: "hello world",
			want: SyslogHeader{Priority: -1},
			msg:  "hello world",
		},
		{
			name: "bad clock",
			line: "Jan  8 3:37:09 h p: m",
			want: SyslogHeader{Priority: -1},
			msg:  "Jan  8 3:37:09 h p: m",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ref
			if !tt.ref.IsZero() {
				r = tt.ref
			}
			h, msg, ok := parseSyslog([]byte(tt.line), r)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !h.Time.Equal(tt.want.Time) || h.Host != tt.want.Host || h.Program != tt.want.Program ||
				h.PID != tt.want.PID || h.Priority != tt.want.Priority {
				t.Errorf("header = %+v, want %+v", h, tt.want)
			}
			if string(msg) != tt.msg {
				t.Errorf("msg = %q, want %q", msg, tt.msg)
			}
		})
	}
}

func TestSetSyslogHeader(t *testing.T) {
	ev := Event{}
	ev.setSyslogHeader(SyslogHeader{Host: "h", Program: "sshd", PID: "42", Priority: 38})
	want := Event{"host.name": "h", "process.name": "sshd", "process.pid": int64(42),
		"log.syslog.priority": int64(38), "log.syslog.facility.code": int64(4), "log.syslog.severity.code": int64(6)}
	if len(ev) != len(want) {
		t.Fatalf("got %v, want %v", ev, want)
	}
	for k, v := range want {
		if ev[k] != v {
			t.Errorf("%s = %#v, want %#v", k, ev[k], v)
		}
	}
}

func FuzzParseSyslog(f *testing.F) {
	for _, s := range []string{
		"Feb 20 08:35:22 bastion sshd[5774]: Failed password for root",
		`<38>1 2019-07-08T17:40:17.954167-04:00 h sshd 1 - [a b="\]"] m`,
		"2019-06-14T15:16:01.123+02:00 host prog: hello",
		"<1>", "Jan  1 00:00:00", "Feb 29 10:00:00 h p[: m",
	} {
		f.Add([]byte(s))
	}
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	ref := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, line []byte) {
		h, msg, ok := parseSyslog(line, ref)
		if !ok && string(msg) != string(line) {
			t.Fatalf("not ok but msg %q != line", msg)
		}
		if h.Priority < -1 || h.Priority > 191 {
			t.Fatalf("priority %d", h.Priority)
		}
	})
}

// TestSyslogParsersHugeLines feeds 1 MiB lines built to provoke quadratic scans.
func TestSyslogParsersHugeLines(t *testing.T) {
	const size = 1 << 20
	rep := func(s string) string { return strings.Repeat(s, size/len(s)) }
	lines := []string{
		"Feb 20 08:35:22 h sshd[1]: Failed password for " + rep(" from x"),
		"Feb 20 08:35:22 h sshd[1]: Connection closed by " + rep("user x "),
		"Feb 20 08:35:22 h sudo: u : " + rep("A=b ; "),
		"Feb 20 08:35:22 h sshd[1]: pam_unix(sshd:auth): authentication failure; " + rep("rhost= "),
		"Feb 20 08:35:22 h kernel: " + rep("xIN=") + " SRC=1.2.3.4",
		"Feb 20 08:35:22 h kernel: " + rep("DROP ") + "IN=a SRC=1.2.3.4",
		"Feb 20 08:35:22 h filterlog: 1," + rep(","),
		rep("k=v "),
		rep(`{"a":`),
		"<1>1 2026-01-01T00:00:00Z h a p m " + rep(`[x a="\"]`),
		rep("["),
	}
	for i, l := range lines {
		start := time.Now()
		for _, p := range []parserFunc{parseAuth, parseFirewall, parseGeneric} {
			ev, _, _ := p([]byte(l), time.Time{})
			checkEventValues(t, ev)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("line %d: %v for 1 MiB", i, d)
		}
	}
}

func TestIsCanonicalIPv4(t *testing.T) {
	for _, s := range []string{"1.2.3.4", "0.0.0.0", "255.255.255.255", "10.0.2.15", "1.2.3.4.", "1.2.3", "01.2.3.4",
		"1.2.3.256", "1..3.4", ".1.2.3", "1.2.3.4.5", "1.2.3.a", "1.2.3.00", "::ffff:1.2.3.4", "1.2.3.0"} {
		_, err := netip.ParseAddr(s)
		want := err == nil && !strings.Contains(s, ":")
		if got := isCanonicalIPv4([]byte(s)); got != want {
			t.Errorf("isCanonicalIPv4(%q) = %v, want %v", s, got, want)
		}
	}
}
