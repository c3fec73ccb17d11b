package search

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

func TestParse(t *testing.T) {
	tok := func(p bool, s ...string) Term { return Term{Tokens: s, Prefix: p} }
	tests := []struct {
		name  string
		in    string
		want  Query
		match string
		not   string
	}{
		{"empty", "   ", Query{}, "", ""},
		{"word", "sshd", Query{Any: [][]Term{{tok(false, "sshd")}}}, `("sshd")`, ""},
		{"case folded", "SSHD", Query{Any: [][]Term{{tok(false, "sshd")}}}, `("sshd")`, ""},
		{"two words AND", "failed root", Query{Any: [][]Term{{tok(false, "failed"), tok(false, "root")}}}, `("failed" AND "root")`, ""},
		{"ip is a phrase", "203.0.113.7", Query{Any: [][]Term{{tok(false, "203", "0", "113", "7")}}}, `("203 0 113 7")`, ""},
		{"domain is a phrase", "evil.example.com", Query{Any: [][]Term{{tok(false, "evil", "example", "com")}}}, `("evil example com")`, ""},
		{"quoted phrase", `"failed password"`, Query{Any: [][]Term{{tok(false, "failed", "password")}}}, `("failed password")`, ""},
		{"prefix", "pass*", Query{Any: [][]Term{{tok(true, "pass")}}}, `("pass" *)`, ""},
		{"OR", "a OR b", Query{Any: [][]Term{{tok(false, "a")}, {tok(false, "b")}}}, `("a") OR ("b")`, ""},
		{"AND binds tighter", "a b OR c", Query{Any: [][]Term{{tok(false, "a"), tok(false, "b")}, {tok(false, "c")}}}, `("a" AND "b") OR ("c")`, ""},
		{"negation", "sshd -accepted", Query{Any: [][]Term{{tok(false, "sshd")}}, Not: []Term{tok(false, "accepted")}}, `("sshd")`, `"accepted"`},
		{"negation alone", "-accepted", Query{Not: []Term{tok(false, "accepted")}}, "", `"accepted"`},
		{"negated phrase", `-"session opened"`, Query{Not: []Term{tok(false, "session", "opened")}}, "", `"session opened"`},
		{"hyphen inside word", "x-forwarded", Query{Any: [][]Term{{tok(false, "x", "forwarded")}}}, `("x forwarded")`, ""},
		{"lowercase or is a word", "a or b", Query{Any: [][]Term{{tok(false, "a"), tok(false, "or"), tok(false, "b")}}}, `("a" AND "or" AND "b")`, ""},
		{"fts syntax is quoted", `NEAR(a b) col:x`, Query{Any: [][]Term{{tok(false, "near", "a"), tok(false, "b"), tok(false, "col", "x")}}}, `("near a" AND "b" AND "col x")`, ""},
		{"lone punctuation ignored", "a : b", Query{Any: [][]Term{{tok(false, "a"), tok(false, "b")}}}, `("a" AND "b")`, ""},
		{"unicode", "Größe", Query{Any: [][]Term{{tok(false, "größe")}}}, `("größe")`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(*q, tt.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.in, *q, tt.want)
			}
			m, n := q.FTS5()
			if m != tt.match || n != tt.not {
				t.Errorf("FTS5() = %q, %q; want %q, %q", m, n, tt.match, tt.not)
			}
		})
	}
}

func TestCostBounds(t *testing.T) {
	// The most a query may cost is accepted.
	for _, s := range []string{
		`"` + strings.Repeat("a ", MaxPhraseTokens) + `"`,
		strings.Repeat(`"`+strings.Repeat("a ", MaxPhraseTokens)+`" `, MaxQueryCost/MaxPhraseTokens),
		strings.Repeat("a* ", MaxQueryCost/16),
		strings.Repeat("ab* ", MaxQueryCost/8),
		strings.Repeat("abc* ", MaxQueryCost/4),
		strings.Repeat("a OR ", MaxTerms-1) + "a",
		"2001:db8:85a3:0:0:8a2e:370:7334",
	} {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	for _, tt := range []struct {
		t    Term
		cost int
	}{
		{Term{Tokens: []string{"a"}}, 1},
		{Term{Tokens: []string{"203", "0", "113", "7"}}, 4},
		{Term{Tokens: []string{"a"}, Prefix: true}, 16},
		{Term{Tokens: []string{"ab"}, Prefix: true}, 8},
		{Term{Tokens: []string{"abc"}, Prefix: true}, 4},
		{Term{Tokens: []string{"größe"}, Prefix: true}, 4},
		{Term{Tokens: []string{"10", "0", "0", "1"}, Prefix: true}, 3 + 16},
	} {
		if got := tt.t.Cost(); got != tt.cost {
			t.Errorf("%+v.Cost() = %d, want %d", tt.t, got, tt.cost)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in string }{
		{"unterminated quote", `"failed password`},
		{"leading OR", "OR a"},
		{"trailing OR", "a OR"},
		{"double OR", "a OR OR b"},
		{"empty phrase", `""`},
		{"punctuation prefix", "**"},
		{"only punctuation", "!!! :"},
		{"too long", strings.Repeat("a", MaxQueryLen+1)},
		{"too many terms", strings.Repeat("a ", MaxTerms+1)},
		{"phrase of 500 tokens", `"` + strings.Repeat("a ", 500) + `"`},
		{"phrase of 17 tokens", `"` + strings.Repeat("a ", MaxPhraseTokens+1) + `"`},
		{"address of 17 parts", strings.Repeat("1.", MaxPhraseTokens) + "1"},
		{"excluded phrase of 17 tokens", `-"` + strings.Repeat("a ", MaxPhraseTokens+1) + `"`},
		{"cost over the bound", strings.Repeat(`"`+strings.Repeat("a ", MaxPhraseTokens)+`" `, MaxQueryCost/MaxPhraseTokens) + "b"},
		{"short prefixes over the bound", strings.Repeat("a* ", MaxQueryCost/16) + "b"},
		{"excluded terms count", strings.Repeat(`-"`+strings.Repeat("a ", MaxPhraseTokens)+`" `, MaxQueryCost/MaxPhraseTokens) + "-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if vigil.ErrorCode(err) != vigil.EINVALID {
				t.Fatalf("Parse(%q) error = %v, want invalid_argument", tt.in, err)
			}
			if d := vigil.ErrorDetails(err); len(d) == 0 || d[0].Field != "query" {
				t.Fatalf("Parse(%q) details = %v, want field query", tt.in, d)
			}
		})
	}
}

// FuzzParse checks that any input either fails as invalid_argument or
// renders an expression whose every token is inside double quotes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"sshd", `"a b" -c OR d*`, "203.0.113.7", `a"b`, "-", "OR", `""""`, "x* -y*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			if vigil.ErrorCode(err) != vigil.EINVALID {
				t.Fatalf("Parse(%q): unexpected error %v", s, err)
			}
			return
		}
		m, n := q.FTS5()
		for _, expr := range []string{m, n} {
			// Outside quotes only operators, parentheses, spaces and * may appear.
			in := false
			for i := 0; i < len(expr); i++ {
				c := expr[i]
				if c == '"' {
					in = !in
					continue
				}
				if in {
					continue
				}
				if !strings.ContainsRune("() *ANDORT", rune(c)) {
					t.Fatalf("Parse(%q) rendered %q with %q outside quotes", s, expr, c)
				}
			}
			if in {
				t.Fatalf("Parse(%q) rendered unbalanced quotes %q", s, expr)
			}
		}
	})
}
