package detect

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// SSHBruteForce fires on at least Count failed password attempts from one
// source within Span (default 5 in 5 minutes), or on logins as at least
// Users distinct users (default 5) whatever the attempts — a scan of
// account names that never gets to a password: an auth observation,
// medium, that grows while the burst lasts. The source address is the
// key node (the host, for a local source: see sourceActor); the users
// tried and the host that logged them are context, so two attackers of
// one server stay two incidents.
//
// It counts attempts, not lines (docs/detections.md, "Counting"): of
// sshd's lines and the PAM lines sshd writes, those the parser marks
// vigil.attempt.role attempt count vigil.attempt.count each (one guessed
// password: "Failed password", an "error: PAM:" keyboard-interactive
// failure, an old-style PAM failure); the others — probes ("Invalid user
// X", "User X not allowed"), recaps ("PAM 2 more authentication
// failures", "maximum authentication attempts exceeded", "Disconnecting:
// Too many authentication failures") and context (PAM's "authentication
// failure" about a guess sshd logs itself, "Failed none", "Failed
// publickey") — are linked to the observation as evidence but count
// nothing; the users tried are those of attempts and probes. A user who
// mistypes a password a few times makes a few attempts against one user:
// no brute force.
type SSHBruteForce struct {
	Count int
	Users int
	Span  time.Duration
	Local string // LocalReport or LocalIgnore
}

// NameSSHBruteForce is the detector's name.
const NameSSHBruteForce = "ssh_bruteforce"

func (d SSHBruteForce) Name() string { return NameSSHBruteForce }

func (d SSHBruteForce) Window() Window {
	return Window{Span: orDur(d.Span, 5*time.Minute), MinCount: orInt(d.Count, 5), OrDistinct: orInt(d.Users, 5)}
}

// sshdLine reports whether an auth event was logged by sshd (or by PAM
// for sshd, which logs under its name).
func sshdLine(f map[string]any) bool {
	p := str(f, "process.name")
	return p == "sshd" || strings.HasPrefix(p, "sshd-")
}

func (d SSHBruteForce) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	role := str(f, "vigil.attempt.role")
	if role == "" || !sshdLine(f) || str(f, "event.outcome") != "failure" {
		return nil
	}
	who, ok := sourceActor(f, str(f, "source.ip"), d.Local)
	if !ok {
		return nil
	}
	user := str(f, "user.name")
	sg := vigil.Signal{Key: who.key,
		Nodes: nodes(who.nodes, node(vigil.NodeUser, user, false), node(vigil.NodeHost, str(f, "host.name"), false))}
	switch role {
	case "attempt":
		n, _ := num(f, "vigil.attempt.count")
		sg.Count, sg.Member = int(max(n, 1)), user
	case "probe":
		// A user tried, though no credential: counts toward the users.
		sg.Evidence, sg.Member = true, user
	default:
		// Recaps and context name the users of attempts counted
		// elsewhere, or none tried: a client offering the keys it holds
		// (Failed publickey, at LogLevel VERBOSE on every such login)
		// tries no user.
		sg.Evidence = true
	}
	return []vigil.Signal{sg}
}

func (d SSHBruteForce) Describe(key string, w vigil.WindowState) vigil.Finding {
	title := "SSH brute force from " + key
	desc := fmt.Sprintf("%s from %s", plural(w.Count, "failed password attempt"), key)
	if host := firstNode(w, vigil.NodeHost); host != "" && !strings.Contains(key, " on ") {
		title += " against " + host
		desc += " against " + host
	}
	if w.Distinct > 0 {
		desc += fmt.Sprintf(" for %s (%s)", plural(w.Distinct, "user"), list(w.Members, w.Distinct))
	}
	if w.Count == 0 {
		desc += ": logins as users that do not exist or may not log in, no password tried"
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "auth", Severity: vigil.SeverityMedium, Title: title, Description: "SSH brute force: " + desc,
		Rollup: "SSH brute force"}
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func orDur(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}
