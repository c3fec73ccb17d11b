package detect

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// WindowsLogonFailures fires on failed Windows logons from one source:
// failed logons (Security 4625), NTLM validation failures (4776) and
// Kerberos failures (4771 pre-authentication, and 4768 failures that log
// no 4771: an unknown account). At least Count attempts (default 5) or
// attempts on at least Users accounts (default 5) within Span (default
// 5 minutes) make an auth observation, medium, that grows while the burst
// lasts. It is a password spray when the attempts are spread over many
// accounts (Users or more, at most 3 each on average), else a brute
// force; the title says which.
//
// It counts attempts, not events: the parser marks each event that is one
// guess (vigil.attempt.role attempt), a Kerberos request logged both as
// 4768 and 4771 once. The source is the logon's address (keyed as the SSH
// brute force keys one, a local address by its host), or for an NTLM
// validation on a domain controller, which logs no address, the
// workstation the client named.
type WindowsLogonFailures struct {
	Count int
	Users int
	Span  time.Duration
	Local string
}

// NameWindowsLogonFailures is the detector's name.
const NameWindowsLogonFailures = "windows_logon_failures"

func (d WindowsLogonFailures) Name() string { return NameWindowsLogonFailures }

func (d WindowsLogonFailures) Window() Window {
	return Window{Span: orDur(d.Span, 5*time.Minute), MinCount: orInt(d.Count, 5), OrDistinct: orInt(d.Users, 5)}
}

// windowsLogonActor is who made a Windows logon: its address, or the
// workstation an NTLM validation names.
func windowsLogonActor(f parse.Event, policy string) (actor, bool) {
	if ip := str(f, "source.ip"); ip != "" {
		return sourceActor(f, ip, policy)
	}
	if ws := str(f, "source.domain"); ws != "" {
		if refs := node(vigil.NodeHost, parse.WindowsHost(ws), true); len(refs) > 0 {
			return actor{key: refs[0].Value, nodes: refs}, true
		}
	}
	return actor{}, false
}

// windowsAccount is the account an event's user field names, as one
// node: DOMAIN\user (parse.WindowsAccount).
func windowsAccount(f parse.Event, prefix string) string {
	return parse.WindowsAccount(str(f, prefix+".name"), str(f, prefix+".domain"))
}

func windowsEvent(f parse.Event) bool { return str(f, "winlog.channel") != "" }

func (d WindowsLogonFailures) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	if !windowsEvent(f) || str(f, "vigil.attempt.role") != "attempt" || str(f, "event.outcome") != "failure" {
		return nil
	}
	who, ok := windowsLogonActor(f, d.Local)
	if !ok {
		return nil
	}
	account := windowsAccount(f, "user")
	return []vigil.Signal{{Key: who.key, Count: 1, Member: account,
		Nodes: nodes(who.nodes, node(vigil.NodeUser, account, false), node(vigil.NodeHost, str(f, "host.name"), false))}}
}

func (d WindowsLogonFailures) Describe(key string, w vigil.WindowState) vigil.Finding {
	kind := "Brute force"
	if w.Distinct >= orInt(d.Users, 5) && w.Count <= 3*w.Distinct {
		kind = "Password spray"
	}
	title := fmt.Sprintf("Windows %s from %s", strings.ToLower(kind), key)
	desc := fmt.Sprintf("%s: %s from %s", kind, plural(w.Count, "failed Windows logon attempt"), key)
	if host := firstNode(w, vigil.NodeHost); host != "" && host != key {
		title += " against " + host
		desc += " against " + host
	}
	if w.Distinct > 0 {
		desc += fmt.Sprintf(" on %s (%s)", plural(w.Distinct, "account"), list(w.Members, w.Distinct))
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "auth", Severity: vigil.SeverityMedium, Title: title, Description: desc}
}

// WindowsLogonSuccess fires on a successful Windows logon (4624) from a
// source whose failed logons
// (WindowsLogonFailures) made a brute force or spray within Span before it
// (default 1 h): auth, high. The source and the account are key nodes.
type WindowsLogonSuccess struct {
	Span  time.Duration
	Local string
}

// NameWindowsLogonSuccess is the detector's name.
const NameWindowsLogonSuccess = "windows_success_after_failures"

func (d WindowsLogonSuccess) Name() string { return NameWindowsLogonSuccess }

func (d WindowsLogonSuccess) Window() Window {
	return Window{Span: orDur(d.Span, time.Hour), MinCount: 1, Requires: NameWindowsLogonFailures}
}

func (d WindowsLogonSuccess) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	if !windowsEvent(f) || str(f, "event.outcome") != "success" || str(f, "event.action") != "logged-in" {
		return nil
	}
	// Logons Windows makes for itself (services, SYSTEM, machine
	// accounts) are no one's success.
	name := str(f, "user.name")
	if name == "" || strings.HasSuffix(name, "$") || str(f, "winlog.logon.type") == "5" {
		return nil
	}
	who, ok := windowsLogonActor(f, d.Local)
	if !ok {
		return nil
	}
	account := windowsAccount(f, "user")
	return []vigil.Signal{{Key: who.key, Member: account,
		Nodes: nodes(who.nodes, node(vigil.NodeUser, account, true), node(vigil.NodeHost, str(f, "host.name"), false))}}
}

func (d WindowsLogonSuccess) Describe(key string, w vigil.WindowState) vigil.Finding {
	title := "Successful Windows logon after failed logons from " + key
	desc := fmt.Sprintf("Successful Windows logon after failed logons: %s from %s", plural(w.Count, "successful logon"), key)
	if w.Distinct > 0 {
		title += " as " + w.Members[0]
		desc += fmt.Sprintf(" as %s", list(w.Members, w.Distinct))
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "auth", Severity: vigil.SeverityHigh, Title: title, Description: desc, Specificity: vigil.SpecificitySignature}
}
