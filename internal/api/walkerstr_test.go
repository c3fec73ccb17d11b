package api

import (
	"encoding/json"
	"testing"
)

// FuzzWalkerStr: walker.str ends a string literal where encoding/json
// does, on any bytes after an opening quote: the first quote not escaped,
// or none (refused).
func FuzzWalkerStr(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b"`, `"a\\"b`, `"a\\\"b"`, `"\\\\"`, `"abc\`, `"abc\\`, `"x`, `""`,
		`"{\"winlog\":{\"channel\":\"Security\"},\"path\":\"C:\\\\Windows\"}"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || in[0] != '"' {
			return
		}
		w := walker{b: in}
		lit, ok := w.str()
		// encoding/json's end of the literal: the shortest prefix that
		// is a valid string, where the rest's first quote is unescaped.
		want, wantOK := endOfString(in)
		if ok != wantOK || ok && (string(lit) != string(in[:want]) || w.i != want) {
			t.Fatalf("str(%q) = %q, %v (at %d); want %q, %v", in, lit, ok, w.i, in[:want], wantOK)
		}
		if ok && json.Valid(lit) {
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				t.Fatalf("str(%q) = %q, which encoding/json refuses: %v", in, lit, err)
			}
		}
	})
}

// endOfString returns the length of the string literal in starts with:
// up to the first quote after the opening one that an even run of
// backslashes precedes.
func endOfString(in []byte) (int, bool) {
	for j := 1; j < len(in); j++ {
		if in[j] != '"' {
			continue
		}
		n := 0
		for p := j - 1; p > 0 && in[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
	}
	return 0, false
}
