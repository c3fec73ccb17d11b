package parse

// The auth parser reads syslog lines (RFC 3164 and 5424) of sshd, sudo, su,
// PAM, login, cron, systemd-logind and the shadow tools (useradd, groupadd,
// passwd, …).
//
// event.action vocabulary, with event.category and event.outcome:
//
//	ssh_login                authentication  success (Accepted …) / failure (Failed …)
//	ssh_auth_postponed       authentication  –        (Postponed publickey …)
//	ssh_invalid_user         authentication  failure  (Invalid user X from …)
//	ssh_user_not_allowed     authentication  failure  (User X … not allowed because …, ROOT LOGIN REFUSED)
//	ssh_max_auth_attempts    authentication  failure  (maximum authentication attempts exceeded, Too many authentication failures)
//	ssh_timeout              authentication  failure  (Timeout before authentication)
//	ssh_disconnect           session         –        (Disconnected from …, Connection closed/reset by …, Received disconnect …)
//	ssh_connection           network         –        (Connection from IP port N on IP port N)
//	ssh_subsystem_request    session         –        (subsystem request for sftp by user X)
//	ssh_no_identification    network         failure  (Did not receive identification string)
//	ssh_bad_banner           network         failure  (banner exchange …, kex_exchange_identification …, Bad protocol version identification)
//	ssh_negotiation_failed   network         failure  (Unable to negotiate …, no matching … found)
//	ssh_protocol_error       network         failure  (ssh_dispatch_run_fatal, Read from socket failed, Magic value check failed …)
//	ssh_refused_connect      network         failure  (refused connect from …, tcp_wrappers)
//	ssh_break_in_attempt     network         –        (… POSSIBLE BREAK-IN ATTEMPT)
//	pam_auth_failure         authentication  failure  (pam_unix authentication failure, PAM N more authentication failures, sshd "error: PAM: …")
//	pam_user_unknown         authentication  failure  (check pass; user unknown)
//	pam_requirement_not_met  authentication  failure  (pam_succeed_if)
//	pam_max_retries          authentication  failure  (PAM service(x) ignoring max retries)
//	account_locked           authentication  failure  (pam_tally2 tally N, deny M; pam_faillock)
//	auth_failure             authentication  failure  (other "Authentication failed from …", e.g. klogind)
//	session_opened           session         success  (pam "session opened for user", logind "New session")
//	session_closed           session         –        (pam "session closed for user", logind "Removed session")
//	sudo_command             process         success  (U : TTY=… ; PWD=… ; USER=… ; COMMAND=…)
//	sudo_auth_failure        authentication  failure  (N incorrect password attempts, a password is required)
//	sudo_not_in_sudoers      authentication  failure  (user NOT in sudoers)
//	sudo_command_not_allowed authentication  failure  (command not allowed)
//	sudo                     process         –        (any other "U : reason ; …" sudo line)
//	su                       authentication  success / failure
//	login                    authentication  success / failure (login(1): LOGIN ON, FAILED LOGIN)
//	cron_command             process         –        (CRON "(user) CMD (command)")
//	user_created, user_deleted, user_changed, user_added_to_group,
//	group_created, group_deleted, password_changed, password_expiry_changed
//	                         iam             success (failure for "failed adding user")
//	ftp_connection           network         –        (ftpd "connection from IP (host)")
//	ftp_login                authentication  success  (ANONYMOUS FTP LOGIN)
//
// vigil.attempt.role says what a failure line is to a count of attempts
// (docs/detections.md, "Counting"), so that one guess counts once however
// many lines sshd, PAM and sudo write about it:
//
//	attempt  the line records vigil.attempt.count attempts (a credential
//	         tried, a run refused): sshd "Failed password" (one guess), sshd
//	         "error: PAM: Authentication failure for …" (a keyboard-
//	         interactive guess), old-style PAM lines ("sshd(pam_unix)[1]:
//	         authentication failure", "(pam_unix) authentication failure")
//	         whose program's own lines go elsewhere, sudo "N incorrect
//	         password attempts" (N), "user NOT in sudoers", "command not
//	         allowed", "a password is required", FAILED su, FAILED LOGIN,
//	         other "Authentication failed from"
//	probe    a connection named an account that cannot log in ("Invalid user
//	         X from", "User X … not allowed because", ROOT LOGIN REFUSED):
//	         no credential tried on this line
//	recap    a summary of attempts other lines record: "PAM N more
//	         authentication failures" (vigil.attempt.count N), "maximum
//	         authentication attempts exceeded", "Disconnecting: Too many
//	         authentication failures", "PAM service(x) ignoring max retries",
//	         pam_tally2/pam_faillock lock-outs
//	context  a line about an attempt another line records: PAM's own
//	         "pam_unix(sshd:auth): authentication failure" (sshd writes
//	         "Failed password" for the same guess), "check pass; user
//	         unknown", sshd "Failed none" (no credential), "Failed
//	         publickey"/hostbased/gssapi (a key the client holds, not a
//	         guessed secret), "Failed keyboard-interactive/pam" (its
//	         "error: PAM:" line counts), su's "pam_authenticate: …"
//
// event.reason carries a qualifier when the action alone hides it
// ("invalid user" for logins and disconnects of unknown accounts, the sudo
// reason text). A line whose syslog header is understood but whose message
// is not one of these forms is still parsed: it keeps the header fields and
// its text in message. Recognised lines do not repeat their text in
// message; the raw line stays in the artifact.

