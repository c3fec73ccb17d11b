package esbulk

import (
	"path"
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/syslog"
)

// DefaultSource is the source of a document nothing names a source for.
const DefaultSource = "elastic"

// canonical names the sources this package chooses by the source their
// parser is documented under (docs/ingest.md): an alias the parsers take
// is stored under the name users search for.
var canonical = map[string]string{
	"eve": "suricata", "auth.log": "auth", "secure": "auth", "sshd": "auth", "sudo": "auth", "su": "auth", "pam": "auth", "authpriv": "auth",
	"bind": "dns", "named": "dns", "dnsmasq": "dns",
	"iptables": "firewall", "ufw": "firewall", "pf": "firewall", "pfsense": "firewall", "opnsense": "firewall",
	"filterlog": "firewall", "netfilter": "firewall", "nftables": "firewall",
	"winlogbeat": "windows", "wineventlog": "windows", "evtx": "windows",
}

// hints are what a document and its request say of its source.
type hints struct {
	dataset, module, fileset, input, path, index string
	eve                                          bool // a structured document with Suricata's event_type
	windows                                      bool // a document with Winlogbeat's winlog object
}

// source chooses the source of a document whose line is raw, first match
// wins:
//  1. the document's own fields, when one names a source with a parser:
//     event.dataset ("system.auth" → auth, "suricata.eve" → suricata),
//     event.module, fileset.name, then log.file.path's file name
//     ("/var/log/auth.log" → auth, "eve.json" → suricata);
//  2. the index, when it names one ("auth", "logs-system.auth-default");
//  3. a structured document with event_type: Suricata EVE; one with
//     Winlogbeat's winlog object: windows;
//  4. a syslog line's program (sshd → auth, named → dns…), as the syslog
//     listeners choose (input.type syslog, or any line with a syslog
//     header: Filebeat reading /var/log/syslog);
//  5. else the index's first word ("filebeat-8.11.0" → filebeat) when it
//     is a valid source, else DefaultSource.
func (h hints) source(raw []byte) string {
	for _, v := range []string{h.dataset, h.module, h.fileset, path.Base(h.path)} {
		if s := named(v); s != "" {
			return s
		}
	}
	if s := named(h.index); s != "" {
		return s
	}
	if h.eve {
		return "suricata"
	}
	if h.windows {
		return "windows"
	}
	if s := syslog.SourceOf(raw); s != "" {
		return s
	}
	word, _, _ := strings.Cut(h.index, "-")
	if word != "" && vigil.ValidateSource(word) == "" {
		return word
	}
	return DefaultSource
}

// named returns the source a name's words name ("system.auth",
// "logs-suricata.eve-default", "auth.log"), or "".
func named(v string) string {
	if v == "" || v == "." || v == "/" {
		return ""
	}
	v = strings.ToLower(v)
	if known(v) {
		return canon(v)
	}
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == '-' || r == '_' || r == '/' }) {
		if known(w) {
			return canon(w)
		}
	}
	return ""
}

// known reports whether a word names a parser's source. Zeek is left out:
// its parser reads dns.log, and "zeek" names every other log of Zeek too.
func known(w string) bool { return w != "zeek" && parse.Known(w) }

func canon(s string) string {
	if c, ok := canonical[s]; ok {
		return c
	}
	return s
}
