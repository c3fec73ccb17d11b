package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

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

func TestCompileValid(t *testing.T) {
	deep := leafJSON("incident.severity", "eq", "high")
	for range MaxConditionDepth - 1 {
		deep = `{"not":` + deep + `}`
	}
	wide := make([]string, MaxConditionChildren)
	for i := range wide {
		wide[i] = leafJSON("node.value", "eq", fmt.Sprint(i))
	}
	for _, tc := range []struct{ name, raw string }{
		{"empty", `{}`},
		{"absent", ``},
		{"exists without value", `{"field":"event.user.name","op":"exists"}`},
		{"exists null", `{"field":"event.user.name","op":"exists","value":null}`},
		{"keys in any order", `{"value":"high","op":"eq","field":"incident.severity"}`},
		{"cidr ip", leafJSON("node.value", "cidr", "10.0.0.1")},
		{"cidr ipv6", leafJSON("node.value", "cidr", []string{"fc00::/7", "::1"})},
		{"cidr mapped", leafJSON("node.value", "cidr", "::ffff:10.0.0.0/104")},
		{"severity by rank", leafJSON("observation.severity", "gt", 2)},
		{"severity by name", leafJSON("observation.severity", "lte", "medium")},
		{"event @timestamp", leafJSON("event.@timestamp", "exists", true)},
		{"event ecs event field", leafJSON("event.event.action", "eq", "ssh_login")},
		{"in mixed scalars", leafJSON("event.x", "in", []any{"a", 1, true})},
		{"regex", leafJSON("observation.description", "regex", `(?i)^ET (SCAN|POLICY)\b`)},
		{"max depth", deep},
		{"max children", `{"any":[` + strings.Join(wide, ",") + `]}`},
		{"contains empty string", leafJSON("observation.description", "contains", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustCompile(t, tc.raw)
		})
	}
}

