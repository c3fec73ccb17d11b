package parse

import (
	"testing"
	"time"
)

// authPrograms are the programs whose lines must yield an event.action.
var authPrograms = map[string]bool{
	"sshd": true, "sshd-session": true, "sudo": true, "su": true, "login": true,
	"useradd": true, "userdel": true, "usermod": true, "groupadd": true, "groupdel": true,
	"passwd": true, "chage": true, "chfn": true, "chsh": true, "systemd-logind": true,
}

func TestAuthGolden(t *testing.T) { checkGolden(t, "auth", "auth") }

func TestDatasetCoverage_auth(t *testing.T) {
	datasetCoverage(t, "auth", func(ev Event) bool {
		if _, ok := ev["event.action"]; ok {
			return true
		}
		p, _ := ev["process.name"].(string)
		return p != "" && !authPrograms[p]
	})
}

// wantFields fails unless ev holds every field of want with that value;
// a nil value in want means the field must be absent.
func wantFields(tb testing.TB, ev Event, want map[string]any) {
	tb.Helper()
	for k, w := range want {
		g, ok := ev[k]
		switch {
		case w == nil && ok:
			tb.Errorf("%s = %#v, want absent", k, g)
		case w == nil:
		case !ok:
			tb.Errorf("%s missing, want %#v", k, w)
		default:
			if gs, isSlice := g.([]string); isSlice {
				ws, _ := w.([]string)
				if len(gs) != len(ws) {
					tb.Errorf("%s = %#v, want %#v", k, g, w)
					continue
				}
				for i := range gs {
					if gs[i] != ws[i] {
						tb.Errorf("%s = %#v, want %#v", k, g, w)
						break
					}
				}
			} else if g != w {
				tb.Errorf("%s = %#v (%T), want %#v (%T)", k, g, g, w, w)
			}
		}
	}
}

