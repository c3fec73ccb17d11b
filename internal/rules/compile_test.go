package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

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
		{"roll-up sources contains", leafJSON("incident.rollup.sources", "contains", "1"), "conditions.op", "does not apply"},
		{"roll-up count in string", leafJSON("incident.rollup.count", "in", []any{"many"}), "conditions.value[0]", "must be a number"},
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
	// Every conditions tree the tests of this package compile (those under
	// 8 KiB, one JSON string a line), so that fuzzing starts from each
	// shape, operator and mistake the tests know.
	data, err := os.ReadFile("testdata/conditions.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var s string
		if err := json.Unmarshal(line, &s); err != nil {
			f.Fatalf("testdata/conditions.jsonl:%d: %v", i+1, err)
		}
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
		if sc, err := CompileSignal(raw); err == nil {
			sc.Match(&Facts{Signal: SignalFacts{Detector: s, Key: s, Member: s, SourceIP: s, User: s, Signature: s},
				Artifacts: facts[3].Artifacts[:1], Nodes: facts[3].Nodes})
		}
		for _, fc := range facts {
			c.Match(fc)
			rs := NewRuleSet([]*vigil.Rule{{ID: "r", Enabled: true, TargetInfrastructure: n%2 == 0, Conditions: raw}})
			rs.Classify(fc, mustPrefixes(t, "10.0.0.0/8"))
		}
	})
}