func TestCompileInvalid(t *testing.T) {
	ok := leafJSON("incident.severity", "eq", "high")
	tooDeep := ok
	for range MaxConditionDepth {
		tooDeep = `{"not":` + tooDeep + `}`
	}
	tooDeepPath := "conditions" + strings.Repeat(".not", MaxConditionDepth)
	wide := make([]string, MaxConditionChildren+1)
	for i := range wide {
		wide[i] = ok
	}
	// 100 blocks of {"all": [10 leaves]}: 1 + 100×11 nodes. Node 1001 is
	// leaf 8 of block 90 (1 + 90×11 = 991 nodes before the block).
	blocks := make([]string, 100)
	ten := strings.TrimSuffix(strings.Repeat(ok+",", 10), ",")
	for i := range blocks {
		blocks[i] = `{"all":[` + ten + `]}`
	}
	manyIn := make([]any, MaxConditionValues+1)
	for i := range manyIn {
		manyIn[i] = i
	}

	for _, tc := range []struct {
		name, raw, field, issue string
	}{
		{"null", `null`, "conditions", "must be an object"},
		{"array", `[]`, "conditions", "must be an object"},
		{"string", `"x"`, "conditions", "must be an object"},
		{"number", `1`, "conditions", "must be an object"},
		{"invalid JSON", `{"all":`, "conditions", "must be valid JSON"},
		{"too large", `{"field":"observation.description","op":"contains","value":"` + strings.Repeat("a", MaxConditionsBytes) + `"}`, "conditions", "at most"},
		{"unknown key", `{"foo":1}`, "conditions.foo", "unknown key"},
		{"unknown key nested", `{"any":[{"foo":1}]}`, "conditions.any[0].foo", "unknown key"},
		{"unknown key quoted", `{"a.b":1}`, `conditions["a.b"]`, "unknown key"},
		{"unknown key case", `{"All":[]}`, "conditions.All", "unknown key"},
		{"unknown key in leaf", `{"field":"incident.severity","op":"eq","value":"high","comment":"x"}`, "conditions.comment", "unknown key"},
		{"composite with leaf key", `{"all":[` + ok + `],"field":"incident.severity"}`, "conditions.field", `cannot be combined with "all"`},
		{"leaf with composite key", `{"field":"incident.severity","op":"eq","value":"high","not":{}}`, "conditions.not", `cannot be combined with "field"`},
		{"all and any", `{"all":[` + ok + `],"any":[` + ok + `]}`, "conditions.any", `cannot be combined with "all"`},
		{"duplicate key", `{"field":"incident.severity","op":"eq","op":"ne","value":"high"}`, "conditions.op", "duplicate key"},
		{"all empty", `{"all":[]}`, "conditions.all", "non-empty array"},
		{"any not array", `{"any":{}}`, "conditions.any", "non-empty array"},
		{"all null", `{"all":null}`, "conditions.all", "non-empty array"},
		{"child not object", `{"any":[` + ok + `,1]}`, "conditions.any[1]", "must be an object"},
		{"child null", `{"all":[null]}`, "conditions.all[0]", "must be an object"},
		{"not array", `{"not":[]}`, "conditions.not", "must be an object"},
		{"not null", `{"not":null}`, "conditions.not", "must be an object"},
		{"too many children", `{"all":[` + strings.Join(wide, ",") + `]}`, "conditions.all", "at most 100"},
		{"too deep", tooDeep, tooDeepPath, "nested too deep"},
		{"too many nodes", `{"all":[` + strings.Join(blocks, ",") + `]}`, "conditions.all[90].all[8]", "too many conditions"},
		{"field missing", `{"op":"eq","value":"x"}`, "conditions.field", "required"},
		{"op missing", `{"field":"incident.severity","value":"high"}`, "conditions.op", "required"},
		{"value missing", `{"field":"incident.severity","op":"eq"}`, "conditions.value", "required"},
		{"value missing deep", `{"all":[{"any":[{"not":{"field":"node.type","op":"eq"}}]}]}`, "conditions.all[0].any[0].not.value", "required"},
		{"field not string", `{"field":1,"op":"eq","value":"x"}`, "conditions.field", "must be a string"},
		{"unknown field", leafJSON("incident.foo", "eq", "x"), "conditions.field", `unknown field "incident.foo"; want one of incident.severity,`},
		{"bare event", leafJSON("event.", "eq", "x"), "conditions.field", "invalid event field"},
		{"event upper case", leafJSON("event.Source.IP", "eq", "x"), "conditions.field", "invalid event field"},
		{"event empty segment", leafJSON("event.source..ip", "eq", "x"), "conditions.field", "invalid event field"},
		{"event trailing dot", leafJSON("event.source.", "eq", "x"), "conditions.field", "invalid event field"},
		{"event space", leafJSON("event.source ip", "eq", "x"), "conditions.field", "invalid event field"},
		{"event too long", leafJSON("event."+strings.Repeat("a", 250), "eq", "x"), "conditions.field", "invalid event field"},
		{"unknown op", `{"all":[` + ok + `,{"field":"incident.severity","op":"foo","value":"high"}]}`, "conditions.all[1].op",
			`unknown operator "foo"; want one of eq, ne, in, contains, prefix, suffix, regex, cidr, gt, gte, lt, lte, exists`},
		{"op not string", `{"field":"incident.severity","op":["eq"],"value":"high"}`, "conditions.op", "must be a string"},
		{"op upper case", leafJSON("incident.severity", "EQ", "high"), "conditions.op", "unknown operator"},
		{"eq object", leafJSON("event.x", "eq", map[string]any{}), "conditions.value", "must be a string, number or boolean"},
		{"eq array", leafJSON("event.x", "eq", []any{"a"}), "conditions.value", "must be a string, number or boolean"},
		{"eq null", `{"field":"event.x","op":"eq","value":null}`, "conditions.value", "must be a string, number or boolean"},
		{"ne huge number", `{"field":"event.x","op":"ne","value":1e400}`, "conditions.value", "finite"},
		{"in not array", leafJSON("event.x", "in", "a"), "conditions.value", "non-empty array"},
		{"in empty", leafJSON("event.x", "in", []any{}), "conditions.value", "non-empty array"},
		{"in object element", leafJSON("event.x", "in", []any{"a", map[string]any{}}), "conditions.value[1]", "must be a string, number or boolean"},
		{"in null element", leafJSON("event.x", "in", []any{nil}), "conditions.value[0]", "must be a string, number or boolean"},
		{"in too many", leafJSON("event.x", "in", manyIn), "conditions.value", "at most 1000"},
		{"severity eq unknown", leafJSON("incident.severity", "eq", "urgent"), "conditions.value", `unknown severity "urgent"`},
		{"severity eq upper case", leafJSON("observation.severity", "eq", "High"), "conditions.value", `unknown severity "High"`},
		{"severity eq number", leafJSON("incident.severity", "eq", 3), "conditions.value", "must be a severity name"},
		{"severity in unknown", leafJSON("incident.severity", "in", []any{"high", "bogus"}), "conditions.value[1]", `unknown severity "bogus"`},
		{"severity ne unknown", leafJSON("observation.severity", "ne", ""), "conditions.value", "unknown severity"},
		{"count eq string", leafJSON("incident.artifact_count", "eq", "3"), "conditions.value", "must be a number"},
		{"count in string", leafJSON("incident.node_count", "in", []any{1, "2"}), "conditions.value[1]", "must be a number"},
		{"count contains", leafJSON("incident.node_count", "contains", "1"), "conditions.op", "does not apply"},
		{"count cidr", leafJSON("incident.artifact_count", "cidr", "10.0.0.0/8"), "conditions.op", "does not apply"},
		{"contains number", leafJSON("observation.description", "contains", 1), "conditions.value", "must be a string"},
		{"prefix missing", `{"field":"node.value","op":"prefix"}`, "conditions.value", "required"},
		{"suffix bool", leafJSON("node.value", "suffix", true), "conditions.value", "must be a string"},
		{"regex invalid", leafJSON("observation.description", "regex", "("), "conditions.value", "invalid regular expression"},
		{"regex not RE2", leafJSON("observation.description", "regex", `(?<=a)b`), "conditions.value", "invalid regular expression"},
		{"regex too long", leafJSON("observation.description", "regex", strings.Repeat("a", MaxRegexLen+1)), "conditions.value", "at most 1000 characters"},
		{"regex number", leafJSON("observation.description", "regex", 1), "conditions.value", "must be a string"},
		{"cidr invalid", leafJSON("node.value", "cidr", "10.0.0.0/33"), "conditions.value", `invalid CIDR "10.0.0.0/33"`},
		{"cidr not an address", leafJSON("node.value", "cidr", "db01"), "conditions.value", `invalid CIDR or IP address "db01"`},
		{"cidr list element", leafJSON("node.value", "cidr", []any{"10.0.0.0/8", "nope/8"}), "conditions.value[1]", "invalid CIDR"},
		{"cidr list number", leafJSON("node.value", "cidr", []any{5}), "conditions.value[0]", "must be a string"},
		{"cidr empty list", leafJSON("node.value", "cidr", []any{}), "conditions.value", "non-empty array"},
		{"cidr number", leafJSON("node.value", "cidr", 10), "conditions.value", "CIDR"},
		{"gt string", leafJSON("event.destination.port", "gt", "1024"), "conditions.value", "must be a number"},
		{"gt bool", leafJSON("incident.artifact_count", "gt", true), "conditions.value", "must be a number"},
		{"gt huge", `{"field":"incident.artifact_count","op":"gt","value":-1e999}`, "conditions.value", "finite"},
		{"gt severity unknown", leafJSON("incident.severity", "gt", "urgent"), "conditions.value", `unknown severity "urgent"`},
		{"gt severity bool", leafJSON("observation.severity", "gte", false), "conditions.value", "must be a number or a severity name"},
		{"exists string", leafJSON("event.x", "exists", "yes"), "conditions.value", "must be a boolean"},
		{"exists number", leafJSON("event.x", "exists", 1), "conditions.value", "must be a boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(json.RawMessage(tc.raw))
			if err == nil {
				t.Fatalf("Compile succeeded (%v), want an error at %s", c, tc.field)
			}
			var e *vigil.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not a *vigil.Error", err, err)
			}
			if e.Code != vigil.EINVALID {
				t.Errorf("Code = %q, want %q", e.Code, vigil.EINVALID)
			}
			if len(e.Details) == 0 {
				t.Fatalf("no Details in %v", err)
			}
			if got := e.Details[0].Field; got != tc.field {
				t.Errorf("Details[0].Field = %q, want %q (issue %q)", got, tc.field, e.Details[0].Issue)
			}
			if !strings.Contains(e.Details[0].Issue, tc.issue) {
				t.Errorf("Details[0].Issue = %q, want it to contain %q", e.Details[0].Issue, tc.issue)
			}
		})
	}
}

