package detect

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// SudoFailure fires on failed privilege escalation: incorrect sudo
// passwords, a user not in sudoers, a command not allowed, a password
// required by sudo -n, a failed su. One observation per account
// (user@host) and burst (default 15 minutes between failures): auth,
// medium, high from High failed attempts on (default 3). The account is
// the key node, the host context.
//
// It counts attempts, not lines (docs/detections.md, "Counting"): "3
// incorrect password attempts" is 3; a refused run ("user NOT in
// sudoers", FAILED su) is 1; the PAM lines sudo and su write beside them
// ("pam_unix(sudo:auth): authentication failure", lock-outs, "PAM N more
// authentication failures") are linked as evidence and count nothing.
type SudoFailure struct {
	Span time.Duration
	High int
}

// NameSudoFailure is the detector's name.
const NameSudoFailure = "sudo_failure"

func (d SudoFailure) Name() string { return NameSudoFailure }

func (d SudoFailure) Window() Window {
	return Window{Span: orDur(d.Span, 15*time.Minute), MinCount: 1}
}

// sudoFailures names, by action, the failures of sudo and su; the PAM
// actions count only when sudo or su logged them.
var sudoFailures = map[string]string{
	"sudo_auth_failure":        "incorrect password",
	"sudo_not_in_sudoers":      "not in sudoers",
	"sudo_command_not_allowed": "command not allowed",
	"su":                       "su failed",
	"pam_auth_failure":         "PAM authentication failure",
	"pam_max_retries":          "PAM max retries",
	"account_locked":           "account locked",
}

func (d SudoFailure) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	action := str(f, "event.action")
	what, ok := sudoFailures[action]
	if !ok || str(f, "event.outcome") != "failure" {
		return nil
	}
	prog := str(f, "process.name")
	if strings.HasPrefix(action, "pam_") || action == "account_locked" {
		if prog != "sudo" && prog != "su" {
			return nil
		}
		what = prog + ": " + what
	}
	role := str(f, "vigil.attempt.role")
	if role == "" {
		return nil
	}
	host := str(f, "host.name")
	account := userAtHost(str(f, "user.name"), host)
	if account == "" {
		return nil
	}
	sg := vigil.Signal{Key: account,
		Nodes: nodes(node(vigil.NodeUser, account, true), node(vigil.NodeHost, host, false),
			node(vigil.NodeUser, userAtHost(str(f, "user.target.name"), host), false)),
	}
	if role == "attempt" {
		n, _ := num(f, "vigil.attempt.count")
		sg.Count, sg.Member = int(max(n, 1)), what
	} else {
		sg.Evidence = true
	}
	return []vigil.Signal{sg}
}

func (d SudoFailure) Describe(key string, w vigil.WindowState) vigil.Finding {
	sev := vigil.SeverityMedium
	if w.Count >= orInt(d.High, 3) {
		sev = vigil.SeverityHigh
	}
	title := "Failed privilege escalation by " + key
	desc := fmt.Sprintf("sudo/su failures: %s by %s", plural(w.Count, "failure"), key)
	if w.Distinct > 0 {
		desc += " (" + list(w.Members, w.Distinct) + ")"
	}
	if target := otherUser(w, key); target != "" {
		desc += " to become " + target
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "auth", Severity: sev, Title: title, Description: desc, Rollup: "Failed privilege escalation"}
}

// otherUser returns the first User node of w other than key: the account
// sudo or su was asked for.
func otherUser(w vigil.WindowState, key string) string {
	for _, n := range w.Nodes {
		if n.Type == vigil.NodeUser && n.Value != key {
			return n.Value
		}
	}
	return ""
}
