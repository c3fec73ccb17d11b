package rules

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"

	"github.com/vigil-soc/vigil"
)

func mustCompile(tb testing.TB, raw string) *Condition {
	tb.Helper()
	c, err := Compile(json.RawMessage(raw))
	if err != nil {
		tb.Fatalf("Compile(%s): %v", raw, err)
	}
	return c
}

func mustPrefixes(tb testing.TB, cidrs ...string) []netip.Prefix {
	tb.Helper()
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			tb.Fatalf("ParsePrefix(%q): %v", s, err)
		}
		out = append(out, p)
	}
	return out
}

func internalNetworks(tb testing.TB) []netip.Prefix {
	tb.Helper()
	return mustPrefixes(tb, vigil.DefaultEnrichmentSettings().InternalNetworks...)
}

// sampleFacts is an incident of an SSH brute force and an IDS alert from one
// attacker against an internal database server, with events in the flat
// shape the parsers produce and in the nested shape of decoded JSON.
func sampleFacts() *Facts {
	return &Facts{
		Severity:      "high",
		ArtifactCount: 3,
		NodeCount:     4,
		Observations: []ObservationFacts{
			{Type: "ssh.bruteforce", Severity: "medium", Description: "5 failed SSH logins for root from 203.0.113.7"},
			{Type: "suricata.alert", Severity: "high", Description: "ET SCAN Suspicious inbound to mySQL port 3306"},
		},
		Artifacts: []ArtifactFacts{
			{Source: "auth", Event: map[string]any{
				"source.ip":     "203.0.113.7",
				"source.port":   int64(51234),
				"user.name":     "Root",
				"event.outcome": "failure",
			}},
			{Source: "suricata", Event: map[string]any{
				"source.ip":          "203.0.113.7",
				"destination.ip":     "::ffff:10.1.2.3",
				"destination.port":   float64(3306),
				"alert.signature_id": json.Number("2010937"),
				"alert.severity":     "2",
				"tags":               []string{"scan", "MySQL"},
				"tls.established":    true,
			}},
			{Source: "firewall", Event: map[string]any{
				"source":      map[string]any{"ip": "198.51.100.9", "port": 4444.0},
				"destination": map[string]any{"ip": "10.1.2.4"},
				"dns": map[string]any{"answers": []any{
					map[string]any{"data": "192.0.2.1"},
					map[string]any{"data": "192.0.2.2"},
				}},
				"empty.list": []string{},
				"null.field": nil,
			}},
		},
		Nodes: []NodeFacts{
			{Type: "IP", Value: "203.0.113.7"},
			{Type: "IP", Value: "10.1.2.3"},
			{Type: "Host", Value: "db01"},
			{Type: "User", Value: "root"},
		},
	}
}

func leafJSON(field, op string, value any) string {
	v, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`{"field":%q,"op":%q,"value":%s}`, field, op, v)
}

type matchCase struct {
	name  string
	cond  string
	facts *Facts // nil: sampleFacts()
	want  bool
}

func runMatchCases(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.facts
			if f == nil {
				f = sampleFacts()
			}
			c := mustCompile(t, tc.cond)
			if got := c.Match(f); got != tc.want {
				t.Errorf("Match(%s) = %v, want %v", tc.cond, got, tc.want)
			}
		})
	}
}