func TestCompileReportsEveryIssue(t *testing.T) {
	raw := `{"all":[
		{"field":"incident.foo","op":"eq","value":1},
		{"field":"incident.severity","op":"bar","value":"high"},
		{"field":"node.value","op":"cidr","value":["10.0.0.0/8","x"]}
	]}`
	_, err := Compile(json.RawMessage(raw))
	got := vigil.ErrorDetails(err)
	want := []string{"conditions.all[0].field", "conditions.all[1].op", "conditions.all[2].value[1]"}
	if len(got) != len(want) {
		t.Fatalf("Details = %v, want fields %v", got, want)
	}
	for i := range want {
		if got[i].Field != want[i] {
			t.Errorf("Details[%d].Field = %q, want %q", i, got[i].Field, want[i])
		}
	}
	if msg := vigil.ErrorMessage(err); !strings.HasPrefix(msg, "invalid conditions.all[0].field: ") {
		t.Errorf("message = %q", msg)
	}

	// A tree full of mistakes reports a bounded number of them.
	bad := make([]string, MaxConditionChildren)
	for i := range bad {
		bad[i] = `{"foo":1}`
	}
	_, err = Compile(json.RawMessage(`{"any":[` + strings.Join(bad, ",") + `]}`))
	if n := len(vigil.ErrorDetails(err)); n != maxIssues {
		t.Errorf("%d issues reported, want %d", n, maxIssues)
	}
}

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

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"not":{}}`,
		`{"field":"incident.severity","op":"eq","value":"high"}`,
		`{"field":"incident.severity","op":"gte","value":"medium"}`,
		`{"field":"incident.artifact_count","op":"gt","value":2}`,
		`{"field":"observation.description","op":"regex","value":"(?i)ssh"}`,
		`{"field":"event.source.ip","op":"cidr","value":["10.0.0.0/8","::1"]}`,
		`{"field":"event.destination.port","op":"in","value":[22,"3306",true,"a","b","c","d","e","f","g"]}`,
		`{"field":"event.user.name","op":"exists","value":false}`,
		`{"field":"node.value","op":"ne","value":"x"}`,
		`{"all":[{"any":[{"field":"node.type","op":"eq","value":"IP"}]},{"not":{"field":"artifact.source","op":"prefix","value":"su"}}]}`,
		`{"all":[]}`, `{"any":[1]}`, `{"field":"x","op":"y"}`, `{"all":[{}],"any":[{}]}`,
		`{"field":"event.a","op":"regex","value":"("}`, `{"a.b":1,"a.b":2}`,
	} {
		f.Add([]byte(s), "10.0.0.1", int64(3))
	}
	f.Fuzz(func(t *testing.T, raw []byte, s string, n int64) {
		c, err := Compile(raw)
		if err != nil {
			var e *vigil.Error
			if !errors.As(err, &e) || e.Code != vigil.EINVALID || len(e.Details) == 0 {
				t.Fatalf("Compile error %#v is not an invalid_argument with details", err)
			}
			for _, d := range e.Details {
				if !strings.HasPrefix(d.Field, "conditions") || d.Issue == "" {
					t.Fatalf("bad detail %+v", d)
				}
			}
			return
		}
		var decoded any
		if len(raw) > 0 && json.Unmarshal(raw, &decoded) != nil && len(strings.TrimSpace(string(raw))) > 0 {
			t.Fatalf("compiled invalid JSON %q", raw)
		}
		nested := map[string]any{"ip": s, "port": json.Number(s), "list": []any{s, float64(n), nil, map[string]any{"x": s}}}
		facts := []*Facts{
			nil,
			{},
			sampleFacts(),
			{
				Severity:      s,
				ArtifactCount: int(n),
				NodeCount:     -int(n),
				Observations:  []ObservationFacts{{Type: s, Severity: s, Description: s}},
				Artifacts: []ArtifactFacts{
					{Source: s, Event: map[string]any{
						s: s, "source.ip": s, "x": n, "user.name": []string{s, s},
						"destination": nested, "a": nested, "event": nested,
					}},
					{Source: s},
				},
				Nodes: []NodeFacts{{Type: "IP", Value: s}, {Type: s, Value: s}},
			},
		}
		for _, fc := range facts {
			c.Match(fc)
			rs := NewRuleSet([]*vigil.Rule{{ID: "r", Enabled: true, TargetInfrastructure: n%2 == 0, Conditions: raw}})
			rs.Classify(fc, mustPrefixes(t, "10.0.0.0/8"))
		}
	})
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