import (
	"bytes"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"
)

// maxMessage bounds the message text copied into an event.
const maxMessage = 4096

func parseAuth(raw []byte, ref time.Time) (Event, time.Time, bool) {
	h, msg, ok := parseSyslog(raw, ref)
	if !ok {
		return nil, time.Time{}, false
	}
	ev := make(Event, 12)
	ev.setSyslogHeader(h)
	msg = bytes.TrimRight(msg, " \t\r\n")
	switch p := h.Program; {
	case p == "sshd" || strings.HasPrefix(p, "sshd-"):
		authSSHD(ev, msg)
	case p == "sudo":
		authSudo(ev, msg)
	case p == "su":
		authSu(ev, msg)
	case p == "login":
		authLogin(ev, msg)
	case p == "CRON" || p == "cron" || p == "crond":
		authCron(ev, msg)
	case p == "systemd-logind":
		authLogind(ev, msg)
	case p == "useradd" || p == "userdel" || p == "usermod" || p == "groupadd" || p == "groupdel" ||
		p == "groupmod" || p == "passwd" || p == "chage" || p == "chfn" || p == "chsh" || p == "gpasswd":
		authShadow(ev, msg)
	case p == "ftpd" || p == "vsftpd" || p == "proftpd" || p == "pure-ftpd":
		authFTP(ev, msg)
	}
	if _, done := ev["event.action"]; !done {
		authPAM(ev, msg)
	}
	if _, done := ev["event.action"]; !done {
		authLogin(ev, msg)
	}
	if _, done := ev["event.action"]; !done {
		if i := indexStr(msg, "Authentication failed from "); i >= 0 {
			ev.act("auth_failure", "authentication", "failure")
			ev.attempt(roleAttempt, 1)
			ev.setSourceHost(firstToken(msg[i+len("Authentication failed from "):]))
		}
	}
	if _, done := ev["event.action"]; !done {
		ev.set("message", capText(msg))
	}
	return ev, h.Time, true
}

// act records what happened.
func (ev Event) act(action, category, outcome string) {
	ev["event.action"] = action
	if category != "" {
		ev["event.category"] = category
	}
	if outcome != "" {
		ev["event.outcome"] = outcome
	}
}

// Roles of a failure line in a count of attempts (vigil.attempt.role).
const (
	roleAttempt = "attempt"
	roleProbe   = "probe"
	roleRecap   = "recap"
	roleContext = "context"
)

// attempt records what the line is to a count of attempts, and how many
// it records or recaps when n > 0.
func (ev Event) attempt(role string, n int64) {
	ev["vigil.attempt.role"] = role
	if n > 0 {
		ev["vigil.attempt.count"] = n
	} else {
		delete(ev, "vigil.attempt.count")
	}
}

