package rules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

// signalFacts is a Suricata alert's signal as a suppression sees it.
func signalFacts() *Facts {
	return &Facts{
		Signal: SignalFacts{Detector: "suricata_alert", Key: "2013504|10.9.0.7", Member: "54.230.202.37",
			SourceIP: "10.9.0.7", Signature: "ET POLICY GNU/Linux APT User-Agent Outbound"},
		Artifacts: []ArtifactFacts{{Source: "suricata", Event: map[string]any{
			"source.ip": "10.9.0.7", "destination.port": int64(80), "rule.id": "2013504", "rule.category": "Not Suspicious Traffic",
		}}},
		Nodes: []NodeFacts{{Type: "IP", Value: "10.9.0.7"}, {Type: "IP", Value: "54.230.202.37"}},
	}
}

func TestCompileSignalFields(t *testing.T) {
	for _, f := range []string{"signal.detector", "signal.key", "signal.member", "signal.source_ip", "signal.user",
		"signal.signature", "artifact.source", "node.type", "node.value", "event.source.ip"} {
		if _, err := CompileSignal(json.RawMessage(leafJSON(f, "exists", true))); err != nil {
			t.Errorf("CompileSignal(%s): %v", f, err)
		}
	}
	// An incident's fields are no signal's, and a signal's no incident's:
	// the 400 names the leaf's field and lists the fields of its kind.
	for _, f := range []string{"incident.severity", "incident.artifact_count", "observation.type", "observation.description"} {
		_, err := CompileSignal(json.RawMessage(`{"all":[` + leafJSON(f, "exists", true) + `]}`))
		d := vigil.ErrorDetails(err)
		if len(d) != 1 || d[0].Field != "conditions.all[0].field" || !strings.Contains(d[0].Issue, "want one of signal.detector") ||
			strings.Contains(d[0].Issue, "incident.node_count") {
			t.Errorf("CompileSignal(%s): %v %+v, want one issue on conditions.all[0].field listing the signal's fields", f, err, d)
		}
	}
	_, err := Compile(json.RawMessage(leafJSON("signal.detector", "eq", "port_scan")))
	if d := vigil.ErrorDetails(err); len(d) != 1 || d[0].Field != "conditions.field" || !strings.Contains(d[0].Issue, "want one of incident.severity") ||
		strings.Contains(d[0].Issue, "signal.key") {
		t.Errorf("Compile(signal.detector): %v %+v, want the rule's fields", err, d)
	}
	// The rest of the language is the rules': the same paths for the
	// same mistakes.
	_, err = CompileSignal(json.RawMessage(`{"any":[{"field":"signal.user","op":"like","value":"x"}]}`))
	if d := vigil.ErrorDetails(err); len(d) != 1 || d[0].Field != "conditions.any[0].op" {
		t.Errorf("bad op: %+v", d)
	}
	if c, err := CompileSignal(json.RawMessage(`{}`)); err != nil || !c.MatchesAll() {
		t.Errorf("CompileSignal({}) = %v, %v; want a condition that matches everything", c, err)
	}
	if c := mustCompileSignal(t, leafJSON("signal.key", "eq", "x")); c.MatchesAll() {
		t.Error("a leaf matches everything")
	}
}

func mustCompileSignal(tb testing.TB, raw string) *Condition {
	tb.Helper()
	c, err := CompileSignal(json.RawMessage(raw))
	if err != nil {
		tb.Fatalf("CompileSignal(%s): %v", raw, err)
	}
	return c
}

func TestMatchSignal(t *testing.T) {
	noUser := signalFacts()
	for _, tc := range []struct {
		name, cond string
		want       bool
	}{
		{"detector", leafJSON("signal.detector", "in", []string{"suricata_alert", "port_scan"}), true},
		{"other detector", leafJSON("signal.detector", "eq", "ssh_bruteforce"), false},
		{"source in our range", leafJSON("signal.source_ip", "cidr", "10.9.0.0/16"), true},
		{"source elsewhere", leafJSON("signal.source_ip", "cidr", "192.168.0.0/16"), false},
		{"signature prefix, any case", leafJSON("signal.signature", "prefix", "et policy"), true},
		{"key", leafJSON("signal.key", "suffix", "|10.9.0.7"), true},
		{"member", leafJSON("signal.member", "eq", "54.230.202.37"), true},
		{"no user: missing", leafJSON("signal.user", "exists", false), true},
		{"no user: ne false", leafJSON("signal.user", "ne", "root"), false},
		{"node", leafJSON("node.value", "eq", "54.230.202.37"), true},
		{"artifact source", leafJSON("artifact.source", "eq", "suricata"), true},
		{"event field, number", leafJSON("event.destination.port", "eq", 80), true},
		{"event category", leafJSON("event.rule.category", "contains", "not suspicious"), true},
		{"combined", `{"all":[` + leafJSON("signal.detector", "eq", "suricata_alert") + `,{"not":` +
			leafJSON("event.destination.port", "in", []int{22, 3389}) + `}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustCompileSignal(t, tc.cond).Match(noUser); got != tc.want {
				t.Errorf("Match(%s) = %v, want %v", tc.cond, got, tc.want)
			}
		})
	}
}
