package console

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"

	"github.com/vigil-soc/vigil/internal/rules"
)

// TestConditionsOf: the rows as typed become the rule language's JSON,
// each value read by its operator, and that JSON compiles.
func TestConditionsOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match string
		rows  []condRow
		want  string
	}{
		{"no row", "all", nil, `{}`},
		{"a row without a field is left out", "all", []condRow{{Op: "eq", Value: "x"}}, `{}`},
		{"text", "all", []condRow{{"observation.type", "eq", "auth"}}, `{"all": [{"field": "observation.type", "op": "eq", "value": "auth"}]}`},
		{"a number", "all", []condRow{{"incident.artifact_count", "gte", "20"}}, `{"all": [{"field": "incident.artifact_count", "op": "gte", "value": 20}]}`},
		{"quoted digits stay text", "all", []condRow{{"event.destination.port", "eq", `"22"`}}, `{"all": [{"field": "event.destination.port", "op": "eq", "value": "22"}]}`},
		{"a boolean", "any", []condRow{{"event.tls.established", "eq", "true"}}, `{"any": [{"field": "event.tls.established", "op": "eq", "value": true}]}`},
		{"contains keeps digits as text", "all", []condRow{{"observation.description", "contains", "404"}}, `{"all": [{"field": "observation.description", "op": "contains", "value": "404"}]}`},
		{"a list", "all", []condRow{{"observation.severity", "in", "high, critical"}}, `{"all": [{"field": "observation.severity", "op": "in", "value": ["high", "critical"]}]}`},
		{"a list of numbers", "all", []condRow{{"event.destination.port", "in", "22,2222"}}, `{"all": [{"field": "event.destination.port", "op": "in", "value": [22, 2222]}]}`},
		{"one network", "all", []condRow{{"node.value", "cidr", "10.0.0.0/8"}}, `{"all": [{"field": "node.value", "op": "cidr", "value": "10.0.0.0/8"}]}`},
		{"networks", "all", []condRow{{"node.value", "cidr", "10.0.0.0/8, 192.168.0.0/16"}}, `{"all": [{"field": "node.value", "op": "cidr", "value": ["10.0.0.0/8", "192.168.0.0/16"]}]}`},
		{"exists", "all", []condRow{{"event.user.name", "exists", ""}}, `{"all": [{"field": "event.user.name", "op": "exists"}]}`},
		{"absent", "all", []condRow{{"event.user.name", "exists", "false"}}, `{"all": [{"field": "event.user.name", "op": "exists", "value": false}]}`},
		{"a regex keeps its text", "all", []condRow{{"observation.description", "regex", `^SSH .*\d+`}}, `{"all": [{"field": "observation.description", "op": "regex", "value": "^SSH .*\\d+"}]}`},
		{"two rows, any", "any", []condRow{{"artifact.source", "eq", "suricata"}, {"incident.severity", "gte", "high"}},
			`{"any": [{"field": "artifact.source", "op": "eq", "value": "suricata"}, {"field": "incident.severity", "op": "gte", "value": "high"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := conditionsOf(tc.match, tc.rows)
			if !sameJSON(t, got, tc.want) {
				t.Errorf("conditionsOf = %s, want %s", got, tc.want)
			}
			if _, err := rules.Compile(json.RawMessage(got)); err != nil {
				t.Errorf("%s does not compile: %v", got, err)
			}
			// And back: the form reads what it wrote.
			if f := formOf(got); f.Complex || conditionsOf(f.Match, f.Rows) != got {
				t.Errorf("formOf(%s) = %+v, which writes %s", got, f, conditionsOf(f.Match, f.Rows))
			}
		})
	}
}

// TestFormOf: which conditions the rows can show, and which only the JSON.
func TestFormOf(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       condForm
	}{
		{"empty", ``, condForm{Match: "all"}},
		{"everything", `{}`, condForm{Match: "all"}},
		{"one condition", `{"field": "observation.type", "op": "eq", "value": "auth"}`, condForm{Match: "all", Rows: []condRow{{"observation.type", "eq", "auth"}}}},
		{"any", `{"any": [{"field": "incident.node_count", "op": "gt", "value": 3}, {"field": "event.user.name", "op": "exists", "value": true}]}`,
			condForm{Match: "any", Rows: []condRow{{"incident.node_count", "gt", "3"}, {"event.user.name", "exists", ""}}}},
		{"digits as text", `{"all": [{"field": "event.destination.port", "op": "eq", "value": "22"}]}`, condForm{Match: "all", Rows: []condRow{{"event.destination.port", "eq", `"22"`}}}},
		{"a network in a list of one", `{"all": [{"field": "node.value", "op": "cidr", "value": ["10.0.0.0/8"]}]}`, condForm{Match: "all", Rows: []condRow{{"node.value", "cidr", "10.0.0.0/8"}}}},
		{"nested", `{"all": [{"any": [{"field": "artifact.source", "op": "eq", "value": "auth"}]}]}`, condForm{Match: "all", Complex: true}},
		{"not", `{"not": {"field": "artifact.source", "op": "eq", "value": "auth"}}`, condForm{Match: "all", Complex: true}},
		{"a list item with a comma", `{"all": [{"field": "observation.description", "op": "in", "value": ["a, b"]}]}`, condForm{Match: "all", Complex: true}},
		{"a key the rows cannot hold", `{"all": [{"field": "artifact.source", "op": "eq", "value": "auth", "note": "x"}]}`, condForm{Match: "all", Complex: true}},
		{"an unknown operator", `{"all": [{"field": "observation.type", "op": "equals", "value": "auth"}]}`, condForm{Match: "all", Complex: true}},
		{"not JSON (yet)", `{"all": [`, condForm{Match: "all", Complex: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := formOf(tc.json); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("formOf(%s) = %+v, want %+v", tc.json, got, tc.want)
			}
		})
	}
}

// TestPostedConditions: which of the two editors a form sent without
// script speaks for the rule.
func TestPostedConditions(t *testing.T) {
	shown := conditionsOf("all", []condRow{{"observation.type", "eq", "auth"}})
	rows := func(v url.Values) url.Values {
		v.Set("match", "all")
		v["cond_field"], v["cond_op"], v["cond_value"] = []string{"observation.type"}, []string{"eq"}, []string{"network"}
		return v
	}
	nested := `{"not": {"field": "artifact.source", "op": "eq", "value": "auth"}}`
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"the rows changed", rows(url.Values{"conditions": {shown}, "conditions_shown": {shown}}), `{"all": [{"field": "observation.type", "op": "eq", "value": "network"}]}`},
		{"the JSON changed (sent with CRLF)", rows(url.Values{"conditions": {`{"field": "artifact.source",` + "\r\n" + ` "op": "eq", "value": "dns"}`}, "conditions_shown": {shown}}),
			`{"field": "artifact.source", "op": "eq", "value": "dns"}`},
		{"the JSON as shown, line breaks as CRLF", rows(url.Values{"conditions": {crlf(shown)}, "conditions_shown": {shown}}), `{"all": [{"field": "observation.type", "op": "eq", "value": "network"}]}`},
		{"conditions the rows cannot show", url.Values{"conditions": {nested}, "conditions_shown": {nested}}, nested},
		{"no rows sent", url.Values{"conditions": {shown}, "conditions_shown": {shown}}, shown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := postedConditions(tc.form); !sameJSON(t, got, tc.want) {
				t.Errorf("postedConditions = %s, want %s", got, tc.want)
			}
		})
	}
}

func crlf(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, '\r')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