// authSSHD parses OpenSSH server messages.
func authSSHD(ev Event, m []byte) {
	// Prefixes that qualify but do not change the message.
	for {
		switch {
		case hasPrefixStr(m, "error: "):
			m = m[7:]
			continue
		case hasPrefixStr(m, "fatal: "):
			m = m[7:]
			continue
		case hasPrefixStr(m, "[ID ") && bytes.IndexByte(m, ']') > 0:
			// Solaris: "[ID 800047 auth.info] Failed …".
			m = trimLeftBlank(m[bytes.IndexByte(m, ']')+1:])
			continue
		}
		break
	}
	m = trimPreauth(m)
	switch {
	case hasPrefixStr(m, "Accepted "):
		sshAuth(ev, m[len("Accepted "):], "ssh_login", "success")
	case hasPrefixStr(m, "Failed "):
		sshAuth(ev, m[len("Failed "):], "ssh_login", "failure")
		if ev["event.action"] == "ssh_login" {
			if method, _ := ev["ssh.method"].(string); sshGuess(method) {
				ev.attempt(roleAttempt, 1)
			} else {
				ev.attempt(roleContext, 0)
			}
		}
	case hasPrefixStr(m, "Postponed "):
		sshAuth(ev, m[len("Postponed "):], "ssh_auth_postponed", "")
	case hasPrefixStr(m, "Invalid user "), hasPrefixStr(m, "Illegal user "):
		ev.act("ssh_invalid_user", "authentication", "failure")
		ev.attempt(roleProbe, 0)
		sshUserFrom(ev, m[len("Invalid user "):])
	case hasPrefixStr(m, "input_userauth_request: invalid user "):
		// Old sshd repeats its "Invalid user" line so.
		ev.act("ssh_invalid_user", "authentication", "failure")
		ev.attempt(roleContext, 0)
		ev.set("user.name", string(firstToken(m[len("input_userauth_request: invalid user "):])))
	case hasPrefixStr(m, "User ") && indexStr(m, " not allowed because ") > 0:
		ev.act("ssh_user_not_allowed", "authentication", "failure")
		ev.attempt(roleProbe, 0)
		if i := indexStr(m, " not allowed because "); i > len("User ") {
			sshUserFrom(ev, m[len("User "):i])
		}
	case hasPrefixStr(m, "ROOT LOGIN REFUSED FROM "):
		ev.act("ssh_user_not_allowed", "authentication", "failure")
		ev.attempt(roleProbe, 0)
		ev["user.name"] = "root"
		ev.setSourceHostPort(m[len("ROOT LOGIN REFUSED FROM "):])
	case hasPrefixStr(m, "maximum authentication attempts exceeded for "):
		ev.act("ssh_max_auth_attempts", "authentication", "failure")
		ev.attempt(roleRecap, 0)
		sshForUserFrom(ev, m[len("maximum authentication attempts exceeded for "):])
	case hasPrefixStr(m, "Disconnecting"):
		r := m[len("Disconnecting"):]
		if indexStr(r, "Too many authentication failures") >= 0 {
			ev.act("ssh_max_auth_attempts", "authentication", "failure")
			ev.attempt(roleRecap, 0)
		} else {
			ev.act("ssh_disconnect", "session", "")
		}
		if hasPrefixStr(r, ": ") {
			// "Disconnecting: Too many authentication failures for root"
			if i := indexStr(r, " for "); i >= 0 {
				ev.set("user.name", string(firstToken(r[i+5:])))
			}
		} else if c := indexStr(r, ": "); c > 0 {
			// "Disconnecting invalid user X 192.0.2.7 port 49941: Too many …"
			sshUserHostPort(ev, trimLeftBlank(r[:c]))
		}
	case hasPrefixStr(m, "Connection closed by "):
		ev.act("ssh_disconnect", "session", "")
		sshUserHostPort(ev, m[len("Connection closed by "):])
	case hasPrefixStr(m, "Connection reset by "):
		ev.act("ssh_disconnect", "session", "")
		sshUserHostPort(ev, m[len("Connection reset by "):])
	case hasPrefixStr(m, "Disconnected from "):
		ev.act("ssh_disconnect", "session", "")
		sshUserHostPort(ev, m[len("Disconnected from "):])
	case hasPrefixStr(m, "Received disconnect from "):
		ev.act("ssh_disconnect", "session", "")
		ev.setSourceHostPort(m[len("Received disconnect from "):])
	case hasPrefixStr(m, "Connection from "):
		// "Connection from 192.0.2.10 port 62004 on 192.0.2.10 port 22"
		ev.act("ssh_connection", "network", "")
		r := m[len("Connection from "):]
		ev.setSourceHostPort(r)
		if i := indexStr(r, " on "); i >= 0 {
			host, rest := nextToken(r[i+4:])
			ev.setIP("destination.ip", host)
			ev.setPortAfter("destination.port", rest)
		}
	case hasPrefixStr(m, "Did not receive identification string from "):
		ev.act("ssh_no_identification", "network", "failure")
		ev.setSourceHostPort(m[len("Did not receive identification string from "):])
	case hasPrefixStr(m, "Bad protocol version identification "):
		ev.act("ssh_bad_banner", "network", "failure")
		if i := bytes.LastIndex(m, []byte(" from ")); i >= 0 {
			ev.setSourceHostPort(m[i+6:])
		}
	case hasPrefixStr(m, "banner exchange: Connection from "):
		ev.act("ssh_bad_banner", "network", "failure")
		ev.setSourceHostPort(m[len("banner exchange: Connection from "):])
	case hasPrefixStr(m, "kex_exchange_identification: "):
		ev.act("ssh_bad_banner", "network", "failure")
	case hasPrefixStr(m, "Timeout before authentication for "):
		ev.act("ssh_timeout", "authentication", "failure")
		r := m[len("Timeout before authentication for "):]
		if hasPrefixStr(r, "connection from ") {
			r = r[len("connection from "):]
		}
		ev.setSourceHostPort(r)
	case hasPrefixStr(m, "Unable to negotiate with "):
		ev.act("ssh_negotiation_failed", "network", "failure")
		ev.setSourceHostPort(m[len("Unable to negotiate with "):])
	case hasPrefixStr(m, "Unable to negotiate"), hasPrefixStr(m, "no matching "):
		ev.act("ssh_negotiation_failed", "network", "failure")
	case hasPrefixStr(m, "refused connect from "):
		// tcp_wrappers: "refused connect from host (1.2.3.4)".
		ev.act("ssh_refused_connect", "network", "failure")
		r := m[len("refused connect from "):]
		host, rest := nextToken(r)
		rest = trimLeftBlank(rest)
		if len(rest) > 2 && rest[0] == '(' {
			ev.setSourceHost(bytes.TrimSuffix(firstToken(rest[1:]), []byte(")")))
		}
		if _, ok := ev["source.ip"]; !ok {
			ev.setSourceHost(host)
		} else if d := host; len(d) > 0 {
			if _, err := netip.ParseAddr(string(d)); err != nil && isHostname(d) {
				ev["source.domain"] = string(d)
			}
		}
	case indexStr(m, "POSSIBLE BREAK-IN ATTEMPT") >= 0:
		ev.act("ssh_break_in_attempt", "network", "")
		switch {
		case hasPrefixStr(m, "Address "):
			// "Address 1.2.3.4 maps to host, but this does not map back …"
			r := m[len("Address "):]
			ip, rest := nextToken(r)
			ev.setIP("source.ip", ip)
			rest = trimLeftBlank(rest)
			if hasPrefixStr(rest, "maps to ") {
				d := bytes.TrimRight(firstToken(rest[len("maps to "):]), ",")
				if isHostname(d) {
					ev["source.domain"] = string(d)
				}
			}
		case hasPrefixStr(m, "reverse mapping checking getaddrinfo for "):
			// "… for host [1.2.3.4] failed - POSSIBLE BREAK-IN ATTEMPT!"
			r := m[len("reverse mapping checking getaddrinfo for "):]
			d, rest := nextToken(r)
			if isHostname(d) {
				ev["source.domain"] = string(d)
			}
			rest = trimLeftBlank(rest)
			if len(rest) > 2 && rest[0] == '[' {
				if j := bytes.IndexByte(rest, ']'); j > 0 {
					ev.setIP("source.ip", rest[1:j])
				}
			}
		}
	case hasPrefixStr(m, "ssh_dispatch_run_fatal: Connection from "):
		ev.act("ssh_protocol_error", "network", "failure")
		ev.setSourceHostPort(m[len("ssh_dispatch_run_fatal: Connection from "):])
	case hasPrefixStr(m, "Read from socket failed"), hasPrefixStr(m, "Bad packet length"),
		hasPrefixStr(m, "Corrupted MAC"), hasPrefixStr(m, "ssh_dispatch_run_fatal"):
		ev.act("ssh_protocol_error", "network", "failure")
	case indexStr(m, "Magic value check failed") >= 0:
		ev.act("ssh_protocol_error", "network", "failure")
		if i := indexStr(m, " from "); i >= 0 {
			ev.setSourceHostPort(m[i+6:])
		}
	case hasPrefixStr(m, "subsystem request for "):
		// "subsystem request for sftp by user vagrant"
		ev.act("ssh_subsystem_request", "session", "")
		if i := indexStr(m, " by user "); i >= 0 {
			ev.setUser(firstToken(m[i+len(" by user "):]))
		}
	case hasPrefixStr(m, "PAM: "):
		// sshd's own PAM reports: "PAM: Authentication failure for [illegal
		// user ]X from host[ via local-ip]", "PAM: User not known to the
		// underlying authentication module for illegal user X from host".
		r := m[len("PAM: "):]
		if i := indexStr(r, " for "); i >= 0 {
			// One per failed keyboard-interactive guess; sshd logs its
			// "Failed keyboard-interactive/pam" at INFO only from the
			// MaxAuthTries/2-th failure on.
			ev.act("pam_auth_failure", "authentication", "failure")
			ev.attempt(roleAttempt, 1)
			sshForUserFrom(ev, r[i+5:])
		}
	}
}

