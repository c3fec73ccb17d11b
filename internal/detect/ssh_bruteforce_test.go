package detect

import (
	"testing"

	"github.com/vigil-soc/vigil/internal/parse"
)

func TestSSHBruteForceSignals(t *testing.T) {
	runSignalCases(t, SSHBruteForce{}, []signalCase{
		{name: "failed password", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "failure", "source.ip": "203.0.113.7", "user.name": "root", "host.name": "web-01"},
			key: "203.0.113.7", member: "root", nodes: []string{"IP:203.0.113.7*", "User:root", "Host:web-01"}},
		{name: "invalid user", fields: parse.Event{"event.action": "ssh_invalid_user", "event.outcome": "failure", "source.ip": "203.0.113.7", "user.name": "admin"},
			key: "203.0.113.7", member: "admin", nodes: []string{"IP:203.0.113.7*", "User:admin"}},
		{name: "accepted", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "success", "source.ip": "203.0.113.7"}},
		{name: "timeout is no guess", fields: parse.Event{"event.action": "ssh_timeout", "event.outcome": "failure", "source.ip": "203.0.113.7"}},
		{name: "no address", fields: parse.Event{"event.action": "pam_auth_failure", "event.outcome": "failure", "user.name": "zbadguy"}},
	})
}

// TestSSHBruteForceDatasets counts the failed-login signals of the real
// auth logs (at least: the parsers may learn more lines).
func TestSSHBruteForceDatasets(t *testing.T) {
	for _, c := range []struct {
		file    string
		signals int
	}{
		{"auth/crowdsec-hub-sshd-pam-tests.log", 50},
		{"auth/loghub-Linux_2k.log", 323},
		{"auth/fail2ban-sshd.log", 59},
	} {
		n, members := countSignals(SSHBruteForce{}, parseFile(t, "auth", c.file))
		if n < c.signals {
			t.Errorf("%s: %d signals, want at least %d", c.file, n, c.signals)
		}
		t.Logf("%s: %d failed-login signals, %d users", c.file, n, len(members))
	}
}
