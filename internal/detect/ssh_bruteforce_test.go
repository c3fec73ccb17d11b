package detect

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func TestSSHBruteForceSignals(t *testing.T) {
	runSignalCases(t, SSHBruteForce{}, []signalCase{
		{name: "failed password", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "failure", "process.name": "sshd",
			"source.ip": "203.0.113.7", "user.name": "root", "host.name": "web-01", "vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)},
			key: "203.0.113.7", member: "root", nodes: []string{"IP:203.0.113.7*", "User:root", "Host:web-01"}},
		{name: "invalid user", fields: parse.Event{"event.action": "ssh_invalid_user", "event.outcome": "failure", "process.name": "sshd",
			"source.ip": "203.0.113.7", "user.name": "admin", "vigil.attempt.role": "probe"},
			key: "203.0.113.7", member: "admin", nodes: []string{"IP:203.0.113.7*", "User:admin"}},
		{name: "loopback: the host is the key", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "failure", "process.name": "sshd",
			"source.ip": "127.0.0.1", "user.name": "root", "host.name": "Web-01", "vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)},
			key: "127.0.0.1 on web-01", member: "root", nodes: []string{"Host:web-01*", "IP:127.0.0.1", "User:root"}},
		{name: "accepted", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "success", "process.name": "sshd", "source.ip": "203.0.113.7"}},
		{name: "timeout is no guess", fields: parse.Event{"event.action": "ssh_timeout", "event.outcome": "failure", "process.name": "sshd", "source.ip": "203.0.113.7"}},
		{name: "no address", fields: parse.Event{"event.action": "pam_auth_failure", "event.outcome": "failure", "process.name": "sshd",
			"user.name": "zbadguy", "vigil.attempt.role": "context"}},
		{name: "not sshd's", fields: parse.Event{"event.action": "pam_auth_failure", "event.outcome": "failure", "process.name": "pure-ftpd",
			"source.ip": "192.168.1.1", "vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)}},
	})
}

// TestSSHBruteForceCounts: what each line of sshd and PAM counts. The
// lines are the real ones of ../shared/datasets (file named), with
// their sequences as sshd writes them per connection.
func TestSSHBruteForceCounts(t *testing.T) {
	tests := []struct {
		name, line string
		count      int  // the signal's weight
		signal     bool // whether the line gives a signal
	}{
		// integrations-test-secure-rhel7.log, connection 2738: one
		// guess logged, 4 more recapped by PAM at the end.
		{"failed password", "Feb 22 16:45:20 slave22 sshd[2738]: Failed password for root from 202.109.143.106 port 1786 ssh2", 1, true},
		{"PAM's recap of a connection", "Feb 22 16:45:26 slave22 sshd[2738]: PAM 4 more authentication failures; logname= uid=0 euid=0 tty=ssh ruser= rhost=202.109.143.106  user=root", 0, true},
		{"PAM's first failure of a connection", "Feb 22 16:45:32 slave22 sshd[2742]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=202.109.143.106  user=root", 0, true},
		{"PAM ignoring max retries names no source", "Feb 22 16:45:26 slave22 sshd[2738]: PAM service(sshd) ignoring max retries; 5 > 3", 0, false},
		// fail2ban-sshd.log
		{"maximum authentication attempts", "Nov 23 21:50:38 myhost sshd[109798]: error: maximum authentication attempts exceeded for invalid user xxx from 192.0.2.7 port 49941 ssh2 [preauth]", 0, true},
		{"Disconnecting: too many", "Nov 23 21:50:38 myhost sshd[109798]: Disconnecting invalid user xxx 192.0.2.7 port 49941: Too many authentication failures [preauth]", 0, true},
		{"keyboard-interactive guess: sshd's PAM error line", "Apr 29 12:53:38 Jamess-iMac.local sshd[47831]: error: PAM: authentication failure for james from 205.186.180.88 via 192.168.1.201", 1, true},
		{"a host name is no address to key", "May 29 20:56:52 imago sshd[28732]: error: PAM: Authentication failure for stefanor from example.com", 0, false},
		{"invalid user: a probe", "Mar 19 16:47:48 test sshd[5672]: Invalid user admin from 192.0.2.117 port 44004", 0, true},
		// crowdsec-hub-sshd-pam-tests.log
		{"failed password for an invalid user", "Apr  6 18:51:41 eve sshd[2784424]: Failed password for invalid user root from 192.168.1.2 port 51182 ssh2", 1, true},
		{"not allowed: a probe", "2023-11-14T00:20:42.738197+01:00 myserver sshd[1112652]: User root from 192.168.1.1 not allowed because not listed in AllowUsers", 0, true},
		// loghub-Linux_2k.log: old-style PAM, the only record of a guess.
		{"old-style PAM failure", "Jul 10 16:01:43 combo sshd(pam_unix)[30530]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=150.183.249.110  user=root", 1, true},
		{"klogind is no SSH", "Jun 30 20:53:04 combo klogind[19272]: Authentication failed from 163.27.187.39 (163.27.187.39): Permission denied in replay cache code ", 0, false},
		// fail2ban-pam-generic.log
		{"old-style PAM of sshd with a host name: no address", "May 12 09:47:54 vaio sshd[16004]: (pam_unix) authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=71-13-115-12.static.mdsn.wi.charter.com  user=root", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sigs := SSHBruteForce{}.Signals(parseLine("auth", tt.line, "a"))
			if !tt.signal {
				if len(sigs) != 0 {
					t.Fatalf("signals %+v, want none", sigs)
				}
				return
			}
			if len(sigs) != 1 || sigs[0].Weight() != tt.count {
				t.Fatalf("signals %+v, want one of weight %d", sigs, tt.count)
			}
		})
	}
}

