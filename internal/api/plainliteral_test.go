package api

import (
	"encoding/json"
	"testing"
)

// FuzzPlainLiteral: a literal plainLiteral takes decodes, as jsonText
// decodes it, unaltered and to the length it gives; one it refuses is one
// jsonText alters.
func FuzzPlainLiteral(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`,
		"\"caf\xe9\"", `"\ufffd"`, `"\u0000"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		if len(lit) < 2 || lit[0] != '"' || !json.Valid(lit) {
			return
		}
		text, altered, ok := jsonText(lit)
		if !ok {
			t.Fatalf("jsonText refused %q", lit)
		}
		n, plain := plainLiteral(lit)
		if plain == altered || plain && n != len(text) {
			t.Fatalf("plainLiteral(%q) = %d, %v; jsonText %q, altered %v", lit, n, plain, text, altered)
		}
	})
}