// trimPreauth drops the " [preauth]"/" [postauth]" marker.
func trimPreauth(m []byte) []byte {
	m = bytes.TrimRight(m, " ")
	if n := len(m); n > 0 && m[n-1] == ']' {
		for _, s := range [...]string{" [preauth]", " [postauth]", " [net]"} {
			if bytes.HasSuffix(m, []byte(s)) {
				return bytes.TrimRight(m[:n-len(s)], " ")
			}
		}
	}
	return m
}

// sshGuess reports whether a failed sshd method is a guessed credential
// that no other line of sshd or PAM counts: a password (PAM's own line
// about it is context) or a method sshd could not name. "none" tries
// nothing, publickey, hostbased and GSSAPI offer what the client holds,
// and keyboard-interactive/pam is counted by its "error: PAM:" line.
func sshGuess(method string) bool {
	switch {
	case method == "none", method == "publickey", method == "hostbased", strings.HasPrefix(method, "gssapi"),
		strings.HasSuffix(method, "/pam"):
		return false
	}
	return true
}

// sshAuth parses "METHOD for [invalid user ]USER from HOST [port N] [ssh2][: …]".
func sshAuth(ev Event, b []byte, action, outcome string) {
	method, rest := nextToken(b)
	if !hasPrefixStr(rest, " for ") {
		return
	}
	ev.act(action, "authentication", outcome)
	if len(method) > 0 && string(method) != "unknown" {
		ev["ssh.method"] = string(method)
	}
	sshForUserFrom(ev, rest[len(" for "):])
}

// sshForUserFrom parses "[invalid user |illegal user ]USER from HOST [port N]…".
func sshForUserFrom(ev Event, b []byte) {
	for _, p := range [...]string{"invalid user ", "illegal user "} {
		if hasPrefixStr(b, p) {
			b = b[len(p):]
			ev["event.reason"] = "invalid user"
			break
		}
	}
	sshUserFrom(ev, b)
}

// sshUserFrom parses "USER from HOST [port N]…" and "USER" alone. Users
// may contain " from " (attackers try that), so the split is at the first
// " from HOST port N", else the last " from ".
func sshUserFrom(ev Event, b []byte) {
	split := -1
	for off := 0; off < len(b); {
		i := indexStr(b[off:], " from ")
		if i < 0 {
			break
		}
		i += off
		split = i
		_, rest := nextToken(b[i+6:])
		if hasPrefixStr(rest, " port ") {
			break
		}
		off = i + 6
	}
	if split < 0 {
		if hasPrefixStr(b, "from ") { // empty user name
			ev.setSourceHostPort(b[5:])
			return
		}
		ev.setUser(firstToken(b))
		return
	}
	ev.setUser(b[:split])
	ev.setSourceHostPort(b[split+6:])
}

