package syslog

import (
	"bytes"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/internal/parse"
)

// Syslog facilities whose messages are authentication records: Debian's
// rsyslog writes auth,authpriv.* to /var/log/auth.log, which the auth
// parser reads.
const (
	facilityAuth     = 4
	facilityAuthpriv = 10
)

// programSources are the sources of messages by their program (RFC 3164
// tag or RFC 5424 APP-NAME), each one a source internal/parse has a
// parser for.
var programSources = map[string]string{
	"sshd": "auth", "sshd-session": "auth", "sshd-auth": "auth", "sudo": "auth", "su": "auth", "login": "auth",
	"systemd-logind": "auth", "useradd": "auth", "userdel": "auth", "usermod": "auth", "groupadd": "auth",
	"groupdel": "auth", "groupmod": "auth", "passwd": "auth", "chage": "auth", "chpasswd": "auth", "gpasswd": "auth",
	"chfn": "auth", "chsh": "auth", "klogind": "auth", "ftpd": "auth", "vsftpd": "auth", "proftpd": "auth", "pure-ftpd": "auth",
	"filterlog": "firewall",
	"named":     "dns", "dnsmasq": "dns", "dnsmasq-dhcp": "dns",
	"suricata": "suricata",
}

// SourceOf returns the source a syslog message says it is of, or "" when
// it says nothing known: its program (sshd → auth, filterlog → firewall,
// named → dns, …); a kernel line with netfilter fields (IN=, SRC=) is
// firewall; a message of the auth or authpriv facility is auth. The
// header is read by internal/parse, so a message gets a source only when
// that source's parser reads the same header.
func SourceOf(raw []byte) string {
	h, msg, ok := parse.ParseSyslogHeader(raw, time.Time{})
	if !ok {
		return ""
	}
	p := h.Program
	if s, ok := programSources[p]; ok {
		return s
	}
	switch {
	case strings.HasPrefix(p, "sshd-"):
		return "auth"
	case p == "kernel" || p == "ulogd":
		if bytes.Contains(msg, []byte("IN=")) && bytes.Contains(msg, []byte("SRC=")) {
			return "firewall"
		}
	case h.Priority >= 0 && (h.Priority/8 == facilityAuth || h.Priority/8 == facilityAuthpriv):
		return "auth"
	}
	return ""
}
