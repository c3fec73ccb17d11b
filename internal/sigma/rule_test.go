package sigma

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSchemaTestRules: every schema test rule of the specification
// parses; Vigil compiles it or refuses it with the reason a user reads.
func TestSchemaTestRules(t *testing.T) {
	want := map[string]string{ // file → "" (compiles) or the refusal's field and reason
		"rules/rule_1.yml":                 "", // windows application: the Application channel
		"rules/rule_ecs.yml":               "",
		"filter/filter_1.yml":              "", // User is the event's own data item
		"filter/filter_ecs.yml":            "",
		"correlation/event_count.yml":      "", // ComputerName is host.name
		"correlation/event_count_ecs.yml":  "",
		"correlation/value_count.yml":      "", // WorkstationName: the Windows events' data item
		"correlation/temporal.yml":         "",
		"correlation/temporal_ordered.yml": "",
		"correlation/value_sum.yml":        "correlation.type: value_sum is not supported",
		"correlation/value_avg.yml":        "correlation.type: value_avg is not supported",
		"correlation/value_percentile.yml": "correlation.type: value_percentile is not supported",
	}
	files, _ := filepath.Glob("testdata/schema/*/*.yml")
	if len(files) != len(want) {
		t.Errorf("%d schema test rules, the table has %d", len(files), len(want))
	}
	for _, f := range files {
		rel, _ := filepath.Rel("testdata/schema", f)
		t.Run(rel, func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Parse(text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if r.Correlation != nil {
				_, err = CompileCorrelation(r)
			} else {
				_, err = Compile(r)
			}
			w, ok := want[rel]
			switch {
			case !ok:
				t.Errorf("not in the table: %v", err)
			case w == "" && err != nil:
				t.Errorf("refused: %v", err)
			case w != "" && (err == nil || !strings.Contains(err.Error(), w)):
				t.Errorf("err = %v, want …%s…", err, w)
			}
		})
	}
}

// TestParseCorrelation: a correlation section parses into what it says.
func TestParseCorrelation(t *testing.T) {
	text, err := os.ReadFile("testdata/schema/correlation/value_count.yml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Correlation
	if c.Type != "value_count" || c.Field != "User" || c.Timespan.Hours() != 24 || len(c.GroupBy) != 2 ||
		len(c.Condition) != 1 || c.Condition[0] != (Bound{"gte", 100}) {
		t.Errorf("parsed %+v", c)
	}
}

func TestParseErrors(t *testing.T) {
	base := "title: t\nlogsource:\n    product: linux\ndetection:\n    k:\n        - x\n    condition: k\n"
	cases := []struct {
		name, text, field, reason string
	}{
		{"not yaml", "title: [", "", "not YAML"},
		{"not a mapping", "- a\n- b\n", "", "a YAML mapping"},
		{"two documents", base + "---\n" + base, "", "more than one YAML document"},
		{"no title", strings.Replace(base, "title: t\n", "", 1), "title", "required"},
		{"bad id", "id: 123\n" + base, "id", "not a UUID"},
		{"bad level", "level: severe\n" + base, "level", "one of informational"},
		{"bad status", "status: done\n" + base, "status", "one of stable"},
		{"bad tag", "tags:\n    - Attack T1110\n" + base, "tags[0]", "namespace.name"},
		{"bad date", "date: yesterday\n" + base, "date", "YYYY-MM-DD"},
		{"no logsource", "title: t\ndetection:\n    k:\n        - x\n    condition: k\n", "logsource", "required"},
		{"empty logsource", "title: t\nlogsource: {}\ndetection:\n    k:\n        - x\n    condition: k\n", "logsource", "needs a category"},
		{"no detection", "title: t\nlogsource:\n    product: linux\n", "detection", "exactly one of"},
		{"no condition", "title: t\nlogsource:\n    product: linux\ndetection:\n    k:\n        - x\n", "detection.condition", "required"},
		{"bad condition", strings.Replace(base, "condition: k", "condition: k and (", 1), "detection.condition", "ends where"},
		{"empty list", strings.Replace(base, "k:\n        - x", "k: []", 1), "detection.k", "an empty list"},
		{"null in list", "title: t\nlogsource:\n    product: linux\ndetection:\n    s:\n        message:\n            - a\n            - null\n    condition: s\n", "detection.s.message[1]", "null cannot be part"},
		{"bad identifier", strings.Replace(base, "k:\n", "k-1:\n", 1), "detection.k-1", "letters, digits"},
		{"nested map", "title: t\nlogsource:\n    product: linux\ndetection:\n    s:\n        message:\n            a: b\n    condition: s\n", "detection.s.message", "a value is"},
		{"collection", "action: global\n" + base, "action", "not supported"},
		{"two kinds", base + "correlation:\n    type: temporal\n", "detection", "exactly one of"},
		{"correlation type", "title: t\ncorrelation:\n    type: sometimes\n    rules: [a]\n    timespan: 5m\n", "correlation.type", "one of event_count"},
		{"correlation timespan", "title: t\ncorrelation:\n    type: event_count\n    rules: [a]\n    timespan: 5 minutes\n    condition:\n        gte: 5\n", "correlation.timespan", "a number and s, m, h or d"},
		{"correlation timespan too long", "title: t\ncorrelation:\n    type: event_count\n    rules: [a]\n    timespan: 30d\n    condition:\n        gte: 5\n", "correlation.timespan", "at most"},
		{"correlation no condition", "title: t\ncorrelation:\n    type: event_count\n    rules: [a]\n    timespan: 5m\n", "correlation.condition", "required"},
		{"correlation bad criterion", "title: t\ncorrelation:\n    type: event_count\n    rules: [a]\n    timespan: 5m\n    condition:\n        about: 5\n", "correlation.condition.about", "unknown criterion"},
		{"value_count needs field", "title: t\ncorrelation:\n    type: value_count\n    rules: [a]\n    timespan: 5m\n    condition:\n        gte: 5\n", "correlation.condition.field", "required"},
		{"filter needs rules", "title: t\nlogsource:\n    product: linux\nfilter:\n    s:\n        message: x\n    condition: s\n", "filter.rules", "required"},
		{"too large", "title: t\ndescription: " + strings.Repeat("x", MaxRuleBytes) + "\n", "", "bytes, at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text))
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Field != c.field || !strings.Contains(e.Reason, c.reason) {
				t.Errorf("err = %q / %q, want %q / …%q…", e.Field, e.Reason, c.field, c.reason)
			}
		})
	}
}