// sshUserHostPort parses the tail of disconnect messages: "[authenticating
// |invalid ]user USER HOST port N" or "HOST [port N]".
func sshUserHostPort(ev Event, b []byte) {
	b = bytes.TrimSpace(trimPreauth(b))
	// Split off "port N" and the host before it, from the end.
	end := b
	var port []byte
	if i := bytes.LastIndex(end, []byte(" port ")); i >= 0 {
		port = firstToken(end[i+6:])
		end = end[:i]
	}
	hostStart := bytes.LastIndexByte(end, ' ') + 1
	host := end[hostStart:]
	ev.setSourceHost(host)
	if port != nil {
		ev.setPort("source.port", port)
	}
	pre := end[:r0(hostStart-1)]
	if hostStart == 0 {
		return
	}
	switch {
	case hasPrefixStr(pre, "invalid user"):
		ev["event.reason"] = "invalid user"
		ev.setUser(trimLeftBlank(pre[len("invalid user"):]))
	case hasPrefixStr(pre, "authenticating user "):
		ev.setUser(pre[len("authenticating user "):])
	case hasPrefixStr(pre, "user "):
		ev.setUser(pre[len("user "):])
	}
}

// setUser stores a user name unless it is empty or a placeholder.
func (ev Event) setUser(b []byte) {
	b = bytes.TrimSpace(b)
	if string(b) == "<invalid username>" {
		ev["event.reason"] = "invalid user"
		return
	}
	if len(b) == 0 || b[0] == '<' || len(b) > 256 {
		return
	}
	ev.set("user.name", string(b))
}

// setSourceHostPort parses "HOST [port N]…": the host may end with ':' or
// ',' ("from 1.2.3.4: 11: Bye", "port 1684:14:").
func (ev Event) setSourceHostPort(b []byte) {
	host, rest := nextToken(b)
	ev.setSourceHost(host)
	ev.setPortAfter("source.port", rest)
}

// setPortAfter reads " port N" at the start of b.
func (ev Event) setPortAfter(k string, b []byte) {
	b = trimLeftBlank(b)
	if hasPrefixStr(b, "port ") {
		ev.setPort(k, firstToken(b[5:]))
	}
}

// setPort stores the leading digits of b as a port number.
func (ev Event) setPort(k string, b []byte) {
	n := 0
	for n < len(b) && n < 6 && isDigit(b[n]) {
		n++
	}
	if p, ok := atoiBytes(b[:n]); ok && p <= 65535 {
		ev[k] = p
	}
}

// setSourceHost stores an address as source.ip or a host name as
// source.domain.
func (ev Event) setSourceHost(b []byte) {
	if ev.setIP("source.ip", b) {
		return
	}
	b = bytes.TrimRight(bytes.TrimLeft(b, "([<'\""), ":,;)]>'\"")
	if len(b) == 0 {
		return
	}
	if ev.setIP("source.ip", b) {
		return
	}
	if isHostname(b) {
		ev["source.domain"] = string(b)
	}
}

// isHostname reports whether b looks like a DNS name: letters, digits,
// hyphens, underscores and dots, with at least one letter.
func isHostname(b []byte) bool {
	if len(b) == 0 || len(b) > 253 || b[0] == '.' || b[0] == '-' {
		return false
	}
	letter := false
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case isDigit(c), c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return letter
}

// authSudo parses "USER : [reason ; ]TTY=… ; PWD=… ; USER=… ; COMMAND=…".
func authSudo(ev Event, m []byte) {
	m = trimLeftBlank(m)
	sep := indexStr(m, " : ")
	if sep <= 0 || bytes.IndexByte(m[:sep], ' ') >= 0 {
		return
	}
	ev.setUser(m[:sep])
	r := m[sep+3:]
	reason := []byte(nil)
	if hasPrefixStr(r, "(command continued)") {
		ev.act("sudo_command", "process", "success")
		ev["event.reason"] = "command continued"
		return
	}
	for len(r) > 0 {
		if hasPrefixStr(r, "COMMAND=") {
			// The command may itself contain " ; ": it runs to the end.
			ev.set("process.command_line", capText(r[len("COMMAND="):]))
			break
		}
		seg := r
		if i := indexStr(r, " ; "); i >= 0 {
			seg, r = r[:i], r[i+3:]
		} else {
			r = nil
		}
		eq := bytes.IndexByte(seg, '=')
		switch {
		case eq < 0 || bytes.IndexByte(seg[:eq], ' ') >= 0:
			if reason == nil {
				reason = seg
			}
		case string(seg[:eq]) == "USER":
			ev.set("user.target.name", string(seg[eq+1:]))
		case string(seg[:eq]) == "PWD":
			ev.set("process.working_directory", string(seg[eq+1:]))
		case string(seg[:eq]) == "GROUP":
			ev.set("group.target.name", string(seg[eq+1:]))
		}
	}
	switch {
	case reason == nil:
		ev.act("sudo_command", "process", "success")
	case indexStr(reason, "incorrect password attempt") >= 0:
		// "3 incorrect password attempts": the count is the number.
		ev.act("sudo_auth_failure", "authentication", "failure")
		ev["event.reason"] = string(reason)
		n, ok := atoiBytes(firstToken(trimLeftBlank(reason)))
		if !ok || n < 1 {
			n = 1
		}
		ev.attempt(roleAttempt, min(n, 1000))
	case indexStr(reason, "password is required") >= 0:
		ev.act("sudo_auth_failure", "authentication", "failure")
		ev["event.reason"] = string(reason)
		ev.attempt(roleAttempt, 1)
	case indexStr(reason, "NOT in sudoers") >= 0:
		ev.act("sudo_not_in_sudoers", "authentication", "failure")
		ev.attempt(roleAttempt, 1)
	case indexStr(reason, "command not allowed") >= 0:
		ev.act("sudo_command_not_allowed", "authentication", "failure")
		ev.attempt(roleAttempt, 1)
	default:
		ev.act("sudo", "process", "")
		ev["event.reason"] = capText(reason)
	}
}

