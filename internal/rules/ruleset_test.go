package rules

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func rule(id string, priority int, severity, conditions string) *vigil.Rule {
	return &vigil.Rule{
		ID: id, Name: id, Priority: priority, Enabled: true, Severity: severity,
		Conditions: json.RawMessage(conditions),
		CreatedAt:  time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestClassifyOrder(t *testing.T) {
	matching := leafJSON("observation.type", "eq", "suricata.alert")
	missing := leafJSON("observation.type", "eq", "malware")

	disabled := rule("disabled", 0, "critical", matching)
	disabled.Enabled = false
	broken := rule("broken", 1, "critical", `{"field":"x"}`)
	rules := []*vigil.Rule{
		disabled,
		broken,
		nil,
		rule("miss", 2, "low", missing),
		rule("first", 3, "high", matching),
		rule("second", 4, "medium", `{}`),
	}
	for _, tc := range []struct {
		name  string
		rules []*vigil.Rule
		facts *Facts
		want  string
	}{
		{"first match wins; disabled and broken skipped", rules, sampleFacts(), "first"},
		{"catch-all after", rules, &Facts{}, "second"},
		{"no rules", nil, sampleFacts(), ""},
		{"none matches", rules[:4], sampleFacts(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.rules, tc.facts, nil)
			gotID := ""
			if got != nil {
				gotID = got.ID
			}
			if gotID != tc.want {
				t.Errorf("Classify = %q, want %q", gotID, tc.want)
			}
		})
	}

	t.Run("rule set reports invalid", func(t *testing.T) {
		rs := NewRuleSet(rules)
		if err := rs.Invalid()["broken"]; vigil.ErrorCode(err) != vigil.EINVALID {
			t.Errorf("Invalid()[broken] = %v, want an invalid_argument error", err)
		}
		if len(rs.Invalid()) != 1 {
			t.Errorf("Invalid() = %v, want only broken", rs.Invalid())
		}
		// A rule set is reusable across incidents.
		for range 3 {
			if got := rs.Classify(sampleFacts(), nil); got == nil || got.ID != "first" {
				t.Fatalf("Classify = %v, want first", got)
			}
		}
	})
}

func TestRuleSetConcurrent(t *testing.T) {
	rs := NewRuleSet(benchRules(200))
	internal := internalNetworks(t)
	done := make(chan string)
	for range 4 {
		go func() {
			id := ""
			for range 20 {
				if r := rs.Classify(benchFacts(), internal); r != nil {
					id = r.ID
				}
			}
			done <- id
		}()
	}
	for range 4 {
		if id := <-done; id != "last" {
			t.Errorf("Classify = %q, want last", id)
		}
	}
}

func TestSortRules(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id string, prio int, created time.Time) *vigil.Rule {
		return &vigil.Rule{ID: id, Priority: prio, CreatedAt: created}
	}
	rules := []*vigil.Rule{
		mk("d", 5, t0),
		mk("c", 1, t0.Add(time.Hour)),
		mk("b", 1, t0),
		mk("a", 1, t0),
		mk("e", 0, t0.Add(48*time.Hour)),
	}
	SortRules(rules)
	var got []string
	for _, r := range rules {
		got = append(got, r.ID)
	}
	if want := "e a b c d"; strings.Join(got, " ") != want {
		t.Errorf("order = %v, want %s", got, want)
	}
}

