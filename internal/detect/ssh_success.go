package detect

import (
	"fmt"
	"time"

	"github.com/vigil-soc/vigil"
)

// SSHSuccess fires on an accepted SSH login from a source address whose
// brute force (SSHBruteForce) was active within Span before it (default
// 1 h): an auth observation, high. The source address (keyed as
// SSHBruteForce keys it) and the account it got into, as user@host, are
// key nodes: the compromised account joins
// whatever it does next. The host is context.
type SSHSuccess struct {
	Span  time.Duration
	Local string // LocalReport or LocalIgnore, as SSHBruteForce's
}

// NameSSHSuccess is the detector's name.
const NameSSHSuccess = "ssh_success_after_bruteforce"

func (d SSHSuccess) Name() string { return NameSSHSuccess }

func (d SSHSuccess) Window() Window {
	return Window{Span: orDur(d.Span, time.Hour), MinCount: 1, Requires: NameSSHBruteForce}
}

func (d SSHSuccess) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	if str(f, "event.action") != "ssh_login" || str(f, "event.outcome") != "success" {
		return nil
	}
	who, ok := sourceActor(f, str(f, "source.ip"), d.Local)
	if !ok {
		return nil
	}
	account := userAtHost(str(f, "user.name"), str(f, "host.name"))
	return []vigil.Signal{{Key: who.key,
		Member: account,
		Nodes:  nodes(who.nodes, node(vigil.NodeUser, account, true), node(vigil.NodeHost, str(f, "host.name"), false)),
	}}
}

func (d SSHSuccess) Describe(key string, w vigil.WindowState) vigil.Finding {
	title := "Successful SSH login after brute force from " + key
	desc := fmt.Sprintf("Successful SSH login after brute force: %s from %s", plural(w.Count, "accepted login"), key)
	switch {
	case w.Distinct == 1:
		title += " as " + w.Members[0]
		desc += " as " + w.Members[0]
	case w.Distinct > 1:
		title += " as " + w.Members[0] + " and others"
		desc += fmt.Sprintf(" into %s (%s)", plural(w.Distinct, "account"), list(w.Members, w.Distinct))
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "auth", Severity: vigil.SeverityHigh, Title: title, Description: desc, Specificity: vigil.SpecificitySignature,
		Rollup: "Successful SSH login after brute force"}
}

// userAtHost names an account of a host, "alice@web-01"; "" without a
// user.
func userAtHost(user, host string) string {
	if user == "" || user == "-" {
		return ""
	}
	if host == "" || host == "-" {
		return user
	}
	return user + "@" + host
}
