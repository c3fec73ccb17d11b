package detect

import (
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func TestSSHSuccessSignals(t *testing.T) {
	runSignalCases(t, SSHSuccess{}, []signalCase{
		{name: "accepted password", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "success", "source.ip": "203.0.113.7", "user.name": "admin", "host.name": "web-01"},
			key: "203.0.113.7", member: "admin@web-01", nodes: []string{"IP:203.0.113.7*", "User:admin@web-01*", "Host:web-01"}},
		{name: "no host", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "success", "source.ip": "203.0.113.7", "user.name": "admin"},
			key: "203.0.113.7", member: "admin", nodes: []string{"IP:203.0.113.7*", "User:admin*"}},
		{name: "failed", fields: parse.Event{"event.action": "ssh_login", "event.outcome": "failure", "source.ip": "203.0.113.7"}},
		{name: "postponed", fields: parse.Event{"event.action": "ssh_auth_postponed", "source.ip": "203.0.113.7"}},
	})
	if w := (SSHSuccess{}).Window(); w.Requires != NameSSHBruteForce || w.MinCount != 1 || w.Span.Hours() != 1 {
		t.Errorf("window %+v, want 1 signal within 1 h of an ssh_bruteforce burst", w)
	}
}

func TestSSHSuccessDescribe(t *testing.T) {
	f := SSHSuccess{}.Describe("203.0.113.7", window(1, []string{"admin@web-01"}))
	if f.Type != "auth" || f.Severity != vigil.SeverityHigh || f.Title != "Successful SSH login after brute force from 203.0.113.7 as admin@web-01" {
		t.Errorf("finding %+v", f)
	}
}

// TestSSHSuccessDatasets: the accepted logins of the real logs give
// signals; whether they fire depends on a brute force (the scenarios).
func TestSSHSuccessDatasets(t *testing.T) {
	n, accounts := countSignals(SSHSuccess{}, parseFile(t, "auth", "auth/crowdsec-hub-sshd-pam-tests.log"))
	if n < 5 || !accounts["test@server"] || !accounts["vagrant@bullseye"] {
		t.Errorf("%d accepted logins of %v, want at least 5 with test@server and vagrant@bullseye", n, accounts)
	}
}