func TestClassifyTargetInfrastructure(t *testing.T) {
	internal := internalNetworks(t)
	target := rule("target", 0, "critical", leafJSON("observation.type", "eq", "ssh.bruteforce"))
	target.TargetInfrastructure = true
	fallback := rule("fallback", 1, "medium", `{}`)
	rules := []*vigil.Rule{target, fallback}

	facts := func(nodes ...NodeFacts) *Facts {
		return &Facts{
			Severity:     "medium",
			Observations: []ObservationFacts{{Type: "ssh.bruteforce", Severity: "medium", Description: "d"}},
			Nodes:        nodes,
		}
	}
	attacker := NodeFacts{Type: "IP", Value: "203.0.113.7"}
	for _, tc := range []struct {
		name     string
		facts    *Facts
		internal []netip.Prefix
		want     string
	}{
		{"internal IPv4 node 10/8", facts(attacker, NodeFacts{Type: "IP", Value: "10.20.30.40"}), internal, "target"},
		{"internal 172.16/12", facts(NodeFacts{Type: "IP", Value: "172.31.255.1"}), internal, "target"},
		{"internal 192.168/16", facts(NodeFacts{Type: "IP", Value: "192.168.1.10"}), internal, "target"},
		{"only public nodes", facts(attacker, NodeFacts{Type: "Host", Value: "db01"}), internal, "fallback"},
		{"172.32 is outside 172.16/12", facts(NodeFacts{Type: "IP", Value: "172.32.0.1"}), internal, "fallback"},
		{"IP value on a Host node", facts(NodeFacts{Type: "Host", Value: "192.168.1.5"}), internal, "target"},
		{"IPv4-mapped IPv6", facts(NodeFacts{Type: "IP", Value: "::ffff:10.0.0.1"}), internal, "target"},
		{"ULA IPv6", facts(NodeFacts{Type: "IP", Value: "fd00::1"}), internal, "target"},
		{"loopback", facts(NodeFacts{Type: "IP", Value: "127.0.0.1"}), internal, "target"},
		{"IP node with junk value", facts(NodeFacts{Type: "IP", Value: "10.0.0.300"}), internal, "fallback"},
		{"no internal networks", facts(NodeFacts{Type: "IP", Value: "10.0.0.1"}), nil, "fallback"},
		{"custom internal networks", facts(attacker), mustPrefixes(t, "203.0.113.0/24"), "target"},
		{"conditions still required", &Facts{Nodes: []NodeFacts{{Type: "IP", Value: "10.0.0.1"}}}, internal, "fallback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(rules, tc.facts, tc.internal)
			if got == nil || got.ID != tc.want {
				t.Errorf("Classify = %v, want %s", got, tc.want)
			}
		})
	}
}

// benchFacts is a realistic incident: 5 observations, 20 artifacts of
// several sources, 10 nodes.
func benchFacts() *Facts {
	f := &Facts{Severity: "high", ArtifactCount: 20, NodeCount: 10}
	obs := []ObservationFacts{
		{"ssh.bruteforce", "medium", "12 failed SSH logins for root, admin, oracle from 203.0.113.7 in 5 minutes"},
		{"ssh.success_after_bruteforce", "high", "Accepted password for admin from 203.0.113.7 after 12 failures"},
		{"portscan", "medium", "203.0.113.7 denied on 34 destination ports of 10.1.2.3 in 1 minute"},
		{"suricata.alert", "high", "ET SCAN Suspicious inbound to mySQL port 3306"},
		{"intel.hit", "high", "203.0.113.7 listed by abuse.ch feodo tracker"},
	}
	f.Observations = obs
	for i := range 20 {
		var a ArtifactFacts
		switch i % 4 {
		case 0:
			a = ArtifactFacts{Source: "auth", Event: map[string]any{
				"source.ip": "203.0.113.7", "source.port": int64(40000 + i), "user.name": "admin",
				"host.name": "db01", "event.action": "ssh_login", "event.outcome": "failure",
				"process.name": "sshd", "process.pid": int64(1200 + i),
			}}
		case 1:
			a = ArtifactFacts{Source: "suricata", Event: map[string]any{
				"source.ip": "203.0.113.7", "destination.ip": "10.1.2.3", "destination.port": int64(3306),
				"network.transport": "tcp", "rule.name": "ET SCAN Suspicious inbound to mySQL port 3306",
				"rule.id": "2010937", "event.severity": int64(2), "tags": []string{"scan", "mysql"},
			}}
		case 2:
			a = ArtifactFacts{Source: "firewall", Event: map[string]any{
				"source.ip": "203.0.113.7", "destination.ip": "10.1.2.3", "destination.port": int64(1000 + i),
				"event.action": "deny", "network.transport": "tcp", "observer.ingress.interface.name": "eth0",
			}}
		default:
			a = ArtifactFacts{Source: "dns", Event: map[string]any{
				"source.ip": "10.1.2.3", "dns.question.name": fmt.Sprintf("x%d.evil.example", i),
				"dns.question.type": "A", "dns.response_code": "NOERROR", "dns.resolved_ip": []string{"198.51.100.9"},
			}}
		}
		f.Artifacts = append(f.Artifacts, a)
	}
	f.Nodes = []NodeFacts{
		{"IP", "203.0.113.7"}, {"IP", "10.1.2.3"}, {"IP", "198.51.100.9"}, {"Host", "db01"},
		{"User", "admin"}, {"User", "root"}, {"User", "oracle@db01"}, {"Domain", "x3.evil.example"},
		{"Domain", "x7.evil.example"}, {"Hash", "44d88612fea8a8f36de82e1278abb02f"},
	}
	return f
}

