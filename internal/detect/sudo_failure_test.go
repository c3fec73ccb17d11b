package detect

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func TestSudoFailureSignals(t *testing.T) {
	runSignalCases(t, SudoFailure{}, []signalCase{
		{name: "not in sudoers", fields: parse.Event{"event.action": "sudo_not_in_sudoers", "event.outcome": "failure", "process.name": "sudo",
			"user.name": "tsg", "user.target.name": "root", "host.name": "precise32"},
			key: "tsg@precise32", member: "not in sudoers", nodes: []string{"User:tsg@precise32*", "Host:precise32", "User:root@precise32"}},
		{name: "incorrect password", fields: parse.Event{"event.action": "sudo_auth_failure", "event.outcome": "failure", "user.name": "tsg", "host.name": "precise32"},
			key: "tsg@precise32", member: "incorrect password", nodes: []string{"User:tsg@precise32*", "Host:precise32"}},
		{name: "failed su", fields: parse.Event{"event.action": "su", "event.outcome": "failure", "user.name": "alice", "user.target.name": "root", "host.name": "db"},
			key: "alice@db", member: "su failed", nodes: []string{"User:alice@db*", "Host:db", "User:root@db"}},
		{name: "sudo's PAM failure", fields: parse.Event{"event.action": "pam_auth_failure", "event.outcome": "failure", "process.name": "sudo", "user.name": "zbadguy", "host.name": "k8s"},
			key: "zbadguy@k8s", member: "sudo: PAM authentication failure", nodes: []string{"User:zbadguy@k8s*", "Host:k8s"}},
		{name: "sshd's PAM failure is a brute force's", fields: parse.Event{"event.action": "pam_auth_failure", "event.outcome": "failure", "process.name": "sshd", "user.name": "root", "host.name": "k8s"}},
		{name: "successful su", fields: parse.Event{"event.action": "su", "event.outcome": "success", "user.name": "root", "host.name": "db"}},
		{name: "sudo command", fields: parse.Event{"event.action": "sudo_command", "event.outcome": "success", "user.name": "root", "host.name": "db"}},
		{name: "no user", fields: parse.Event{"event.action": "sudo_auth_failure", "event.outcome": "failure", "host.name": "db"}},
	})
}

func TestSudoFailureDescribe(t *testing.T) {
	d := SudoFailure{}
	target := vigil.NodeRef{Type: vigil.NodeUser, Value: "root@precise32"}
	f := d.Describe("tsg@precise32", window(1, []string{"not in sudoers"}, vigil.NodeRef{Type: vigil.NodeUser, Value: "tsg@precise32", Key: true}, target))
	if f.Type != "auth" || f.Severity != vigil.SeverityMedium || f.Title != "Failed privilege escalation by tsg@precise32" ||
		!strings.Contains(f.Description, "1 failure by tsg@precise32 (not in sudoers) to become root@precise32") {
		t.Errorf("one failure: %+v", f)
	}
	if f := d.Describe("tsg@precise32", window(3, []string{"incorrect password"})); f.Severity != vigil.SeverityHigh {
		t.Errorf("3 failures: severity %s, want high", f.Severity)
	}
	if f := (SudoFailure{High: 5}).Describe("tsg@precise32", window(4, nil)); f.Severity != vigil.SeverityMedium {
		t.Errorf("4 failures with High 5: severity %s, want medium", f.Severity)
	}
}

// TestSudoFailureDatasets finds the sudo failures of the real logs.
func TestSudoFailureDatasets(t *testing.T) {
	for _, c := range []struct {
		file    string
		want    int
		account string
	}{
		{"auth/integrations-test-auth-ubuntu1204.log", 3, "tsg@precise32"},
		{"auth/crowdsec-hub-sshd-pam-tests.log", 2, "zbadguy@vskub1master01p"},
		{"auth/loghub-Linux_2k.log", 0, ""},
	} {
		var keys []string
		n := 0
		for _, ev := range parseFile(t, "auth", c.file) {
			for _, k := range (SudoFailure{}).Signals(ev) {
				n++
				keys = append(keys, k.Key)
			}
		}
		if n != c.want {
			t.Errorf("%s: %d signals %v, want %d", c.file, n, keys, c.want)
		}
		for _, k := range keys {
			if k != c.account {
				t.Errorf("%s: signal of %s, want %s", c.file, k, c.account)
			}
		}
	}
}
