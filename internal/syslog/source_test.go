package syslog

import (
	"bufio"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/parse"
)

func TestChooseSource(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"sshd 3164", "<86>Nov 25 10:59:09 vm sshd[29007]: Failed password for root from 203.0.113.9 port 4242 ssh2", "auth"},
		{"sshd 5424", "<38>1 2026-11-25T10:00:00Z host sshd 811 - - Failed password for root from 203.0.113.9 port 4242 ssh2", "auth"},
		{"sshd-session", "<38>Nov 25 10:59:09 vm sshd-session[1]: Accepted publickey for bob from 198.51.100.2 port 5 ssh2", "auth"},
		{"sshd pam", "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0", "auth"},
		{"sudo", "<85>Nov 25 10:59:09 vm sudo: alice : 3 incorrect password attempts ; TTY=pts/0", "auth"},
		{"su", "<37>Nov 25 10:59:09 vm su: FAILED SU (to root) alice on pts/0", "auth"},
		{"authpriv facility", "<86>Nov 25 10:59:09 vm polkitd[1]: Registered Authentication Agent", "auth"},
		{"auth facility 5424", "<38>1 2026-11-25T10:00:00Z host unix_chkpwd 1 - - password check failed for user (bob)", "auth"},
		{"kernel netfilter", "<12>Nov 25 10:59:09 vm kernel: [UFW BLOCK] IN=eth0 OUT= MAC=52 SRC=198.51.100.7 DST=10.0.0.5 PROTO=TCP", "firewall"},
		{"kernel netfilter uptime", "Feb 20 10:47:14 debian kernel: [  341.399450] [netfilter-OUTPUT] IN= OUT=enp0s3 SRC=192.168.122.235 DST=192.168.122.1", "firewall"},
		{"kernel other", "<6>Nov 25 10:59:09 vm kernel: [    0.000000] Linux version 6.1.0", ""},
		{"filterlog", "<134>Nov 25 10:59:09 vm filterlog: 5,,,1000000103,em0,match,block,in,4", "firewall"},
		{"filterlog 5424", "<134>1 2026-11-25T10:00:00Z fw filterlog 1 - - 5,,,1000000103,em0,match,block,in,4", "firewall"},
		{"named", "<30>Nov 25 10:59:09 vm named[1]: client @0x7f 192.0.2.10#53333 (example.com): query: example.com IN A", "dns"},
		{"dnsmasq", "<30>Nov 25 10:59:09 vm dnsmasq[1]: query[A] evil.example from 192.168.1.20", "dns"},
		{"dnsmasq-dhcp", "<30>Nov 25 10:59:09 vm dnsmasq-dhcp[1]: DHCPACK(wlan0) 192.168.1.20 aa:bb", "dns"},
		{"suricata", `<174>Nov 25 10:59:09 vm suricata[1]: {"event_type":"alert"}`, "suricata"},
		{"unknown program", "<14>Nov 25 10:59:09 vm myapp: hello world", ""},
		{"no header", `{"event_type":"alert"}`, ""},
		{"empty", "", ""},
		{"cron of the cron facility", "<78>Nov 25 10:59:09 vm CRON[1]: (root) CMD (run-parts /etc/cron.hourly)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SourceOf([]byte(tt.line)); got != tt.want {
				t.Errorf("SourceOf(%q) = %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

// TestRsyslogLinesParse: the lines rsyslog forwards (testdata/README.md)
// get the source of their program, and that source's parser reads each
// as it reads the same message in Debian's file format: the same event
// but for the priority fields, which the file format has not, and the
// time, which the file format gives without a year or a fraction.
func TestRsyslogLinesParse(t *testing.T) {
	want := []string{"auth", "auth", "auth", "auth", "firewall", "firewall", "dns", "dns", "suricata", "auth", ""}
	file := readLines(t, "testdata/rsyslog-file.txt")
	ref := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, format := range []string{"trad", "fwd", "p23"} {
		lines := readLines(t, "testdata/rsyslog-"+format+".txt")
		if len(lines) != len(want) || len(file) != len(want) {
			t.Fatalf("%s: %d lines, file %d, want %d", format, len(lines), len(file), len(want))
		}
		for i, line := range lines {
			src := SourceOf([]byte(line))
			if src != want[i] {
				t.Errorf("%s line %d: source %q, want %q: %s", format, i+1, src, want[i], line)
				continue
			}
			if src == "" {
				src = DefaultSource
			}
			got := parse.Parse(src, []byte(line), ref)
			base := parse.Parse(src, []byte(file[i]), ref)
			if !got.Parsed || got.Parser != base.Parser {
				t.Errorf("%s line %d: parsed %v by %s, want parsed by %s: %s", format, i+1, got.Parsed, got.Parser, base.Parser, line)
				continue
			}
			for k := range got.Event {
				if strings.HasPrefix(k, "log.syslog.") {
					delete(got.Event, k)
				}
			}
			if !reflect.DeepEqual(got.Event, base.Event) {
				t.Errorf("%s line %d: event\n%v\nwant (as from the file format)\n%v", format, i+1, got.Event, base.Event)
			}
			if got.Time.Truncate(time.Second) != base.Time {
				t.Errorf("%s line %d: time %v, want %v", format, i+1, got.Time, base.Time)
			}
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// FuzzChooseSource: any message gets a source without a panic, and one
// it gets has a parser.
func FuzzChooseSource(f *testing.F) {
	for _, s := range []string{"<86>Nov 25 10:59:09 vm sshd[29007]: Failed password", "<38>1 2026-11-25T10:00:00Z host sshd 811 - - x",
		"<12>Nov 25 10:59:09 vm kernel: IN=eth0 SRC=1.2.3.4", "<1>1 - - - - - -", "Nov 25 10:59:09", "<999>x", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s := SourceOf(b); s != "" && !parse.Known(s) {
			t.Fatalf("source %q has no parser", s)
		}
	})
}
