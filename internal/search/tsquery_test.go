package search

import (
	"strconv"
	"strings"
	"testing"
)

func TestTSQuery(t *testing.T) {
	for _, tc := range []struct {
		name, query, want string
	}{
		{"empty", "", ""},
		{"blank", "  \t ", ""},
		{"word", "password", "('password')"},
		{"words are ANDed", "password alice", "('password' & 'alice')"},
		{"case folded", "FAILED", "('failed')"},
		{"phrase", `"quick brown"`, "(('quick' <-> 'brown'))"},
		{"IP address is a phrase", "10.0.0.1", "(('10' <-> '0' <-> '0' <-> '1'))"},
		{"domain is a phrase", "evil.example.com", "(('evil' <-> 'example' <-> 'com'))"},
		{"prefix", "pass*", "('pass':*)"},
		{"prefix on the last token of a phrase", "10.0.0.*", "(('10' <-> '0' <-> '0':*))"},
		{"OR", "alice OR bob", "('alice') | ('bob')"},
		{"AND binds tighter than OR", "password alice OR fox", "('password' & 'alice') | ('fox')"},
		{"exclusion", "password -alice", "(('password')) & !('alice')"},
		{"exclusions apply to every alternative", "password OR fox -alice -lazy",
			"(('password') | ('fox')) & !('alice' | 'lazy')"},
		{"exclusion alone", "-password", "!('password')"},
		{"excluded phrase", `fox -"quick brown"`, "(('fox')) & !(('quick' <-> 'brown'))"},
		{"excluded prefix", "-pass*", "!('pass':*)"},
		// Punctuation of the tsquery language in user text is only a
		// separator: it never reaches the rendered query unquoted.
		{"tsquery operators in text", `a&b|c !d <-> (e) f:*`, "(('a' <-> 'b' <-> 'c') & 'd' & 'e' & 'f':*)"},
		{"quotes and backslashes", `it's O\'Brien`, "(('it' <-> 's') & ('o' <-> 'brien'))"},
		{"unicode", "Ünïcödé 日本語", "('ünïcödé' & '日本語')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.query, err)
			}
			if got := q.TSQuery(); got != tc.want {
				t.Errorf("TSQuery(%q)\n got %s\nwant %s", tc.query, got, tc.want)
			}
		})
	}
}

// A token holding tsquery syntax (which Tokens never produces, but a
// Query may be built by hand) stays inside its quotes.
func TestTSQueryQuotesLexemes(t *testing.T) {
	q := &Query{
		Any: [][]Term{{{Tokens: []string{`x' | 'y`}}, {Tokens: []string{`back\`, `sl'ash`}, Prefix: true}}},
		Not: []Term{{Tokens: []string{`')`}}},
	}
	want := `(('x'' | ''y' & ('back\\' <-> 'sl''ash':*))) & !(''')')`
	if got := q.TSQuery(); got != want {
		t.Errorf("TSQuery\n got %s\nwant %s", got, want)
	}
}

func TestTSQueryAddressKeys(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.53":                 `('10.0.0.53')`,
		"10.0.0.53 sshd -10.0.0.54": `(('10.0.0.53' & 'sshd')) & !('10.0.0.54')`,
		"10.0.0.5300 OR 10.0.0.53":  `(('10' <-> '0' <-> '0' <-> '5300')) | ('10.0.0.53')`,
		`"from 10.0.0.53"`:          `(('from' <-> '10' <-> '0' <-> '0' <-> '53'))`,
		"10.0.0.5*":                 `(('10' <-> '0' <-> '0' <-> '5':*))`,
	} {
		q, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.TSQueryAddressKeys(); got != want {
			t.Errorf("%q: TSQueryAddressKeys() = %s, want %s", in, got, want)
		}
	}
}

func TestTSVector(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty", "", ""},
		{"punctuation only", " -- ... ", ""},
		{"positions from 1", "Failed password for root", "'failed':1 'password':2 'for':3 'root':4"},
		{"repeated token keeps every position", "a b a a", "'a':1,3,4 'b':2"},
		{"IP address and domain split, the address's key added", "from 10.0.0.1 to evil.example.com",
			"'from':1 '10':2 '0':3,4 '1':5 'to':6 'evil':7 'example':8 'com':9 '10.0.0.1'"},
		{"a word between numbers breaks a key", "at 12:30:01 from 10.0.0.1",
			"'at':1 '12':2 '30':3 '01':4 'from':5 '10':6 '0':7,8 '1':9 '10.0.0.1'"},
		{"every four short numbers in a row are a key", "12:30:01 10.0.0.1",
			"'12':1 '30':2 '01':3 '10':4 '0':5,6 '1':7 '12.30.01.10' '30.01.10.0' '01.10.0.0' '10.0.0.1'"},
		{"quotes never break out", `it's \"x\"`, "'it':1 's':2 'x':3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TSVector(tc.text); got != tc.want {
				t.Errorf("TSVector(%q)\n got %s\nwant %s", tc.text, got, tc.want)
			}
		})
	}
}

func TestTSVectorLimits(t *testing.T) {
	t.Run("positions clamp at the last one", func(t *testing.T) {
		text := strings.Repeat("w ", MaxLexemePos+10) + "needle"
		got := TSVector(text)
		if !strings.HasSuffix(got, " 'needle':16383") {
			t.Errorf("last token of a long line: ...%s, want 'needle':16383", got[max(0, len(got)-40):])
		}
		// 'w' keeps at most MaxLexemePositions positions.
		w := strings.Fields(got)[0]
		if n := strings.Count(w, ",") + 1; n != MaxLexemePositions {
			t.Errorf("repeated lexeme has %d positions, want %d", n, MaxLexemePositions)
		}
	})
	t.Run("long token is cut on a rune boundary", func(t *testing.T) {
		tok := strings.Repeat("a", MaxLexemeBytes-1) + "é" + "tail"
		got := TSVector(tok)
		want := "'" + strings.Repeat("a", MaxLexemeBytes-1) + "':1"
		if got != want {
			t.Errorf("long token indexed as %d bytes, want the first %d bytes", len(got), MaxLexemeBytes-1)
		}
		// A query prefix of the long token matches the cut lexeme.
		q, err := Parse(strings.Repeat("a", 1000) + "*")
		if err != nil {
			t.Fatal(err)
		}
		if got := q.TSQuery(); got != "('"+strings.Repeat("a", 1000)+"':*)" {
			t.Errorf("prefix query = %.40s…", got)
		}
	})
	t.Run("size stays under the tsvector limit", func(t *testing.T) {
		var b strings.Builder
		for i := 0; b.Len() < 1<<20; i++ {
			b.WriteString("tok" + strings.Repeat("x", i%7) + strconv.Itoa(i) + " ")
		}
		v := TSVector(b.String())
		size := 0
		for _, f := range strings.Fields(v) {
			lex, pos, _ := strings.Cut(f, ":")
			n := len(lex) - 2
			size += n + n%2 + 2 + 2*(strings.Count(pos, ",")+1)
		}
		if size > maxVectorBytes {
			t.Errorf("vector of %d bytes, over %d", size, maxVectorBytes)
		}
	})
}
