package parse

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validSeeds are bodies at the edges of the grammar.
var validSeeds = []string{`{}`, `[]`, ` {"a" : [1, -0.5e+3, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"]} `, `01`, `-`, `1.`, `1e`,
	`1.5E-7`, `"\x"`, `"\u12g4"`, "\"a\x01\"", "\"caf\xe9\"", `{"a":1,}`, `[1,]`, `{"a"}`, `{1:2}`, `tru`, `nulll`, `"`, ``,
	` `, `[1 2]`, `{"a":1 "b":2}`, `-01`, `0.0e0`, `[[[]]]`, `{"a":{"b":[{}]}}`, "\t\n\r 3 \t"}

// FuzzValidJSON: ValidJSON says what json.Valid says, whatever the bytes.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// TestValidJSON: the seeds, nesting at and past encoding/json's limit,
// and the real Winlogbeat documents as a batch body.
func TestValidJSON(t *testing.T) {
	cases := append([]string(nil), validSeeds...)
	for _, n := range []int{9999, 10000, 10001} {
		cases = append(cases, strings.Repeat("[", n)+strings.Repeat("]", n), strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n))
	}
	files, _ := filepath.Glob("../../../shared/datasets/windows/winlogbeat/*/*/*.json")
	if len(files) == 0 {
		t.Fatal("no Winlogbeat documents under ../shared/datasets")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(b), string(b[:len(b)/2]))
	}
	for _, c := range cases {
		if got, want := ValidJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("ValidJSON(%.80q…) = %v, json.Valid %v", c, got, want)
		}
	}
}