func TestMatchOperators(t *testing.T) {
	big := []any{"1.1.1.1", "8.8.8.8", "9.9.9.9", "a", "b", "c", "d", "e", "f"}
	oneObservation := &Facts{Observations: []ObservationFacts{{Type: "ssh.bruteforce", Severity: "low", Description: "x"}}}
	runMatchCases(t, []matchCase{
		// eq
		{"eq/severity", leafJSON("incident.severity", "eq", "high"), nil, true},
		{"eq/severity miss", leafJSON("incident.severity", "eq", "low"), nil, false},
		{"eq/case-insensitive string", leafJSON("event.user.name", "eq", "root"), nil, true},
		{"eq/string miss", leafJSON("event.user.name", "eq", "admin"), nil, false},
		{"eq/number", leafJSON("event.destination.port", "eq", 3306), nil, true},
		{"eq/numeric string in rule vs number", leafJSON("event.destination.port", "eq", "3306"), nil, true},
		{"eq/number miss", leafJSON("event.destination.port", "eq", 22), nil, false},
		{"eq/number vs numeric string", leafJSON("event.alert.severity", "eq", 2), nil, true},
		{"eq/number vs numeric string miss", leafJSON("event.alert.severity", "eq", 3), nil, false},
		{"eq/json.Number", leafJSON("event.alert.signature_id", "eq", 2010937), nil, true},
		{"eq/bool", leafJSON("event.tls.established", "eq", true), nil, true},
		{"eq/bool miss", leafJSON("event.tls.established", "eq", false), nil, false},
		{"eq/string true vs bool", leafJSON("event.tls.established", "eq", "TRUE"), nil, true},
		{"eq/count", leafJSON("incident.artifact_count", "eq", 3), nil, true},
		{"eq/count miss", leafJSON("incident.artifact_count", "eq", 4), nil, false},
		{"eq/array item", leafJSON("event.tags", "eq", "mysql"), nil, true},
		{"eq/missing field", leafJSON("event.nope", "eq", "x"), nil, false},

		// ne
		{"ne/severity", leafJSON("incident.severity", "ne", "low"), nil, true},
		{"ne/severity miss", leafJSON("incident.severity", "ne", "high"), nil, false},
		{"ne/any element differs", leafJSON("observation.type", "ne", "ssh.bruteforce"), nil, true},
		{"ne/single element equal", leafJSON("observation.type", "ne", "ssh.bruteforce"), oneObservation, false},
		{"ne/case-insensitive", leafJSON("event.user.name", "ne", "ROOT"), &Facts{Artifacts: []ArtifactFacts{{Event: map[string]any{"user.name": "root"}}}}, false},
		{"ne/missing field is false", leafJSON("event.nope", "ne", "x"), nil, false},

		// in
		{"in/strings", leafJSON("observation.type", "in", []any{"malware", "suricata.alert"}), nil, true},
		{"in/strings miss", leafJSON("observation.type", "in", []any{"malware", "dga"}), nil, false},
		{"in/numbers", leafJSON("event.destination.port", "in", []any{22, 3306}), nil, true},
		{"in/numbers miss", leafJSON("event.destination.port", "in", []any{22, 23}), nil, false},
		{"in/severity", leafJSON("incident.severity", "in", []any{"high", "critical"}), nil, true},
		{"in/severity miss", leafJSON("incident.severity", "in", []any{"low", "medium"}), nil, false},
		{"in/large set", leafJSON("node.value", "in", append(big, "DB01")), nil, true},
		{"in/large set miss", leafJSON("node.value", "in", big), nil, false},
		{"in/large set number vs numeric string", leafJSON("event.alert.severity", "in", append(big, 2)), nil, true},
		{"in/large set numeric string vs number", leafJSON("event.destination.port", "in", append(big, "3306")), nil, true},
		{"in/large set bool", leafJSON("event.tls.established", "in", append(big, true)), nil, true},
		{"in/large set non-numeric strings vs number", leafJSON("event.destination.port", "in", big), nil, false},

		// contains, prefix, suffix
		{"contains/case-insensitive", leafJSON("observation.description", "contains", "MYSQL"), nil, true},
		{"contains/miss", leafJSON("observation.description", "contains", "postgres"), nil, false},
		{"contains/number as text", leafJSON("event.destination.port", "contains", "330"), nil, true},
		{"prefix", leafJSON("node.value", "prefix", "203.0."), nil, true},
		{"prefix/miss", leafJSON("node.value", "prefix", "192."), nil, false},
		{"prefix/case-insensitive", leafJSON("artifact.source", "prefix", "SURI"), nil, true},
		{"suffix", leafJSON("event.user.name", "suffix", "OOT"), nil, true},
		{"suffix/miss", leafJSON("event.user.name", "suffix", "admin"), nil, false},

		// regex
		{"regex", leafJSON("observation.description", "regex", `\bSSH\b`), nil, true},
		{"regex/case-sensitive", leafJSON("observation.description", "regex", `^et scan`), nil, false},
		{"regex/(?i)", leafJSON("observation.description", "regex", `(?i)^et scan`), nil, true},
		{"regex/miss", leafJSON("artifact.source", "regex", `^zeek$`), nil, false},
		{"regex/number as text", leafJSON("event.source.port", "regex", `^5\d{4}$`), nil, true},

		// cidr
		{"cidr/flat", leafJSON("event.source.ip", "cidr", "203.0.113.0/24"), nil, true},
		{"cidr/nested event", leafJSON("event.source.ip", "cidr", "198.51.100.0/24"), nil, true},
		{"cidr/miss", leafJSON("event.source.ip", "cidr", "192.168.0.0/16"), nil, false},
		{"cidr/list", leafJSON("event.destination.ip", "cidr", []string{"192.168.0.0/16", "10.0.0.0/8"}), nil, true},
		{"cidr/ipv4-mapped value", leafJSON("event.destination.ip", "cidr", "10.1.2.3"), nil, true},
		{"cidr/single IP", leafJSON("node.value", "cidr", "10.1.2.3"), nil, true},
		{"cidr/single IP miss", leafJSON("node.value", "cidr", "10.1.2.9"), nil, false},
		{"cidr/ipv6", leafJSON("node.value", "cidr", "fc00::/7"), &Facts{Nodes: []NodeFacts{{Type: "IP", Value: "fd12::1"}}}, true},
		{"cidr/non-address", leafJSON("event.user.name", "cidr", "0.0.0.0/0"), nil, false},

		// gt, gte, lt, lte
		{"gt/count", leafJSON("incident.artifact_count", "gt", 2), nil, true},
		{"gt/count miss", leafJSON("incident.artifact_count", "gt", 3), nil, false},
		{"gte/count", leafJSON("incident.artifact_count", "gte", 3), nil, true},
		{"gte/count miss", leafJSON("incident.node_count", "gte", 5), nil, false},
		{"lt/count", leafJSON("incident.node_count", "lt", 5), nil, true},
		{"lt/count miss", leafJSON("incident.artifact_count", "lt", 3), nil, false},
		{"lte/count", leafJSON("incident.artifact_count", "lte", 3), nil, true},
		{"lte/count miss", leafJSON("incident.artifact_count", "lte", 2.5), nil, false},
		{"gte/event number", leafJSON("event.destination.port", "gte", 1024), nil, true},
		{"lt/event number miss", leafJSON("event.destination.port", "lt", 1024), nil, false},
		{"lt/numeric string", leafJSON("event.alert.severity", "lt", 3), nil, true},
		{"gt/non-numeric string", leafJSON("event.user.name", "gt", 0), nil, false},
		{"gt/missing", leafJSON("event.nope", "gt", 0), nil, false},
		{"gte/severity by name", leafJSON("observation.severity", "gte", "high"), nil, true},
		{"gt/severity by name miss", leafJSON("observation.severity", "gt", "high"), nil, false},
		{"gt/incident severity", leafJSON("incident.severity", "gt", "medium"), nil, true},
		{"lt/incident severity miss", leafJSON("incident.severity", "lt", "high"), nil, false},
		{"lte/incident severity", leafJSON("incident.severity", "lte", "high"), nil, true},
		{"gte/severity by rank", leafJSON("incident.severity", "gte", 3), nil, true},
		{"gt/severity by rank miss", leafJSON("incident.severity", "gt", 3), nil, false},
		{"gt/unknown severity in facts", leafJSON("incident.severity", "gt", 0), &Facts{Severity: "bogus"}, false},

		// exists
		{"exists", `{"field":"event.user.name","op":"exists"}`, nil, true},
		{"exists/true", leafJSON("event.user.name", "exists", true), nil, true},
		{"exists/null value is true", `{"field":"event.user.name","op":"exists","value":null}`, nil, true},
		{"exists/missing", leafJSON("event.nope", "exists", true), nil, false},
		{"exists/false missing", leafJSON("event.nope", "exists", false), nil, true},
		{"exists/false present", leafJSON("event.user.name", "exists", false), nil, false},
		{"exists/empty array", leafJSON("event.empty.list", "exists", true), nil, false},
		{"exists/null", leafJSON("event.null.field", "exists", true), nil, false},
		{"exists/object", leafJSON("event.source", "exists", true), nil, true},
		{"exists/no observations", leafJSON("observation.type", "exists", true), &Facts{}, false},
		{"exists/no observations false", leafJSON("observation.type", "exists", false), &Facts{}, true},
		{"exists/incident field", leafJSON("incident.node_count", "exists", true), &Facts{}, true},
	})
}