func TestParseAuth(t *testing.T) {
	ref := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		line string
		ref  time.Time
		time string
		want map[string]any
	}{
		{
			name: "failed password ipv4",
			line: "Feb 20 08:35:22 bastion sshd[5774]: Failed password for root from 198.51.100.156 port 29160 ssh2",
			time: "2026-02-20T08:35:22Z",
			want: map[string]any{"event.action": "ssh_login", "event.outcome": "failure", "event.category": "authentication",
				"user.name": "root", "source.ip": "198.51.100.156", "source.port": int64(29160), "ssh.method": "password",
				"host.name": "bastion", "process.name": "sshd", "process.pid": int64(5774)},
		},
		{
			name: "failed password ipv6 invalid user",
			line: "Feb 25 14:34:10 bastion sshd[31603]: Failed password for invalid user ROOT from 2001:db8:cccc:1234::1:1 port 50273 ssh2",
			want: map[string]any{"event.action": "ssh_login", "event.outcome": "failure", "event.reason": "invalid user",
				"user.name": "ROOT", "source.ip": "2001:db8:cccc:1234::1:1", "source.port": int64(50273)},
		},
		{
			name: "invalid user",
			line: "Feb 12 14:10:21 sd-126005 sshd[16378]: Invalid user pascal from 35.188.49.176 port 53502",
			want: map[string]any{"event.action": "ssh_invalid_user", "event.outcome": "failure",
				"user.name": "pascal", "source.ip": "35.188.49.176", "source.port": int64(53502)},
		},
		{
			name: "accepted publickey",
			line: "Sep  6 09:57:21 bullseye sshd[581]: Accepted publickey for vagrant from 192.168.121.1 port 56296 ssh2: RSA SHA256:1M4RzhMyWuFS/86uPY/ce2prh/dVTHW7iD2RhpquOZA",
			want: map[string]any{"event.action": "ssh_login", "event.outcome": "success", "ssh.method": "publickey",
				"user.name": "vagrant", "source.ip": "192.168.121.1", "source.port": int64(56296)},
		},
		{
			name: "disconnect preauth",
			line: "Jan 24 15:32:31 server sshd[2651912]: Disconnected from authenticating user root 179.43.183.98 port 59402 [preauth]",
			want: map[string]any{"event.action": "ssh_disconnect", "user.name": "root", "source.ip": "179.43.183.98",
				"source.port": int64(59402)},
		},
		{
			name: "sudo command",
			line: "Feb 21 23:35:33 db1 sudo:     erin : TTY=pts/0 ; PWD=/home/erin ; USER=root ; COMMAND=/bin/cat /var/log/secure ; echo x",
			want: map[string]any{"event.action": "sudo_command", "event.outcome": "success", "event.category": "process",
				"user.name": "erin", "user.target.name": "root", "process.command_line": "/bin/cat /var/log/secure ; echo x",
				"process.working_directory": "/home/erin", "process.name": "sudo", "process.pid": nil},
		},
		{
			name: "sudo incorrect password attempts",
			line: "Feb 24 00:12:42 db1 sudo:  mallory : 3 incorrect password attempts ; TTY=pts/1 ; PWD=/tmp ; USER=root ; COMMAND=/usr/bin/id",
			want: map[string]any{"event.action": "sudo_auth_failure", "event.outcome": "failure", "user.name": "mallory",
				"user.target.name": "root", "process.command_line": "/usr/bin/id"},
		},
		{
			name: "sudo not in sudoers",
			line: "Feb 24 00:13:02 db1 sudo:  mallory : user NOT in sudoers ; TTY=pts/1 ; PWD=/tmp ; USER=root ; COMMAND=/bin/cat /etc/shadow",
			want: map[string]any{"event.action": "sudo_not_in_sudoers", "event.outcome": "failure", "user.name": "mallory"},
		},
		{
			name: "pam failure new form",
			line: "Nov 2 15:40:14 workshop sshd[28179]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=5.33.63.160 user=workshop",
			want: map[string]any{"event.action": "pam_auth_failure", "event.outcome": "failure", "user.name": "workshop",
				"source.ip": "5.33.63.160", "process.name": "sshd"},
		},
		{
			name: "pam failure old form with host name",
			line: "Feb 27 10:00:00 web1 sshd(pam_unix)[19937]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=host.example.org  user=root",
			want: map[string]any{"event.action": "pam_auth_failure", "user.name": "root", "source.domain": "host.example.org",
				"source.ip": nil, "process.name": "sshd", "process.pid": int64(19937)},
		},
		{
			name: "su to root",
			line: "Feb 27 10:00:01 web1 su: (to root) alice on pts/0",
			want: map[string]any{"event.action": "su", "event.outcome": "success", "user.name": "alice", "user.target.name": "root"},
		},
		{
			name: "session opened",
			line: "Feb 22 10:49:54 db1 sshd[3007]: pam_unix(sshd:session): session opened for user erin by (uid=0)",
			want: map[string]any{"event.action": "session_opened", "event.category": "session", "user.name": "erin"},
		},
		{
			name: "december line read on new year's day is last year's",
			line: "Dec 31 23:59:58 web1 sshd[1]: Invalid user x from 192.0.2.1",
			ref:  time.Date(2027, 1, 1, 0, 0, 30, 0, time.UTC),
			time: "2026-12-31T23:59:58Z",
			want: map[string]any{"event.action": "ssh_invalid_user"},
		},
		{
			name: "unrelated program keeps header and message",
			line: "Feb 27 10:00:02 web1 ntpd[300]: kernel reports TIME_ERROR: 0x41: Clock Unsynchronized",
			want: map[string]any{"process.name": "ntpd", "host.name": "web1", "message": "kernel reports TIME_ERROR: 0x41: Clock Unsynchronized",
				"event.action": nil},
		},
		{
			name: "rfc5424",
			line: `<38>1 2026-02-08T17:40:17.954167-04:00 bastion.example.com sshd 5555 - [timeQuality tzKnown="1"] Failed unknown for invalid user carol from 192.0.2.2 port 55555 ssh2`,
			time: "2026-02-08T21:40:17.954167Z",
			want: map[string]any{"event.action": "ssh_login", "user.name": "carol", "ssh.method": nil,
				"log.syslog.priority": int64(38), "log.syslog.severity.code": int64(6), "log.syslog.facility.code": int64(4)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ref
			if !tt.ref.IsZero() {
				r = tt.ref
			}
			ev, ts, ok := parseAuth([]byte(tt.line), r)
			if !ok {
				t.Fatal("not parsed")
			}
			if tt.time != "" && !ts.Equal(mustTime(t, tt.time)) {
				t.Errorf("time = %v, want %s", ts, tt.time)
			}
			wantFields(t, ev, tt.want)
			checkEventValues(t, ev)
		})
	}
	if _, _, ok := parseAuth([]byte("no header here"), ref); ok {
		t.Error("a line without a syslog header parsed")
	}
}

func FuzzParseAuth(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, _, ok := parseAuth(line, goldenRef)
		if ok && ev == nil {
			t.Fatal("ok with a nil event")
		}
		checkEventValues(t, ev)
	})
}

func BenchmarkParseAuth(b *testing.B) { benchmarkParse(b, "auth") }
