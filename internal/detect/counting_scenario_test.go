package detect_test

// Counting scenarios: each count in an observation's description is of
// attempts (guesses, refused runs, look-ups), not of the lines the
// sensors wrote about them, and a user's typos are no attack.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
)

// observations returns the descriptions of org's observations, sorted.
func (e *env) descriptions(tb testing.TB, org string) []string {
	tb.Helper()
	var out []string
	for _, inc := range e.incidents(tb, org) {
		for _, o := range inc.Observations {
			out = append(out, o.Description)
		}
	}
	slices.Sort(out)
	return out
}

// TestScenarioTyposAreNoAttack: logins that fail a few times and then
// succeed raise nothing, in one batch or line by line.
func TestScenarioTyposAreNoAttack(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
	}{
		// fail2ban-sshd.log (real): three logins, each after one or two
		// failures PAM logged, then accepted.
		{"real: PAM failures then accepted", readLines(t, "auth/fail2ban-sshd.log")[87:101]},
		// Scripted in sshd's format: a user mistypes 1, 2 or 3 times in
		// one session (sshd's and PAM's lines, as OpenSSH with UsePAM
		// writes them), then logs in; then once more in a second session.
		{"scripted: 1 typo, then 1", typoSession(t0, "198.51.100.20", "alice", "web-01", 1, 1)},
		{"scripted: 2 typos, then 1", typoSession(t0, "198.51.100.20", "alice", "web-01", 2, 1)},
		{"scripted: 3 typos, then 1", typoSession(t0, "198.51.100.20", "alice", "web-01", 3, 1)},
	}
	for _, c := range cases {
		for _, size := range []int{1000, 1} {
			t.Run(fmt.Sprintf("%s/batch%d", c.name, size), func(t *testing.T) {
				e := newEnv(t, detect.Config{})
				e.process(t, "org", size, artifacts("auth", c.lines...))
				if incs := e.incidents(t, "org"); len(incs) != 0 {
					t.Fatalf("%d incidents (%q: %v), want none", len(incs), incs[0].Title, e.descriptions(t, "org"))
				}
			})
		}
	}
}

// typoSession writes, in the format of OpenSSH with UsePAM, a session
// of n wrong passwords for user from src followed by an accepted one,
// then a second session of m wrong passwords and a success.
func typoSession(at time.Time, src, user, host string, n, m int) []string {
	var out []string
	line := func(pid int, msg string) {
		out = append(out, fmt.Sprintf("%s %s sshd[%d]: %s", at.Format(time.Stamp), host, pid, msg))
		at = at.Add(2 * time.Second)
	}
	for s, fails := range []int{n, m} {
		pid, port := 4100+s, 51000+s
		line(pid, fmt.Sprintf("pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=%s  user=%s", src, user))
		for range fails {
			line(pid, fmt.Sprintf("Failed password for %s from %s port %d ssh2", user, src, port))
		}
		line(pid, fmt.Sprintf("Accepted password for %s from %s port %d ssh2", user, src, port))
		if fails > 1 {
			line(pid, fmt.Sprintf("PAM %d more authentication failures; logname= uid=0 euid=0 tty=ssh ruser= rhost=%s  user=%s", fails-1, src, user))
		}
	}
	return out
}

// hydraConnection writes one connection of a password guesser as
// OpenSSH with UsePAM and MaxAuthTries 6 logs it: PAM's first failure,
// one "Failed password" per guess, then, when the guesses reach 6, the
// maximum-attempts and Disconnecting lines, and PAM's recap. An unknown
// user's connection starts with "Invalid user".
func hydraConnection(at time.Time, pid int, src, user, host string, guesses int, unknown bool) []string {
	var out []string
	port := 40000 + pid%20000
	line := func(msg string) {
		out = append(out, fmt.Sprintf("%s %s sshd[%d]: %s", at.Format(time.Stamp), host, pid, msg))
		at = at.Add(time.Second)
	}
	who, pamUser := user, "  user="+user
	if unknown {
		line(fmt.Sprintf("Invalid user %s from %s port %d", user, src, port))
		line("pam_unix(sshd:auth): check pass; user unknown")
		who, pamUser = "invalid user "+user, " "
	}
	line(fmt.Sprintf("pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=%s%s", src, pamUser))
	for range guesses {
		line(fmt.Sprintf("Failed password for %s from %s port %d ssh2", who, src, port))
	}
	if guesses >= 6 {
		line(fmt.Sprintf("error: maximum authentication attempts exceeded for %s from %s port %d ssh2 [preauth]", who, src, port))
		state := "authenticating user " + user
		if unknown {
			state = "invalid user " + user
		}
		line(fmt.Sprintf("Disconnecting %s %s port %d: Too many authentication failures [preauth]", state, src, port))
	}
	if guesses > 1 {
		line(fmt.Sprintf("PAM %d more authentication failures; logname= uid=0 euid=0 tty=ssh ruser= rhost=%s%s", guesses-1, src, pamUser))
	}
	if guesses >= 6 {
		line("PAM service(sshd) ignoring max retries; 6 > 3")
	}
	return out
}

