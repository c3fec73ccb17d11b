package sigma

import (
	"sort"
	"strings"
)

// Vigil's sources grouped by the parser that reads them (internal/parse):
// a Sigma log source names one or more of these groups.
var (
	authSources     = []string{"auth", "sshd", "secure", "sudo", "su", "pam", "authpriv", "auth.log"}
	syslogSources   = []string{"syslog", "messages", "linux", "kern", "cron", "daemon", "user", "local"}
	firewallSources = []string{"firewall", "iptables", "ufw", "pf", "pfsense", "opnsense", "filterlog", "netfilter",
		"nftables", "proxmox", "pve-firewall", "edgeos", "ubiquiti"}
	dnsServerSources = []string{"dns", "bind", "named", "dnsmasq"}
	zeekSources      = []string{"zeek"}
	suricataSources  = []string{"suricata", "eve"}
)

// target is where a rule's log source points in Vigil: the sources whose
// events it reads and, optionally, a field those events must hold with
// one of some values (the program of a Linux service, the event type of
// a Suricata record).
type target struct {
	sources map[string]*requirement
	// key names the sources and their requirements, canonically
	// (Compiled.Scope).
	key string
	// windows says the rule reads Windows events, whose fields are
	// their event data's names (mapWindowsField).
	windows bool
}

// setKey sets t's key from its sources and requirements.
func (t *target) setKey() {
	var b strings.Builder
	for _, src := range t.sourceList() {
		b.WriteString(src)
		if r := t.sources[src]; r != nil {
			b.WriteString("?" + r.field + "=" + strings.Join(r.values, "|"))
		}
		b.WriteByte(';')
	}
	t.key = b.String()
}

// requirement narrows a source's events: field must equal one of values
// (case-insensitive); nil means every event of the source.
type requirement struct {
	field  string
	values []string
	id     int // field's number in the rule's FieldSet
}

func (t *target) add(sources []string, req *requirement) {
	for _, s := range sources {
		t.sources[s] = req
	}
}

