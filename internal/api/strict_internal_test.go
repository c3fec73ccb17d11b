package api

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// explicitFFFD counts the U+FFFD a literal's content asks for itself.
var explicitFFFD = regexp.MustCompile(`\x{FFFD}|\\u[fF][fF][fF][dD]`)

// FuzzJSONText: jsonText decodes every string literal exactly as
// encoding/json does, and reports an alteration exactly when the result
// holds a U+FFFD that the literal did not ask for.
func FuzzJSONText(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`,
		"\"caf\xe9\"", `"\ufffd"`, "\"\xef\xbf\xbd\"", `"\u0000"`, `"\ud800\ud800\udc00"`, `"\"`, `"\x"`, `"\u12"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		var want string
		if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' || json.Unmarshal(lit, &want) != nil {
			return
		}
		got, altered, ok := jsonText(lit)
		if !ok || got != want {
			t.Fatalf("jsonText(%q) = %q, %v; encoding/json: %q", lit, got, ok, want)
		}
		asked := len(explicitFFFD.FindAll(lit, -1))
		if !utf8.Valid(lit) {
			asked = len(explicitFFFD.FindAll([]byte(strings.ToValidUTF8(string(lit), "")), -1))
		}
		if wantAltered := strings.Count(got, "\uFFFD") > asked; altered != wantAltered {
			t.Fatalf("jsonText(%q) = %q, altered %v, want %v", lit, got, altered, wantAltered)
		}
	})
}

// FuzzCheckKeys: on any body encoding/json takes, checkKeys refuses only a
// repeated name or one in another case, and never panics on any input.
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{`{"status":1}`, `{"status":1,"status":2}`, `{"Status":1}`, `{"a":[{"b":{"c":1,"c":2}}]}`,
		`{"st\u0061tus":1}`, `[1,2,{"x":"y"}]`, `{"status":"a\"b"}`, `{`, `"`, `{"a":}`} {
		f.Add([]byte(s))
	}
	sh := shapeOf(reflect.TypeFor[struct {
		Status *int              `json:"status"`
		Items  []struct{ A int } `json:"items"`
		Meta   json.RawMessage   `json:"meta"`
	}]())
	f.Fuzz(func(t *testing.T, body []byte) {
		issue := checkKeys(body, sh)
		if issue == nil || !json.Valid(body) {
			return
		}
		if issue.Issue != "duplicate key" && !strings.Contains(issue.Issue, "case-sensitive") {
			t.Fatalf("checkKeys(%q) = %+v", body, issue)
		}
	})
}