// TestScenarioCountsAttempts: the counts of brute force, sudo and DNS
// observations are attempts, with every line linked.
func TestScenarioCountsAttempts(t *testing.T) {
	t.Run("SSH guesses, not lines", func(t *testing.T) {
		// 33 guesses against 4 users (one unknown) in 8 connections of
		// at most 6.
		src, host := "198.51.100.7", "web-01"
		var lines []string
		at, pid := t0, 30500
		for _, c := range []struct {
			user    string
			guesses int
			unknown bool
		}{{"root", 6, false}, {"root", 2, false}, {"admin", 6, true}, {"admin", 2, true},
			{"alice", 6, false}, {"alice", 2, false}, {"bob", 6, false}, {"bob", 3, false}} {
			conn := hydraConnection(at, pid, src, c.user, host, c.guesses, c.unknown)
			lines = append(lines, conn...)
			at, pid = at.Add(time.Duration(len(conn))*time.Second), pid+7
		}
		guesses := strings.Count(strings.Join(lines, "\n"), "Failed password")
		if guesses != 33 {
			t.Fatalf("scripted %d guesses, want 33", guesses)
		}
		for _, size := range []int{1000, 5, 1} {
			e := newEnv(t, detect.Config{})
			e.process(t, "org", size, artifacts("auth", lines...))
			incs := e.incidents(t, "org")
			// Every line that names the source is linked; PAM's "check
			// pass" and "ignoring max retries" name none.
			linked := strings.Count(strings.Join(lines, "\n"), src)
			if len(incs) != 1 || len(incs[0].Observations) != 1 || incs[0].ArtifactCount != linked {
				t.Fatalf("batch %d: %d incidents, want one with every line of the source (%d)", size, len(incs), linked)
			}
			want := "SSH brute force: 33 failed password attempts from 198.51.100.7 against web-01 for 4 users (admin, alice, bob, root), "
			if d := incs[0].Observations[0].Description; !strings.HasPrefix(d, want) {
				t.Errorf("batch %d: %q, want %q…", size, d, want)
			}
		}
	})
	t.Run("sudo: attempts, not lines", func(t *testing.T) {
		// integrations-test-auth-ubuntu1204.log (real): PAM's line and
		// "3 incorrect password attempts" of one run, then a run not in
		// sudoers: 4 failures, 3 lines linked.
		e := newEnv(t, detect.Config{})
		e.process(t, "org", 1000, artifacts("auth", readLines(t, "auth/integrations-test-auth-ubuntu1204.log")...))
		incs := e.incidents(t, "org")
		if len(incs) != 1 || incs[0].ArtifactCount != 3 || incs[0].Severity != vigil.SeverityHigh ||
			!strings.HasPrefix(incs[0].Observations[0].Description, "sudo/su failures: 4 failures by tsg@precise32 (incorrect password, not in sudoers) to become root@precise32, ") {
			t.Fatalf("incidents %d, want one of 4 failures over 3 lines: %v", len(incs), e.descriptions(t, "org"))
		}
	})
	t.Run("BIND: a refused query logged twice is one look-up", func(t *testing.T) {
		// Scripted in BIND's syslog format: querylog's "query:" line and
		// query-errors' "query failed (REFUSED)" line of each query, 20
		// DGA-like names, 5 of them asked twice (from another port).
		var lines []string
		at := t0
		names := []string{"xjwqpvkzrmdl", "qzkvbxwpmtrn", "vkqzjxwtpbmr", "zqxjkvwpbtmn", "mxqzvjkwbtpr", "wvzqkxjbmtrp",
			"jqxzvkwpmbtr", "kzqvxjwbtmpr", "pqzxvkjwmbtr", "tqzxvjkwbmpr", "bqzxvkjwtmpr", "rqzxvjkwbtmp", "nqzxvkjwbtmp",
			"gqzxvjkwbtmp", "fqzxvkjwbtmp", "dqzxvjkwbtmp", "hqzxvkjwbtmp", "lqzxvjkwbtmp", "cqzxvkjwbtmp", "sqzxvjkwbtmp"}
		ask := func(name string, port int) {
			ts := at.Format(time.Stamp)
			lines = append(lines,
				fmt.Sprintf("%s ns1 named[812]: client @0x7f3a2c01e168 203.0.113.66#%d (%s.com): query: %s.com IN A +E(0)K (203.0.113.10)", ts, port, name, name),
				fmt.Sprintf("%s ns1 named[812]: client @0x7f3a2c01e168 203.0.113.66#%d (%s.com): query failed (REFUSED) for %s.com/IN/A at query.c:5816", ts, port, name, name))
			at = at.Add(time.Second)
		}
		for i, n := range names {
			ask(n, 40000+i)
		}
		for i, n := range names[:5] {
			ask(n, 50000+i)
		}
		for _, size := range []int{1000, 1} {
			e := newEnv(t, detect.Config{})
			e.process(t, "org", size, artifacts("dns", lines...))
			incs := e.incidents(t, "org")
			if len(incs) != 1 || incs[0].ArtifactCount != 50 ||
				!strings.HasPrefix(incs[0].Observations[0].Description, "DGA-like DNS look-ups: 25 look-ups by 203.0.113.66 of 20 names (") {
				t.Fatalf("batch %d: %d incidents, want one of 25 look-ups of 20 names over 50 lines: %v", size, len(incs), e.descriptions(t, "org"))
			}
		}
	})
}
