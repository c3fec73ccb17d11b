package sigma

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/parse"
)

// TestLogSources: the Vigil sources a Sigma logsource reads, and the
// requirement some of them add (docs/sigma.md, Log sources).
func TestLogSources(t *testing.T) {
	cases := []struct {
		logsource string
		has       []string // sources read
		hasNot    []string
		refused   string
	}{
		{"category: dns", []string{"dns", "bind", "named", "dnsmasq", "zeek", "suricata", "eve"}, []string{"auth", "firewall"}, ""},
		{"category: network\n    service: dns", []string{"dns", "zeek", "suricata"}, []string{"auth"}, ""},
		{"product: zeek\n    service: dns", []string{"zeek"}, []string{"dns", "suricata"}, ""},
		{"product: zeek\n    service: http", nil, nil, "Vigil parses Zeek's dns.log only"},
		{"category: firewall", []string{"firewall", "iptables", "ufw", "filterlog", "pfsense"}, []string{"dns", "auth"}, ""},
		{"product: linux", []string{"auth", "sshd", "syslog", "iptables", "named"}, []string{"suricata", "zeek"}, ""},
		{"product: linux\n    service: auth", []string{"auth", "secure", "auth.log"}, []string{"syslog"}, ""},
		{"product: linux\n    service: sshd", []string{"auth", "sshd", "syslog"}, []string{"firewall"}, ""},
		{"product: linux\n    service: auditd", nil, nil, `linux service "auditd": no Vigil source`},
		{"product: suricata", []string{"suricata", "eve"}, []string{"dns"}, ""},
		{"product: windows", []string{"windows", "winlogbeat", "evtx"}, []string{"auth", "suricata"}, ""},
		{"product: windows\n    service: security", []string{"windows"}, []string{"auth"}, ""},
		{"product: windows\n    category: process_creation", []string{"windows"}, []string{"auth"}, ""},
		{"product: windows\n    service: nosuch", nil, nil, `windows service "nosuch": no channel known`},
		{"product: windows\n    category: nosuch", nil, nil, `windows category "nosuch": no Windows event maps to it`},
		{"category: process_creation\n    product: linux", nil, nil, `"process_creation": no Vigil source`},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.logsource, "\n    ", " "), func(t *testing.T) {
			r, err := Parse([]byte("title: t\nlogsource:\n    " + c.logsource + "\ndetection:\n    k:\n        - x\n    condition: k\n"))
			if err != nil {
				t.Fatal(err)
			}
			comp, err := Compile(r)
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("err = %v, want …%s…", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := " " + strings.Join(comp.Sources(), " ") + " "
			for _, s := range c.has {
				if !strings.Contains(got, " "+s+" ") {
					t.Errorf("sources %s lack %s", got, s)
				}
			}
			for _, s := range c.hasNot {
				if strings.Contains(got, " "+s+" ") {
					t.Errorf("sources %s hold %s", got, s)
				}
			}
		})
	}
}

// TestServiceRequirement: a linux service reads the lines of its
// program only; Suricata's DNS records only under category dns.
func TestServiceRequirement(t *testing.T) {
	r, _ := Parse([]byte("title: t\nlogsource:\n    product: linux\n    service: sshd\ndetection:\n    k:\n        - error\n    condition: k\n"))
	c, err := Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Match(&Event{Source: "auth", Raw: "error", Fields: parse.Event{"process.name": "sshd"}}) {
		t.Error("sshd line not matched")
	}
	if c.Match(&Event{Source: "auth", Raw: "error", Fields: parse.Event{"process.name": "sudo"}}) {
		t.Error("sudo line matched an sshd rule")
	}
	if c.Match(&Event{Source: "suricata", Raw: "error", Fields: parse.Event{"process.name": "sshd"}}) {
		t.Error("suricata record matched a linux rule")
	}
	r, _ = Parse([]byte("title: t\nlogsource:\n    category: dns\ndetection:\n    s:\n        query|endswith: .onion\n    condition: s\n"))
	if c, err = Compile(r); err != nil {
		t.Fatal(err)
	}
	if !c.Match(&Event{Source: "eve", Fields: parse.Event{"suricata.eve.event_type": "dns", "dns.question.name": "x.onion"}}) {
		t.Error("suricata dns record not matched")
	}
	if c.Match(&Event{Source: "eve", Fields: parse.Event{"suricata.eve.event_type": "alert", "dns.question.name": "x.onion"}}) {
		t.Error("suricata alert matched a dns rule")
	}
}

func TestFieldMapping(t *testing.T) {
	for name, want := range map[string]string{
		"query": "dns.question.name", "dst_port": "destination.port", "id.orig_h": "source.ip", "User": "user.name",
		"dns.question.name": "dns.question.name", "source.ip": "source.ip", "vigil.attempt.role": "vigil.attempt.role",
		"Unknown": "", "winlog.event_id": "", "foo.bar": "",
	} {
		got, ok := mapField(name)
		if got != want || ok != (want != "") {
			t.Errorf("mapField(%s) = %q %v, want %q", name, got, ok, want)
		}
	}
}
