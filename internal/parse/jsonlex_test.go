package parse

import (
	"encoding/json"
	"strings"
	"testing"
)

// lexValid reports whether jsonLexer accepts data as one JSON value.
func lexValid(data []byte) bool {
	l := jsonLexer{b: data}
	if l.peek() == 0 {
		return false
	}
	l.skip()
	return l.end()
}

func TestJSONLexerValidity(t *testing.T) {
	tests := []string{
		`{}`, `[]`, `""`, `0`, `-0.5e+10`, `true`, `null`, ` {"a" : [1, 2.5, "x", {"b":null}], "c":false} `,
		`{"a":"\u00e9\ud83d\ude00\/\\\"\b\f\n\r\t"}`, `[[[[]]]]`, `{"a":{}}`,
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`,
		`01`, `1.`, `.5`, `1e`, `-`, `+1`, `tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, "\"a\tb\"",
		`{"a":1}}`, `[1]]`, `{"a":[}`, `{1:2}`, `"\ud800"`,
	}
	for _, in := range tests {
		t.Run(in, func(t *testing.T) {
			if got, want := lexValid([]byte(in)), json.Valid([]byte(in)); got != want {
				t.Errorf("lexer valid = %v, encoding/json says %v", got, want)
			}
		})
	}
}

func TestJSONLexerDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", jsonMaxDepth+1) + strings.Repeat("]", jsonMaxDepth+1)
	if lexValid([]byte(deep)) {
		t.Error("accepted nesting beyond jsonMaxDepth")
	}
	ok := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	if !lexValid([]byte(ok)) {
		t.Error("rejected 500 levels of nesting")
	}
}

func TestJSONLexerStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"a\/b"`, "a/b"},
		{`"caf\u00e9"`, "café"},
		{`"\ud83d\ude00"`, "😀"},
		{`"\ud83d x"`, "\uFFFD x"},      // lone surrogate
		{"\"\xff\"", "\uFFFD"},          // invalid UTF-8
		{"\"a\\n\xffb\"", "a\n\uFFFDb"}, // invalid UTF-8 after an escape
		{"\"\\u00e9\xc3\"", "é\uFFFD"},  // an escape's UTF-8, then a cut sequence
		{"\"caf\xc3\xa9\"", "café"},     // valid UTF-8 as it is
		{"[\"\xff\",\"a\"]", "a"},       // a string after one with invalid UTF-8
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			l := jsonLexer{b: []byte(tt.in)}
			if l.peek() == '[' {
				l.array()
				n := 0
				l.elem(&n)
				l.skip()
				l.elem(&n)
			}
			if got := l.str(); got != tt.want || l.bad {
				t.Errorf("str = %q (bad %v), want %q", got, l.bad, tt.want)
			}
		})
	}
}

// FuzzJSONLexer checks the lexer's notion of validity against
// encoding/json's on arbitrary input.
func FuzzJSONLexer(f *testing.F) {
	for _, l := range seedLines(f) {
		if len(l) > 0 && l[0] == '{' {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"a":[1,{"b":"\u00e9"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if strings.Count(string(data), "[")+strings.Count(string(data), "{") > jsonMaxDepth {
			return // encoding/json nests deeper than the lexer allows
		}
		if got, want := lexValid(data), json.Valid(data); got != want {
			t.Fatalf("lexer valid = %v, encoding/json %v for %q", got, want, data)
		}
	})
}