// authSu parses su(1) records of Debian, RHEL and BusyBox.
func authSu(ev Event, m []byte) {
	switch {
	case hasPrefixStr(m, "Successful su for "), hasPrefixStr(m, "FAILED su for "):
		// "Successful su for tsg by root"
		out := "success"
		r := m[len("Successful su for "):]
		if m[0] == 'F' {
			out, r = "failure", m[len("FAILED su for "):]
		}
		ev.act("su", "authentication", out)
		if out == "failure" {
			ev.attempt(roleAttempt, 1)
		}
		target, rest := nextToken(r)
		ev.set("user.target.name", string(target))
		if rest = trimLeftBlank(rest); hasPrefixStr(rest, "by ") {
			ev.setUser(firstToken(rest[3:]))
		}
	case hasPrefixStr(m, "(to "), hasPrefixStr(m, "FAILED SU (to "):
		// "(to root) user on pts/0"
		out := "success"
		r := m[len("(to "):]
		if m[0] == 'F' {
			out, r = "failure", m[len("FAILED SU (to "):]
		}
		i := bytes.IndexByte(r, ')')
		if i <= 0 {
			return
		}
		ev.act("su", "authentication", out)
		if out == "failure" {
			ev.attempt(roleAttempt, 1)
		}
		ev.set("user.target.name", string(r[:i]))
		ev.setUser(firstToken(trimLeftBlank(r[i+1:])))
	case len(m) > 2 && (m[0] == '+' || m[0] == '-') && m[1] == ' ':
		// "+ pts/0 root:tsg" (old util-linux and BusyBox).
		_, r := nextToken(m[2:])
		who := firstToken(trimLeftBlank(r))
		c := bytes.IndexByte(who, ':')
		if c <= 0 {
			return
		}
		out := "success"
		if m[0] == '-' {
			out = "failure"
		}
		ev.act("su", "authentication", out)
		if out == "failure" {
			ev.attempt(roleAttempt, 1)
		}
		ev.setUser(who[:c])
		ev.set("user.target.name", string(who[c+1:]))
	case hasPrefixStr(m, "pam_authenticate: "), hasPrefixStr(m, "Authentication failure"):
		// PAM's error echoed by su, beside its FAILED su line.
		ev.act("su", "authentication", "failure")
		ev.attempt(roleContext, 0)
	}
}

// authLogin parses login(1) records.
func authLogin(ev Event, m []byte) {
	switch {
	case hasPrefixStr(m, "FAILED LOGIN"):
		// "FAILED LOGIN (1) on '/dev/tty1' FOR 'root', Authentication failure"
		// "FAILED LOGIN 1 FROM host FOR user, Authentication failure"
		ev.act("login", "authentication", "failure")
		ev.attempt(roleAttempt, 1)
		if i := indexStr(m, " FOR "); i >= 0 {
			ev.setUser(bytes.Trim(bytes.TrimRight(firstToken(m[i+5:]), ","), "'"))
		}
		if i := indexStr(m, " FROM "); i >= 0 {
			ev.setSourceHost(firstToken(m[i+6:]))
		}
	case indexStr(m, "ROOT LOGIN ") >= 0 && indexStr(m, "REFUSED") < 0:
		// "ROOT LOGIN ON tty2", "ROOT LOGIN  on '/dev/tty1' FROM host"
		ev.act("login", "authentication", "success")
		ev["user.name"] = "root"
		if i := indexStr(m, " FROM "); i >= 0 {
			ev.setSourceHost(firstToken(m[i+6:]))
		}
	case hasPrefixStr(m, "LOGIN ON ") && indexStr(m, " BY ") > 0:
		// "LOGIN ON tty1 BY user [FROM host]"
		ev.act("login", "authentication", "success")
		i := indexStr(m, " BY ")
		ev.setUser(firstToken(m[i+4:]))
		if j := indexStr(m, " FROM "); j >= 0 {
			ev.setSourceHost(firstToken(m[j+6:]))
		}
	}
}

// authCron parses "(user) CMD (command)".
func authCron(ev Event, m []byte) {
	if len(m) < 2 || m[0] != '(' {
		return
	}
	i := bytes.IndexByte(m, ')')
	if i <= 1 {
		return
	}
	r := trimLeftBlank(m[i+1:])
	if !hasPrefixStr(r, "CMD ") {
		return
	}
	ev.act("cron_command", "process", "")
	ev.setUser(m[1:i])
	c := bytes.TrimSpace(r[4:])
	if len(c) >= 2 && c[0] == '(' && c[len(c)-1] == ')' {
		c = c[1 : len(c)-1]
	}
	ev.set("process.command_line", capText(c))
}

// authLogind parses systemd-logind session records.
func authLogind(ev Event, m []byte) {
	switch {
	case hasPrefixStr(m, "New session ") && indexStr(m, " of user ") > 0:
		ev.act("session_opened", "session", "success")
		u := firstToken(m[indexStr(m, " of user ")+len(" of user "):])
		ev.setUser(bytes.TrimRight(u, "."))
	case hasPrefixStr(m, "Removed session "):
		ev.act("session_closed", "session", "")
	}
}

