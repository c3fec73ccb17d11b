package detect

import (
	"fmt"
	"time"

	"github.com/vigil-soc/vigil"
)

// SSHBruteForce fires on at least Count failed logins from one source
// address within Span (default 5 in 5 minutes): an auth observation,
// medium, that grows while the burst lasts. The source address is the key
// node; the usernames tried and the host that logged them are context, so
// two attackers of one server stay two incidents.
type SSHBruteForce struct {
	Count int
	Span  time.Duration
}

// bruteForceActions are the auth events that count as a failed login.
var bruteForceActions = map[string]bool{
	"ssh_login":             true, // with outcome failure
	"ssh_invalid_user":      true,
	"ssh_user_not_allowed":  true,
	"ssh_max_auth_attempts": true,
	"pam_auth_failure":      true,
	"auth_failure":          true,
}

// NameSSHBruteForce is the detector's name.
const NameSSHBruteForce = "ssh_bruteforce"

func (d SSHBruteForce) Name() string { return NameSSHBruteForce }

func (d SSHBruteForce) Window() Window {
	return Window{Span: orDur(d.Span, 5*time.Minute), MinCount: orInt(d.Count, 5)}
}

func (d SSHBruteForce) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	action := str(f, "event.action")
	if !bruteForceActions[action] || str(f, "event.outcome") != "failure" {
		return nil
	}
	src, ok := validIP(str(f, "source.ip"))
	if !ok {
		return nil
	}
	user := str(f, "user.name")
	return []vigil.Signal{{Key: src,
		Member: user,
		Nodes:  nodes(node(vigil.NodeIP, src, true), node(vigil.NodeUser, user, false), node(vigil.NodeHost, str(f, "host.name"), false)),
	}}
}

func (d SSHBruteForce) Describe(key string, w vigil.WindowState) vigil.Finding {
	title := "SSH brute force from " + key
	desc := fmt.Sprintf("%s from %s", plural(w.Count, "failed login"), key)
	if host := firstNode(w, vigil.NodeHost); host != "" {
		title += " against " + host
		desc += " against " + host
	}
	if w.Distinct > 0 {
		desc += fmt.Sprintf(" for %s (%s)", plural(w.Distinct, "user"), list(w.Members, w.Distinct))
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "auth", Severity: vigil.SeverityMedium, Title: title, Description: "SSH brute force: " + desc}
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
