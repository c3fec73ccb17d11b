package detect

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func TestThreatIntelSignals(t *testing.T) {
	fields := parse.Event{"source.ip": "10.0.0.8", "destination.ip": "203.0.113.80", "host.name": "ids-01"}
	for _, c := range []struct {
		name  string
		hits  []vigil.IntelHit
		want  []string // key | member | nodes
		empty bool
	}{
		{name: "ip", hits: []vigil.IntelHit{{Feed: "feodo", Indicator: "203.0.113.80", NodeType: "IP", NodeValue: "203.0.113.80"}},
			want: []string{"IP:203.0.113.80 | feodo | IP:203.0.113.80* IP:10.0.0.8 Host:ids-01"}},
		{name: "cidr indicator, two feeds on one node", hits: []vigil.IntelHit{
			{Feed: "spamhaus-drop", Indicator: "203.0.113.0/24", NodeType: "ip", NodeValue: "203.0.113.80"},
			{Feed: "feodo", Indicator: "203.0.113.80", NodeType: "IP", NodeValue: "203.0.113.80"}},
			want: []string{"IP:203.0.113.80 | feodo, spamhaus-drop (203.0.113.0/24) | IP:203.0.113.80* IP:10.0.0.8 Host:ids-01"}},
		{name: "domain, normalized", hits: []vigil.IntelHit{{Feed: "urlhaus", Indicator: "evil.example", NodeType: "Domain", NodeValue: "EVIL.example."}},
			want: []string{"Domain:evil.example | urlhaus | Domain:evil.example* IP:10.0.0.8 IP:203.0.113.80 Host:ids-01"}},
		{name: "two nodes", hits: []vigil.IntelHit{{Feed: "a", NodeType: "IP", NodeValue: "10.0.0.8"}, {Feed: "b", NodeType: "Hash", NodeValue: "ABCDEF"}},
			want: []string{"IP:10.0.0.8 | a | IP:10.0.0.8* IP:203.0.113.80 Host:ids-01", "Hash:abcdef | b | Hash:abcdef* IP:10.0.0.8 IP:203.0.113.80 Host:ids-01"}},
		{name: "unknown node type", hits: []vigil.IntelHit{{Feed: "x", NodeType: "Email", NodeValue: "a@b.c"}}, empty: true},
		{name: "bad ip", hits: []vigil.IntelHit{{Feed: "x", NodeType: "IP", NodeValue: "not-an-ip"}}, empty: true},
		{name: "no hits", empty: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := event(fields)
			ev.Intel = c.hits
			var got []string
			for _, k := range (ThreatIntel{}).Signals(ev) {
				got = append(got, k.Key+" | "+k.Member+" | "+strings.Join(nodeStrings(k.Nodes), " "))
			}
			if c.empty {
				if len(got) != 0 {
					t.Fatalf("signals %v, want none", got)
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("signals\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestThreatIntelDescribe(t *testing.T) {
	f := ThreatIntel{}.Describe("IP:203.0.113.80", window(3, []string{"feodo", "feodo, spamhaus-drop (203.0.113.0/24)"}))
	if f.Type != "threat_intel" || f.Severity != vigil.SeverityHigh || f.Title != "Threat intel match: IP 203.0.113.80 on feodo" ||
		!strings.Contains(f.Description, "IP 203.0.113.80 matched 2 feeds (feodo, spamhaus-drop (203.0.113.0/24)) in 3 events") {
		t.Errorf("finding %+v", f)
	}
}
