package jsontext

import (
	"encoding/json"
	"testing"
)

// FuzzAppendString: AppendString writes a literal that decodes to what
// json.Marshal's literal of the same string decodes to (invalid UTF-8 as
// U+FFFD), after whatever b held.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x00b\x01\x1f\t\n\r\"\\/", "<b>&amp;</b>", "héllo 😀 \u2028\u2029 \ufffd",
		"caf\xe9", "\xff\xfe", "\xed\xa0\x80", "C:\\Windows\\System32\\cmd.exe /c \"x\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := AppendString([]byte("x"), s)
		if lit[0] != 'x' {
			t.Fatalf("%q: the bytes before were overwritten", s)
		}
		var got, want string
		if err := json.Unmarshal(lit[1:], &got); err != nil {
			t.Fatalf("%q: %s is no JSON string: %v", s, lit[1:], err)
		}
		m, _ := json.Marshal(s)
		if err := json.Unmarshal(m, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q: AppendString's literal decodes to %q, json.Marshal's to %q", s, got, want)
		}
	})
}