// Sources returns the Vigil sources the rule reads, sorted.
func (t *target) sourceList() []string {
	out := make([]string, 0, len(t.sources))
	for s := range t.sources {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// linuxServices maps a Sigma linux service to the program names (syslog
// tags, process.name) whose lines it means.
var linuxServices = map[string][]string{
	"sshd":      {"sshd"},
	"sudo":      {"sudo"},
	"su":        {"su"},
	"cron":      {"cron", "crond", "anacron", "crontab"},
	"vsftpd":    {"vsftpd"},
	"clamav":    {"clamd", "freshclam", "clamav", "clamscan"},
	"guacamole": {"guacd", "guacamole"},
	"named":     {"named"},
	"auditd":    nil, // refused below: Vigil has no auditd parser
}

// resolveLogSource maps a Sigma logsource onto Vigil's sources
// (docs/sigma.md, Log sources).
func resolveLogSource(ls LogSource) (*target, error) {
	t := &target{sources: map[string]*requirement{}}
	cat := strings.ToLower(ls.Category)
	prod := strings.ToLower(ls.Product)
	svc := strings.ToLower(ls.Service)
	switch {
	case cat == "network" && svc == "dns" && prod == "":
		// The ECS taxonomy's name for DNS events.
		t.add(dnsServerSources, nil)
		t.add(zeekSources, nil)
		t.add(suricataSources, &requirement{field: "suricata.eve.event_type", values: []string{"dns"}})
	case cat == "dns" && (prod == "" || prod == "zeek" || prod == "suricata"):
		if prod == "" {
			t.add(dnsServerSources, nil)
			t.add(zeekSources, nil)
		}
		if prod == "" || prod == "suricata" {
			t.add(suricataSources, &requirement{field: "suricata.eve.event_type", values: []string{"dns"}})
		}
		if prod == "zeek" {
			t.add(zeekSources, nil)
		}
	case cat == "firewall" && prod == "" && svc == "":
		t.add(firewallSources, nil)
	case prod == "zeek":
		if svc != "dns" {
			return nil, fail("logsource.service", "zeek service %q: Vigil parses Zeek's dns.log only", ls.Service)
		}
		if cat != "" && cat != "dns" {
			return nil, fail("logsource.category", "category %q with zeek dns: no Vigil source", ls.Category)
		}
		t.add(zeekSources, nil)
	case prod == "suricata" && cat == "":
		if svc != "" && svc != "alert" && svc != "eve" {
			t.add(suricataSources, &requirement{field: "suricata.eve.event_type", values: []string{svc}})
		} else if svc == "alert" {
			t.add(suricataSources, &requirement{field: "suricata.eve.event_type", values: []string{"alert"}})
		} else {
			t.add(suricataSources, nil)
		}
	case prod == "linux" && cat == "":
		switch svc {
		case "":
			// Every host log: auth, syslog and the kernel's firewall lines.
			t.add(authSources, nil)
			t.add(syslogSources, nil)
			t.add(firewallSources, nil)
			t.add(dnsServerSources, nil)
		case "auth":
			t.add(authSources, nil)
		case "syslog":
			t.add(authSources, nil)
			t.add(syslogSources, nil)
			t.add(firewallSources, nil)
			t.add(dnsServerSources, nil)
		default:
			progs, ok := linuxServices[svc]
			if !ok || progs == nil {
				return nil, fail("logsource.service", "linux service %q: no Vigil source (supported: auth, syslog, %s)", ls.Service, strings.Join(sortedKeys(linuxServices), ", "))
			}
			req := &requirement{field: "process.name", values: progs}
			t.add(authSources, req)
			t.add(syslogSources, req)
			if svc == "named" {
				t.add(dnsServerSources, req)
			}
		}
	case prod == "windows":
		if err := resolveWindows(t, ls); err != nil {
			return nil, err
		}
		t.windows = true
	default:
		field, v := "logsource.product", ls.Product
		if cat != "" {
			field, v = "logsource.category", ls.Category
		}
		return nil, fail(field, "%q: no Vigil source reads these logs (Vigil reads linux auth/syslog, firewall, dns, zeek dns, suricata, windows)", v)
	}
	t.setKey()
	return t, nil
}

func sortedKeys(m map[string][]string) []string {
	var out []string
	for k, v := range m {
		if v != nil {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// fieldMap maps the field names SigmaHQ rules use for Vigil's log
// sources (Sigma's generic taxonomy, Zeek's and Sysmon-style names) to
// the ECS fields Vigil's parsers produce.
var fieldMap = map[string]string{
	// DNS (Sigma's dns category, Zeek's dns.log, Sysmon's DNS query).
	"query":        "dns.question.name",
	"QueryName":    "dns.question.name",
	"answer":       "dns.answers.data",
	"answers":      "dns.answers.data",
	"QueryResults": "dns.answers.data",
	"record_type":  "dns.question.type",
	"qtype_name":   "dns.question.type",
	"QueryType":    "dns.question.type",
	"rcode_name":   "dns.response_code",
	"rcode":        "dns.response_code",
	// Zeek connection tuple.
	"id.orig_h": "source.ip",
	"id.orig_p": "source.port",
	"id.resp_h": "destination.ip",
	"id.resp_p": "destination.port",
	"uid":       "zeek.uid",
	"rejected":  "zeek.dns.rejected",
	// Network (firewall category, Sysmon-style names).
	"src_ip":          "source.ip",
	"dst_ip":          "destination.ip",
	"src_port":        "source.port",
	"dst_port":        "destination.port",
	"SourceIp":        "source.ip",
	"DestinationIp":   "destination.ip",
	"SourcePort":      "source.port",
	"DestinationPort": "destination.port",
	"SourceHostname":  "source.domain",
	"action":          "event.action",
	"protocol":        "network.transport",
	"Protocol":        "network.transport",
	// Hosts, users, programs.
	"Computer":         "host.name",
	"ComputerName":     "host.name",
	"Hostname":         "host.name",
	"hostname":         "host.name",
	"User":             "user.name",
	"user":             "user.name",
	"TargetUser":       "user.target.name",
	"Image":            "process.name",
	"CommandLine":      "process.command_line",
	"CurrentDirectory": "process.working_directory",
	"pid":              "process.pid",
	"ProcessId":        "process.pid",
	"message":          "message",
	// HTTP and TLS (Suricata, Sigma's proxy/webserver names).
	"c-uri":        "url.original",
	"cs-uri-query": "url.query",
	"cs-host":      "url.domain",
	"cs-method":    "http.request.method",
	"c-useragent":  "user_agent.original",
	"cs-referrer":  "http.request.referrer",
	"sc-status":    "http.response.status_code",
	"server_name":  "tls.client.server_name",
	"signature":    "rule.name",
	"signature_id": "rule.id",
	"category":     "rule.category",
}

// ecsNamespaces are the top-level ECS (and Vigil) names a dotted field
// may start with: a rule written in ECS (taxonomy ecs, or dotted names)
// uses Vigil's field names as they are.
var ecsNamespaces = []string{"source", "destination", "client", "server", "dns", "event", "host", "user", "process",
	"network", "url", "http", "tls", "file", "rule", "suricata", "zeek", "log", "observer", "ssh", "tcp", "icmp", "ip",
	"group", "user_agent", "vigil", "bind", "service", "related"}

// mapField returns the ECS field a rule's field name means in Vigil.
func mapField(name string) (string, bool) {
	if f, ok := fieldMap[name]; ok {
		return f, true
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		ns := name[:i]
		for _, n := range ecsNamespaces {
			if ns == n {
				return name, true
			}
		}
	}
	return "", false
}