// TestMatchRollupFields: the incident.title, incident.rollup.* and
// incident.raised_by.reason fields of a roll-up, of an incident raised
// from one, and of neither (every op false but exists: false).
func TestMatchRollupFields(t *testing.T) {
	rollup := &Facts{Title: "Suricata: ET SCAN Potential SSH Scan from 4,812 sources",
		Rollup: &RollupFacts{Detector: "suricata_alert", Name: "Suricata: ET SCAN Potential SSH Scan", Sources: 4812, Count: 9120}}
	raised := &Facts{Title: "SSH brute force from 198.51.100.7", RaisedBy: "risk"}
	plain := &Facts{Title: "Port scan from 10.0.0.9"}
	runMatchCases(t, []matchCase{
		{"title/prefix", leafJSON("incident.title", "prefix", "suricata: et scan"), rollup, true},
		{"title/regex", leafJSON("incident.title", "regex", `from [\d,]+ sources$`), rollup, true},
		{"title/regex miss", leafJSON("incident.title", "regex", `from [\d,]+ sources$`), plain, false},
		{"rollup.detector/eq", leafJSON("incident.rollup.detector", "eq", "suricata_alert"), rollup, true},
		{"rollup.detector/ne", leafJSON("incident.rollup.detector", "ne", "suricata_alert"), rollup, false},
		{"rollup.name/eq", leafJSON("incident.rollup.name", "eq", "Suricata: ET SCAN Potential SSH Scan"), rollup, true},
		{"rollup.name/contains", leafJSON("incident.rollup.name", "contains", "ssh scan"), rollup, true},
		{"rollup.sources/gte", leafJSON("incident.rollup.sources", "gte", 1000), rollup, true},
		{"rollup.sources/lt miss", leafJSON("incident.rollup.sources", "lt", 4812), rollup, false},
		{"rollup.sources/eq", leafJSON("incident.rollup.sources", "eq", 4812), rollup, true},
		{"rollup.count/gt", leafJSON("incident.rollup.count", "gt", 9119), rollup, true},
		{"rollup.count/gt miss", leafJSON("incident.rollup.count", "gt", 9120), rollup, false},
		{"rollup/exists", leafJSON("incident.rollup.sources", "exists", true), rollup, true},
		{"rollup/missing", leafJSON("incident.rollup.sources", "exists", true), plain, false},
		{"rollup/missing exists false", leafJSON("incident.rollup.detector", "exists", false), plain, true},
		{"rollup/missing gte", leafJSON("incident.rollup.sources", "gte", 0), plain, false},
		{"rollup/missing ne", leafJSON("incident.rollup.detector", "ne", "port_scan"), plain, false},
		{"raised_by/eq", leafJSON("incident.raised_by.reason", "eq", "risk"), raised, true},
		{"raised_by/in miss", leafJSON("incident.raised_by.reason", "in", []string{"detections"}), raised, false},
		{"raised_by/missing", leafJSON("incident.raised_by.reason", "exists", true), rollup, false},
	})
}