func TestSSHBruteForceDescribe(t *testing.T) {
	host := vigil.NodeRef{Type: vigil.NodeHost, Value: "web-01"}
	d := SSHBruteForce{}
	f := d.Describe("198.51.100.7", window(33, []string{"admin", "alice", "bob", "root"}, host))
	if f.Title != "SSH brute force from 198.51.100.7 against web-01" ||
		!strings.HasPrefix(f.Description, "SSH brute force: 33 failed password attempts from 198.51.100.7 against web-01 for 4 users (admin, alice, bob, root), ") {
		t.Errorf("%+v", f)
	}
	f = d.Describe("127.0.0.1 on web-01", window(1, []string{"root"}, host))
	if f.Title != "SSH brute force from 127.0.0.1 on web-01" ||
		!strings.HasPrefix(f.Description, "SSH brute force: 1 failed password attempt from 127.0.0.1 on web-01 for 1 user (root), ") {
		t.Errorf("local: %+v", f)
	}
	f = d.Describe("35.188.49.176", window(0, []string{"pascal", "pascal1", "pascal2", "pascal3", "pascal4"}))
	if !strings.HasPrefix(f.Description, "SSH brute force: 0 failed password attempts from 35.188.49.176 for 5 users (pascal, pascal1, pascal2, pascal3, pascal4): logins as users that do not exist or may not log in, no password tried, ") {
		t.Errorf("probes only: %+v", f)
	}
}

// TestSSHBruteForceDatasets counts the failed password attempts and the
// evidence lines of the real auth logs (at least: the parsers may learn
// more lines).
func TestSSHBruteForceDatasets(t *testing.T) {
	for _, c := range []struct {
		file               string
		attempts, evidence int
	}{
		{"auth/crowdsec-hub-sshd-pam-tests.log", 1, 47},
		{"auth/loghub-Linux_2k.log", 300, 0},
		{"auth/fail2ban-sshd.log", 29, 26},
	} {
		attempts, evidence := 0, 0
		users := map[string]bool{}
		for _, ev := range parseFile(t, "auth", c.file) {
			for _, sg := range (SSHBruteForce{}).Signals(ev) {
				attempts += sg.Weight()
				if sg.Evidence {
					evidence++
				}
				users[sg.Member] = true
			}
		}
		if attempts < c.attempts || evidence < c.evidence {
			t.Errorf("%s: %d attempts and %d evidence lines, want at least %d and %d", c.file, attempts, evidence, c.attempts, c.evidence)
		}
		t.Logf("%s: %d failed password attempts, %d evidence lines, %d users", c.file, attempts, evidence, len(users))
	}
}
