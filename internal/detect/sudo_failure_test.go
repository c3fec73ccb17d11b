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
			"user.name": "tsg", "user.target.name": "root", "host.name": "precise32", "vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)},
			key: "tsg@precise32", member: "not in sudoers", nodes: []string{"User:tsg@precise32*", "Host:precise32", "User:root@precise32"}},
		{name: "incorrect password", fields: parse.Event{"event.action": "sudo_auth_failure", "event.outcome": "failure", "user.name": "tsg", "host.name": "precise32",
			"vigil.attempt.role": "attempt", "vigil.attempt.count": int64(3)},
			key: "tsg@precise32", member: "incorrect password", nodes: []string{"User:tsg@precise32*", "Host:precise32"}},
		{name: "failed su", fields: parse.Event{"event.action": "su", "event.outcome": "failure", "user.name": "alice", "user.target.name": "root", "host.name": "db",
			"vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)},
			key: "alice@db", member: "su failed", nodes: []string{"User:alice@db*", "Host:db", "User:root@db"}},
		{name: "sudo's PAM failure: evidence", fields: parse.Event{"event.action": "pam_auth_failure", "event.outcome": "failure", "process.name": "sudo", "user.name": "zbadguy", "host.name": "k8s",
			"vigil.attempt.role": "context"},
			key: "zbadguy@k8s", member: "", nodes: []string{"User:zbadguy@k8s*", "Host:k8s"}},
		{name: "sshd's PAM failure is a brute force's", fields: parse.Event{"event.action": "pam_auth_failure", "event.outcome": "failure", "process.name": "sshd", "user.name": "root", "host.name": "k8s",
			"vigil.attempt.role": "context"}},
		{name: "successful su", fields: parse.Event{"event.action": "su", "event.outcome": "success", "user.name": "root", "host.name": "db"}},
		{name: "sudo command", fields: parse.Event{"event.action": "sudo_command", "event.outcome": "success", "user.name": "root", "host.name": "db"}},
		{name: "no user", fields: parse.Event{"event.action": "sudo_auth_failure", "event.outcome": "failure", "host.name": "db", "vigil.attempt.role": "attempt"}},
	})
}

// TestSudoFailureCounts: what each line of sudo, su and their PAM
// modules counts. The lines are the real ones of ../shared/datasets.
func TestSudoFailureCounts(t *testing.T) {
	tests := []struct {
		name, line string
		count      int
		signal     bool
	}{
		// integrations-test-auth-ubuntu1204.log: one sudo run of 3 wrong
		// passwords writes PAM's line, then sudo's with the number.
		{"PAM's line of the run", "Feb 24 00:12:20 precise32 sudo: pam_unix(sudo:auth): authentication failure; logname=vagrant uid=1001 euid=0 tty=/dev/pts/1 ruser=tsg rhost=  user=tsg", 0, true},
		{"3 incorrect password attempts", "Feb 24 00:12:42 precise32 sudo:      tsg : 3 incorrect password attempts ; TTY=pts/1 ; PWD=/home/vagrant ; USER=root ; COMMAND=/bin/ls", 3, true},
		{"not in sudoers: a refused run", "Feb 24 00:13:02 precise32 sudo:      tsg : user NOT in sudoers ; TTY=pts/1 ; PWD=/home/vagrant ; USER=root ; COMMAND=/bin/ls", 1, true},
		{"a successful su", "Feb 24 00:12:14 precise32 su[4496]: Successful su for tsg by root", 0, false},
		// crowdsec-hub-sshd-pam-tests.log: a lock-out is a recap.
		{"pam_tally2 lock-out", "Dec  7 14:53:04 vskub1master01p sudo: pam_tally2(sudo:auth): user zbadguy (4001) tally 6, deny 5", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sigs := SudoFailure{}.Signals(parseLine("auth", tt.line, "a"))
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

// TestSudoFailureDatasets finds the sudo failures of the real logs: the
// attempts they count and the lines linked as evidence.
func TestSudoFailureDatasets(t *testing.T) {
	for _, c := range []struct {
		file               string
		attempts, evidence int
		account            string
	}{
		// 3 incorrect passwords and a run not in sudoers; PAM's line.
		{"auth/integrations-test-auth-ubuntu1204.log", 4, 1, "tsg@precise32"},
		// PAM's failure and pam_tally2's lock-out, no sudo line.
		{"auth/crowdsec-hub-sshd-pam-tests.log", 0, 2, "zbadguy@vskub1master01p"},
		{"auth/loghub-Linux_2k.log", 0, 0, ""},
	} {
		var keys []string
		attempts, evidence := 0, 0
		for _, ev := range parseFile(t, "auth", c.file) {
			for _, k := range (SudoFailure{}).Signals(ev) {
				attempts += k.Weight()
				if k.Evidence {
					evidence++
				}
				keys = append(keys, k.Key)
			}
		}
		if attempts != c.attempts || evidence != c.evidence {
			t.Errorf("%s: %d attempts, %d evidence lines (%v), want %d and %d", c.file, attempts, evidence, keys, c.attempts, c.evidence)
		}
		for _, k := range keys {
			if k != c.account {
				t.Errorf("%s: signal of %s, want %s", c.file, k, c.account)
			}
		}
	}
}