func TestMatchEventShapes(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"nested object", leafJSON("event.destination.ip", "eq", "10.1.2.4"), nil, true},
		{"array of objects", leafJSON("event.dns.answers.data", "eq", "192.0.2.2"), nil, true},
		{"array of objects miss", leafJSON("event.dns.answers.data", "eq", "192.0.2.3"), nil, false},
		{"nested number", leafJSON("event.source.port", "eq", 4444), nil, true},
		{"mixed flat and nested", leafJSON("event.a.b.c", "eq", "x"), &Facts{Artifacts: []ArtifactFacts{{Event: map[string]any{"a.b": map[string]any{"c": "x"}}}}}, true},
		{"[]any values", leafJSON("event.related.ip", "cidr", "10.0.0.0/8"), &Facts{Artifacts: []ArtifactFacts{{Event: map[string]any{"related.ip": []any{"8.8.8.8", "10.9.9.9"}}}}}, true},
		{"int value", leafJSON("event.x", "gt", 1), &Facts{Artifacts: []ArtifactFacts{{Event: map[string]any{"x": 2}}}}, true},
		{"uint8 value", leafJSON("event.x", "eq", 7), &Facts{Artifacts: []ArtifactFacts{{Event: map[string]any{"x": uint8(7)}}}}, true},
		{"bad json.Number is text", leafJSON("event.x", "eq", "abc"), &Facts{Artifacts: []ArtifactFacts{{Event: map[string]any{"x": json.Number("abc")}}}}, true},
		{"nil event", leafJSON("event.x", "exists", false), &Facts{Artifacts: []ArtifactFacts{{Source: "auth"}}}, true},
		{"stringer", leafJSON("event.ip", "cidr", "10.0.0.0/8"), &Facts{Artifacts: []ArtifactFacts{{Event: map[string]any{"ip": netip.MustParseAddr("10.0.0.1")}}}}, true},
	})
}