// authShadow parses the shadow-utils tools (useradd, groupadd, passwd, …).
func authShadow(ev Event, m []byte) {
	kv := func(b []byte) {
		// "name=apache, UID=48, GID=48, home=/usr/share/httpd, shell=…"
		for len(b) > 0 {
			var seg []byte
			if i := indexStr(b, ", "); i >= 0 {
				seg, b = b[:i], b[i+2:]
			} else {
				seg, b = b, nil
			}
			eq := bytes.IndexByte(seg, '=')
			if eq <= 0 {
				continue
			}
			v := seg[eq+1:]
			switch string(seg[:eq]) {
			case "UID":
				ev.set("user.id", string(v))
			case "GID":
				ev.set("group.id", string(v))
			}
		}
	}
	name := func(b []byte) []byte {
		// value of "name=x," at the start of b
		if !hasPrefixStr(b, "name=") {
			return nil
		}
		v := b[5:]
		if i := bytes.IndexByte(v, ','); i >= 0 {
			v = v[:i]
		}
		return v
	}
	quoted := func(b []byte) []byte {
		// the first 'x' in b
		i := bytes.IndexByte(b, '\'')
		if i < 0 {
			return nil
		}
		j := bytes.IndexByte(b[i+1:], '\'')
		if j < 0 {
			return nil
		}
		return b[i+1 : i+1+j]
	}
	switch {
	case hasPrefixStr(m, "new user: "):
		r := m[len("new user: "):]
		ev.act("user_created", "iam", "success")
		ev.setUser(name(r))
		kv(r)
	case hasPrefixStr(m, "new group: "), hasPrefixStr(m, "group added to "):
		r := m[bytes.IndexByte(m, ':')+1:]
		r = trimLeftBlank(r)
		ev.act("group_created", "iam", "success")
		ev.set("group.name", string(name(r)))
		kv(r)
	case hasPrefixStr(m, "failed adding user "):
		ev.act("user_created", "iam", "failure")
		ev.setUser(quoted(m))
	case hasPrefixStr(m, "delete user "):
		ev.act("user_deleted", "iam", "success")
		ev.setUser(quoted(m))
	case hasPrefixStr(m, "removed group "), hasPrefixStr(m, "group '") && indexStr(m, "' removed") > 0:
		ev.act("group_deleted", "iam", "success")
		ev.set("group.name", string(quoted(m)))
	case hasPrefixStr(m, "add '") && indexStr(m, " to ") > 0:
		// "add 'tsg' to group 'sudo'", "add 'tsg' to shadow group 'sudo'"
		ev.act("user_added_to_group", "iam", "success")
		ev.setUser(quoted(m))
		ev.set("group.name", string(quoted(m[indexStr(m, " to ")+4:])))
	case hasPrefixStr(m, "changed password expiry for "):
		ev.act("password_expiry_changed", "iam", "success")
		ev.setUser(firstToken(m[len("changed password expiry for "):]))
	case hasPrefixStr(m, "password for '"):
		// "password for 'x' changed by 'root'"
		ev.act("password_changed", "iam", "success")
		ev.set("user.target.name", string(quoted(m)))
		if i := indexStr(m, " by "); i >= 0 {
			ev.setUser(quoted(m[i:]))
		}
	case hasPrefixStr(m, "changed user '"), hasPrefixStr(m, "change user '"), hasPrefixStr(m, "lock user '"),
		hasPrefixStr(m, "unlock user '"):
		ev.act("user_changed", "iam", "success")
		ev.setUser(quoted(m))
	}
}

// authFTP parses ftpd connection and anonymous login records.
func authFTP(ev Event, m []byte) {
	switch {
	case hasPrefixStr(m, "connection from "):
		// "connection from 1.2.3.4 (host.example) at Sun Jul 10 …"
		ev.act("ftp_connection", "network", "")
		ip, rest := nextToken(m[len("connection from "):])
		ev.setIP("source.ip", ip)
		rest = trimLeftBlank(rest)
		if len(rest) > 2 && rest[0] == '(' {
			if j := bytes.IndexByte(rest, ')'); j > 1 && isHostname(rest[1:j]) {
				ev["source.domain"] = string(rest[1:j])
			}
		}
	case hasPrefixStr(m, "ANONYMOUS FTP LOGIN FROM "):
		ev.act("ftp_login", "authentication", "success")
		ev["user.name"] = "anonymous"
		ev.setSourceHost(firstToken(m[len("ANONYMOUS FTP LOGIN FROM "):]))
	}
}