// benchRules returns n rules of mixed operators and shapes; none matches
// benchFacts but the last, so Classify evaluates all of them.
func benchRules(n int) []*vigil.Rule {
	rules := make([]*vigil.Rule, 0, n)
	for i := range n - 1 {
		var c string
		switch i % 13 {
		case 0:
			c = leafJSON("observation.type", "eq", fmt.Sprintf("custom.%d", i))
		case 1:
			c = leafJSON("event.user.name", "in", []string{fmt.Sprintf("u%d", i), "svc-backup", "nagios"})
		case 2:
			c = leafJSON("observation.description", "contains", fmt.Sprintf("campaign-%d", i))
		case 3:
			c = leafJSON("event.dns.question.name", "suffix", fmt.Sprintf(".bad%d.example", i))
		case 4:
			c = leafJSON("event.rule.name", "regex", fmt.Sprintf(`(?i)^ET MALWARE .*%d$`, i))
		case 5:
			c = leafJSON("event.source.ip", "cidr", []string{fmt.Sprintf("100.%d.0.0/16", i%256), "192.0.2.0/24"})
		case 6:
			c = `{"all":[` + leafJSON("incident.artifact_count", "gte", 5) + `,` + leafJSON("event.destination.port", "eq", 10000+i) + `]}`
		case 7:
			c = `{"any":[` + leafJSON("observation.severity", "gt", "high") + `,` + leafJSON("node.value", "prefix", fmt.Sprintf("evil%d", i)) + `]}`
		case 8:
			c = `{"all":[` + leafJSON("artifact.source", "eq", "suricata") + `,{"not":` + leafJSON("event.tags", "in", []string{"scan", "mysql"}) + `}]}`
		case 9:
			c = leafJSON("event.process.pid", "lt", 100)
		case 10:
			c = leafJSON(fmt.Sprintf("event.custom.f%d", i%50), "exists", true)
		case 11:
			// The first leaf matches (a Hash node), the second does not.
			c = `{"all":[` + leafJSON("node.type", "in", []string{"URL", "Hash"}) + `,` + leafJSON("incident.node_count", "gt", 100) + `]}`
		case 12:
			c = leafJSON("event.destination.port", "in", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, i})
		}
		rules = append(rules, rule(fmt.Sprintf("r%d", i), i, "low", c))
	}
	rules = append(rules, rule("last", n, "critical", leafJSON("event.destination.ip", "cidr", "10.0.0.0/8")))
	return rules
}

func BenchmarkClassify1000Rules(b *testing.B) {
	rules := benchRules(1000)
	facts := benchFacts()
	internal := internalNetworks(b)

	b.Run("RuleSet", func(b *testing.B) {
		rs := NewRuleSet(rules)
		if len(rs.Invalid()) > 0 {
			b.Fatalf("invalid rules: %v", rs.Invalid())
		}
		if got := rs.Classify(facts, internal); got == nil || got.ID != "last" {
			b.Fatalf("Classify = %v, want last", got)
		}
		b.ReportAllocs()
		for b.Loop() {
			rs.Classify(facts, internal)
		}
	})
	b.Run("CompileAndClassify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Classify(rules, facts, internal)
		}
	})
}