func TestMatchCollections(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"observation any element", leafJSON("observation.severity", "eq", "medium"), nil, true},
		{"observation no element", leafJSON("observation.severity", "eq", "critical"), nil, false},
		{"observation type", leafJSON("observation.type", "eq", "ssh.bruteforce"), nil, true},
		{"artifact source any", leafJSON("artifact.source", "eq", "firewall"), nil, true},
		{"artifact source none", leafJSON("artifact.source", "eq", "zeek"), nil, false},
		{"node type case-insensitive", leafJSON("node.type", "eq", "host"), nil, true},
		{"node value any", leafJSON("node.value", "eq", "root"), nil, true},
		{"event of the third artifact", leafJSON("event.source.ip", "eq", "198.51.100.9"), nil, true},
		{"none equals via not", `{"not":` + leafJSON("artifact.source", "eq", "zeek") + `}`, nil, true},
		{"none equals via not miss", `{"not":` + leafJSON("artifact.source", "eq", "auth") + `}`, nil, false},
		// Two leaves over a collection are judged separately: the two
		// elements need not be the same one.
		{"all over different elements", `{"all":[` + leafJSON("observation.type", "eq", "ssh.bruteforce") + `,` + leafJSON("observation.severity", "eq", "high") + `]}`, nil, true},
		{"empty collections", leafJSON("node.value", "ne", "x"), &Facts{}, false},
	})
}

func TestMatchComposition(t *testing.T) {
	yes := leafJSON("incident.severity", "eq", "high")
	no := leafJSON("incident.severity", "eq", "low")
	runMatchCases(t, []matchCase{
		{"empty object", `{}`, nil, true},
		{"empty object nil facts", `{}`, &Facts{}, true},
		{"absent", ``, nil, true},
		{"whitespace", " \n", nil, true},
		{"all true", `{"all":[` + yes + `,` + yes + `]}`, nil, true},
		{"all one false", `{"all":[` + yes + `,` + no + `]}`, nil, false},
		{"any one true", `{"any":[` + no + `,` + yes + `]}`, nil, true},
		{"any none", `{"any":[` + no + `,` + no + `]}`, nil, false},
		{"not true", `{"not":` + yes + `}`, nil, false},
		{"not false", `{"not":` + no + `}`, nil, true},
		{"not empty", `{"not":{}}`, nil, false},
		{"all with empty", `{"all":[{},` + yes + `]}`, nil, true},
		{"nested", `{"all":[{"any":[` + no + `,{"not":` + no + `}]},{"not":{"any":[` + no + `]}}]}`, nil, true},
		{"nested false", `{"all":[{"any":[` + no + `,{"not":` + yes + `}]},` + yes + `]}`, nil, false},
		{"realistic", `{"all":[
			{"field":"observation.type","op":"in","value":["ssh.bruteforce","ssh.success_after_bruteforce"]},
			{"field":"event.source.ip","op":"cidr","value":"203.0.113.0/24"},
			{"not":{"field":"event.user.name","op":"in","value":["svc-backup","nagios"]}},
			{"any":[
				{"field":"incident.artifact_count","op":"gte","value":3},
				{"field":"observation.severity","op":"gte","value":"high"}
			]}
		]}`, nil, true},
	})

	t.Run("nil facts", func(t *testing.T) {
		if !mustCompile(t, leafJSON("event.x", "exists", false)).Match(nil) {
			t.Error("exists:false on nil facts = false, want true")
		}
		if mustCompile(t, yes).Match(nil) {
			t.Error("eq on nil facts = true, want false")
		}
	})
	t.Run("nil condition", func(t *testing.T) {
		var c *Condition
		if !c.Match(sampleFacts()) {
			t.Error("nil Condition does not match")
		}
	})
}