// authPAM parses PAM module records, new ("pam_unix(sshd:auth): …") and
// old ("sshd(pam_unix)[1]: …", "(pam_unix) …", "pam_unix: …") forms.
//
// A failure in the current form, "pam_unix(sshd:auth): authentication
// failure", is context: the program that asked PAM logs the attempt
// itself in the same log (sshd "Failed password", sudo "N incorrect
// password attempts"), PAM only the first failure of a connection and a
// recap at its end. The old forms are the only record their logs hold
// (the program's own lines went to another file), so they count.
func authPAM(ev Event, m []byte) {
	current := false // "pam_unix(sshd:auth): …"
	switch {
	case hasPrefixStr(m, "pam_"):
		// Skip "pam_unix(sshd:auth): " or "pam_unix: ".
		i := indexStr(m, ": ")
		if i < 0 {
			return
		}
		current = bytes.IndexByte(m[:i], '(') > 0
		m = m[i+2:]
	case hasPrefixStr(m, "(pam_unix) "):
		m = m[len("(pam_unix) "):]
	case hasPrefixStr(m, "PAM ") && indexStr(m, " more authentication failure") > 0:
		// pam_unix's recap when the connection ends: the failures after
		// its first, which the program logged one by one.
		ev.act("pam_auth_failure", "authentication", "failure")
		n, _ := atoiBytes(firstToken(m[len("PAM "):]))
		ev.attempt(roleRecap, n)
		if i := bytes.IndexByte(m, ';'); i >= 0 {
			pamKV(ev, m[i+1:])
		}
		return
	case hasPrefixStr(m, "PAM service(") && indexStr(m, "ignoring max retries") > 0:
		ev.act("pam_max_retries", "authentication", "failure")
		ev.attempt(roleRecap, 0)
		return
	}
	switch {
	case hasPrefixStr(m, "authentication failure"):
		ev.act("pam_auth_failure", "authentication", "failure")
		if current {
			ev.attempt(roleContext, 0)
		} else {
			ev.attempt(roleAttempt, 1)
		}
		if i := bytes.IndexByte(m, ';'); i >= 0 {
			pamKV(ev, m[i+1:])
		}
	case hasPrefixStr(m, "check pass; user unknown"), hasPrefixStr(m, "bad username"):
		ev.act("pam_user_unknown", "authentication", "failure")
		ev.attempt(roleContext, 0)
	case hasPrefixStr(m, "session opened for user "):
		ev.act("session_opened", "session", "success")
		ev.setUser(pamUser(m[len("session opened for user "):]))
	case hasPrefixStr(m, "session closed for user "):
		ev.act("session_closed", "session", "")
		ev.setUser(pamUser(m[len("session closed for user "):]))
	case hasPrefixStr(m, "password changed for "):
		ev.act("password_changed", "iam", "success")
		ev.setUser(firstToken(m[len("password changed for "):]))
	case hasPrefixStr(m, "auth could not identify password for "):
		// No password came back (the client left at the prompt).
		ev.act("pam_auth_failure", "authentication", "failure")
		ev.attempt(roleContext, 0)
		ev.setUser(bytes.Trim(firstToken(m[len("auth could not identify password for "):]), "[]"))
	case hasPrefixStr(m, "conversation failed"):
		ev.act("pam_auth_failure", "authentication", "failure")
		ev.attempt(roleContext, 0)
	case hasPrefixStr(m, "requirement ") && indexStr(m, " not met by user ") > 0:
		ev.act("pam_requirement_not_met", "authentication", "failure")
		u := m[indexStr(m, " not met by user ")+len(" not met by user "):]
		ev.setUser(bytes.Trim(firstToken(u), "\""))
	case hasPrefixStr(m, "user ") && indexStr(m, " tally ") > 0:
		// pam_tally2: "user zbadguy (4001) tally 6, deny 5"
		ev.act("account_locked", "authentication", "failure")
		ev.attempt(roleRecap, 0)
		ev.setUser(firstToken(m[len("user "):]))
	case hasPrefixStr(m, "Consecutive login failures for user "):
		// pam_faillock: "… for user X account temporarily locked"
		ev.act("account_locked", "authentication", "failure")
		ev.attempt(roleRecap, 0)
		ev.setUser(firstToken(m[len("Consecutive login failures for user "):]))
	}
}

// pamUser reads the user of "U by V(uid=0)" or "U(uid=1000) by (uid=0)".
func pamUser(b []byte) []byte {
	u := firstToken(b)
	if i := bytes.IndexByte(u, '('); i >= 0 {
		u = u[:i]
	}
	return u
}

// pamKV reads "logname= uid=0 euid=0 tty=ssh ruser= rhost=1.2.3.4  user=root".
// The first of repeated keys wins.
func pamKV(ev Event, b []byte) {
	var user, ruser, rhost []byte
	for len(b) > 0 {
		var tok []byte
		tok, b = nextToken(trimLeftBlank(b))
		eq := bytes.IndexByte(tok, '=')
		if eq <= 0 {
			continue
		}
		v := tok[eq+1:]
		switch string(tok[:eq]) {
		case "user":
			if user == nil {
				user = v
			}
		case "ruser":
			if ruser == nil {
				ruser = v
			}
		case "rhost":
			if rhost == nil {
				rhost = v
			}
		case "tty":
			if len(v) > 0 && v[0] == '/' {
				// a local terminal; ssh and services write their name
				continue
			}
		}
	}
	if len(user) == 0 {
		user = ruser
	}
	ev.setUser(user)
	ev.setSourceHost(rhost)
}

// capText returns b as a string of at most maxMessage bytes, cut on a rune
// boundary.
func capText(b []byte) string {
	if len(b) > maxMessage {
		n := maxMessage
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	return string(b)
}

func hasPrefixStr(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[:len(s)]) == s
}

func indexStr(b []byte, s string) int { return bytes.Index(b, []byte(s)) }

// firstToken returns b up to its first blank.
func firstToken(b []byte) []byte {
	t, _ := nextToken(b)
	return t
}

// r0 clamps a negative index to 0.
func r0(i int) int {
	if i < 0 {
		return 0
	}
	return i
}
