package api

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
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

// decodeBatchBody decodes body as decode does after checkKeys: the fast
// path when it takes the body (fast true), else json.Decoder.
func decodeBatchBody(body []byte) (b batchBody, fast bool, err error) {
	if json.Valid(body) && b.decodeFast(body) {
		return b, true, nil
	}
	b = batchBody{}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(&b)
	return b, false, err
}

// FuzzBatchBody: on any body checkKeys passes, the fast path reads what
// json.Decoder reads, or leaves the body to it.
func FuzzBatchBody(f *testing.F) {
	for _, s := range []string{`{"artifacts":[{"raw":"a\"b]"},{"raw":"x","metadata":{"k":[1,{"a":"}"}]}}]}`, `{"artifacts":[]}`,
		`{"artifacts":null}`, `{}`, ` { "artifacts" : [ null , 1 , "s" , [ ] ] } `, `{"artifacts":"x"}`, `[]`, `{"artifacts":[1,]}`,
		`{"artifacts":[{}]}x`, `{"\u0061rtifacts":[1]}`} {
		f.Add([]byte(s))
	}
	sh := shapeOf(reflect.TypeFor[*batchBody]())
	f.Fuzz(func(t *testing.T, body []byte) {
		if checkKeys(body, sh) != nil {
			return
		}
		got, fast, err := decodeBatchBody(body)
		if !fast {
			return
		}
		var want batchBody
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("%q: fast path took a body json.Decoder refuses: %v", body, err)
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path %q, json.Decoder %q", body, deref(got.Artifacts), deref(want.Artifacts))
		}
	})
}

func deref(p *[]batchItem) []batchItem {
	if p == nil {
		return nil
	}
	return *p
}

// A batch of real Windows events, as vigil bench and vigil import post
// them, is read by the fast path into what json.Decoder reads.
func TestBatchBodyFastPath(t *testing.T) {
	golden, _ := filepath.Glob("../../../shared/datasets/windows/winlogbeat/*/*/*.json")
	if len(golden) == 0 {
		t.Fatal("no Winlogbeat documents under ../../../shared/datasets/windows/winlogbeat (beside the checkout)")
	}
	type item struct {
		Source   string          `json:"source"`
		Raw      string          `json:"raw"`
		Metadata json.RawMessage `json:"metadata,omitempty"`
	}
	var items []item
	for _, p := range golden {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var docs []json.RawMessage
		if err := json.Unmarshal(b, &docs); err != nil {
			t.Fatal(err)
		}
		for i, d := range docs {
			it := item{Source: "windows", Raw: string(d)}
			if i%2 == 0 {
				it.Metadata = json.RawMessage(`{"file":` + strconv.Quote(filepath.Base(p)) + `}`)
			}
			items = append(items, it)
		}
	}
	body, err := json.MarshalIndent(map[string]any{"artifacts": items}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got, fast, err := decodeBatchBody(body)
	if err != nil || !fast {
		t.Fatalf("fast path not taken (%v)", err)
	}
	var want batchBody
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(*got.Artifacts) != len(items) {
		t.Fatalf("fast path read %d items, json.Decoder %d, or other bytes", len(deref(got.Artifacts)), len(deref(want.Artifacts)))
	}
}
