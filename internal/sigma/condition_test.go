package sigma

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/parse"
)

// TestConditionGrammar evaluates conditions over three searches, a, b
// and _c, of which the event matches the ones named in hits.
func TestConditionGrammar(t *testing.T) {
	det := "sel_a:\n    query: a\nsel_b:\n    query: b\n_c:\n    query: c\ncondition: %s"
	cases := []struct {
		cond string
		hits string // which of a, b, c the query value makes true: the value itself
		want bool
	}{
		{"sel_a", "a", true},
		{"sel_a", "b", false},
		{"sel_a or sel_b", "b", true},
		{"sel_a and sel_b", "a", false},
		{"not sel_a", "b", true},
		{"not sel_a", "a", false},
		{"not not sel_a", "a", true},
		{"sel_a or sel_b and sel_a", "a", true},    // and binds tighter: a or (b and a)
		{"(sel_a or sel_b) and sel_a", "b", false}, // parentheses
		{"not sel_a and not sel_b", "c", true},     // not binds tighter than and
		{"not (sel_a or sel_b)", "a", false},
		{"1 of sel_*", "b", true},
		{"1 of sel_*", "c", false},
		{"all of sel_*", "a", false},
		{"1 of them", "b", true},
		{"1 of them", "c", false}, // _c is not part of them
		{"all of them", "a", false},
		{"1 of _*", "c", true},
		{"not 1 of sel_*", "c", true},
		{"1 of sel_* and not _c", "a", true},
		{"SEL_A", "a", false}, // identifiers are case-sensitive: refused below instead
		{"sel_a OR sel_b", "b", true},
		{"sel_a AnD not sel_b", "a", true},
		{"( ( sel_a ) )", "a", true},
	}
	for _, c := range cases {
		t.Run(c.cond+"/"+c.hits, func(t *testing.T) {
			r, err := compileDet(t, fmt.Sprintf(det, c.cond))
			if c.cond == "SEL_A" {
				if err == nil {
					t.Fatal("an unknown identifier in another case compiled")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ev := &Event{Source: "dns", Fields: parse.Event{"dns.question.name": c.hits}}
			if got := r.Match(ev); got != c.want {
				t.Errorf("Match = %v, want %v", got, c.want)
			}
			if got := matchPrepared(r, ev); got != c.want {
				t.Errorf("MatchPrepared = %v, want %v", got, c.want)
			}
		})
	}
}

// TestConditionList: a list of conditions is ORed.
func TestConditionList(t *testing.T) {
	r, err := compileDet(t, "a:\n    query: a\nb:\n    query: b\ncondition:\n    - a\n    - b")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"a", "b"} {
		if !r.Match(&Event{Source: "dns", Fields: parse.Event{"dns.question.name": q}}) {
			t.Errorf("%s: no match", q)
		}
	}
}

func TestAllOfPatternAtLeast(t *testing.T) {
	r, err := compileDet(t, "s1:\n    query|contains: x\ns2:\n    query|contains: y\ns3:\n    query|contains: z\ncondition: 2 of s*")
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]bool{"x": false, "xy": true, "xyz": true, "yz": true} {
		if got := r.Match(&Event{Source: "dns", Fields: parse.Event{"dns.question.name": q}}); got != want {
			t.Errorf("%s: %v, want %v", q, got, want)
		}
	}
}

func TestConditionErrors(t *testing.T) {
	for cond, reason := range map[string]string{
		"":                "empty",
		"a and":           "ends where",
		"a or or b":       `unexpected "or"`,
		"(a":              "missing )",
		"a)":              `unexpected ")"`,
		"a b":             `unexpected "b"`,
		"1 of":            "pattern or them",
		"0 of them":       "quantifier",
		"any of them":     "quantifier",
		"sel*":            "goes after 1 of",
		"a & b":           "unexpected character",
		"a | count() > 3": "correlation rule",
		strings.Repeat("(", 100) + "a" + strings.Repeat(")", 100): "nested",
		strings.Repeat("not ", 100) + "a":                         "nested",
	} {
		if _, err := parseCondition(cond); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("parseCondition(%.40q) = %v, want …%s…", cond, err, reason)
		}
	}
}

func TestPatternMatch(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		want      bool
	}{
		{"them", "selection", true},
		{"them", "_hidden", false},
		{"selection*", "selection_1", true},
		{"selection*", "selection", true},
		{"selection*", "filter", false},
		{"*_main", "selection_main", true},
		{"sel*main", "sel_x_main", true},
		{"sel*main", "sel_x_mainx", false},
		{"a*b*c", "abc", true},
		{"a*a", "a", false},
		{"exact", "exact", true},
	} {
		if got := patternMatch(c.pat, c.name); got != c.want {
			t.Errorf("patternMatch(%q, %q) = %v", c.pat, c.name, got)
		}
	}
}

func FuzzCondition(f *testing.F) {
	for _, s := range []string{"selection", "a and not b", "1 of selection_* and not 1 of filter_*", "all of them",
		"(a or b) and (c or not d)", "not (a)", "2 of x*", "a | count() > 5", "((((a))))", "a and", ")"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCondition(s)
		if err == nil && c == nil {
			t.Fatal("nil condition without an error")
		}
	})
}