// TestJSONForm: the JSON form of a rule is the same rule.
func TestJSONForm(t *testing.T) {
	r, err := Parse([]byte(`{"title": "t", "logsource": {"category": "dns"}, "detection": {"s": {"query|endswith": [".onion", ".i2p"]}, "condition": "s"}, "level": "high"}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Level != "high" || len(c.Fields) != 1 || c.Fields[0] != "dns.question.name" {
		t.Errorf("rule %+v fields %v", r, c.Fields)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/schema/*/*.yml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("title: t\nlogsource:\n    category: dns\ndetection:\n    s:\n        query|base64offset|contains: x\n        src_ip|cidr: 10.0.0.0/8\n    k:\n        - '*a?b\\\\*'\n    condition: 1 of s* or not k\n"))
	f.Add([]byte("title: t\nlogsource:\n    product: linux\ndetection:\n    k:\n        '|all': [a, b]\n    w:\n        CommandLine|windash|contains: ' -a /b'\n    condition: all of them\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		r, err := Parse(text)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is no *Error: %v", err, err)
			}
			return
		}
		if r.Detection != nil || r.Filter != nil {
			c, err := Compile(r)
			if err == nil {
				c.Match(&Event{Source: "dns", Raw: string(text)})
			}
		} else {
			_, _ = CompileCorrelation(r)
		}
	})
}

// TestCorrelationThreshold: a correlation fires when its count reaches a
// lower bound; an upper bound is refused with why.
func TestCorrelationThreshold(t *testing.T) {
	for cond, want := range map[string]string{
		"gte: 5": "5", "gt: 5": "6", "gt: 4.5": "5", "gte: 4.5": "5",
		"lt: 5":                 "correlation.condition: Vigil fires a correlation when its count reaches a bound",
		"gt: 1\n        lte: 9": "correlation.condition: Vigil fires",
		"gte: 0":                "correlation.condition.gte: a bound between 1",
	} {
		r, err := Parse([]byte("title: t\ncorrelation:\n    type: event_count\n    rules: [a]\n    group-by: [source.ip]\n    timespan: 5m\n    condition:\n        " + cond + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		c, err := CompileCorrelation(r)
		switch {
		case err != nil && !strings.Contains(err.Error(), want):
			t.Errorf("%s: err %v, want …%s…", cond, err, want)
		case err == nil && strconv.Itoa(c.Threshold) != want:
			t.Errorf("%s: threshold %d, want %s", cond, c.Threshold, want)
		}
	}
}

// TestTemporalOrderedCompile: temporal_ordered fires when all its rules
// matched in order; a lower bound or a rule named twice is refused.
func TestTemporalOrderedCompile(t *testing.T) {
	for _, tc := range []struct{ rules, cond, want string }{
		{"[a, b, c]", "", "3"},
		{"[a, b, c]", "\n    condition:\n        gte: 3", "3"},
		{"[a, b, c]", "\n    condition:\n        gte: 2", "correlation.condition.gte: temporal_ordered fires when all 3 of its rules matched in order"},
		{"[a, b, a]", "", `correlation.rules[2]: "a" is named twice`},
	} {
		r, err := Parse([]byte("title: t\ncorrelation:\n    type: temporal_ordered\n    rules: " + tc.rules + "\n    group-by: [source.ip]\n    timespan: 5m" + tc.cond + "\n"))
		if err != nil {
			t.Fatalf("%s %s: %v", tc.rules, tc.cond, err)
		}
		c, err := CompileCorrelation(r)
		switch {
		case err != nil && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s %s: err %v, want …%s…", tc.rules, tc.cond, err, tc.want)
		case err == nil && strconv.Itoa(c.Threshold) != tc.want:
			t.Errorf("%s %s: threshold %d, want %s", tc.rules, tc.cond, c.Threshold, tc.want)
		}
	}
}
