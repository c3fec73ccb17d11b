package search

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Address keys. A dotted IPv4 address typed as a term ("10.0.0.53") is the
// phrase of its four parts, and the parts of the addresses an analyst
// looks for ("10", "0", "53") are among the commonest words of any log: a
// full-text index finds the phrase only by comparing positions in most
// lines (115 ms of CPU at any store size for the newest 10,001 of
// 10.0.0.53, docs/benchmarks.md). So the stores also index, as one key,
// every four consecutive tokens of a line that are each one to three ASCII
// digits ("10.0.0.53"), wherever and however separated they appear: a
// line holds the key of a term exactly when it holds the term's phrase,
// so answering an address term by its key matches what the phrase
// matches (not 10.0.0.530, nor 110.0.0.53; 10-0-0-53 as well).

// AddressParts is how many tokens an address key joins.
const AddressParts = 4

// addressDigits is the most digits of a part of an address key.
const addressDigits = 3

// Address returns the key of t when t is an address term: exactly
// AddressParts tokens, each of one to three ASCII digits, no prefix.
func (t Term) Address() (string, bool) {
	if t.Prefix || len(t.Tokens) != AddressParts {
		return "", false
	}
	for _, tok := range t.Tokens {
		if !addressPart(tok) {
			return "", false
		}
	}
	return strings.Join(t.Tokens, "."), true
}

// AddressesOnly reports whether every term of q, excluded ones too, is an
// address term, and q has one.
func (q *Query) AddressesOnly() bool {
	n := 0
	for _, g := range q.Any {
		for _, t := range g {
			if _, ok := t.Address(); !ok {
				return false
			}
			n++
		}
	}
	for _, t := range q.Not {
		if _, ok := t.Address(); !ok {
			return false
		}
		n++
	}
	return n > 0
}

func addressPart(tok string) bool {
	if len(tok) == 0 || len(tok) > addressDigits {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// AddressKeys returns the distinct address keys of text: for every
// AddressParts consecutive tokens (as Tokens splits text) that are each
// one to three ASCII digits, their join with dots, in order of first
// appearance.
func AddressKeys(text string) []string {
	b := AppendAddressKeys(nil, text)
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), " ")
}

// AppendAddressKeys appends the keys of AddressKeys to dst, separated by
// spaces, and returns it. It reads text once, without splitting it into
// tokens, and allocates only to grow dst.
func AppendAddressKeys(dst []byte, text string) []byte {
	var w AddressKeyWriter
	w.Reset(dst)
	EachToken(text, func(tok string, numeric bool) { dst = w.Token(dst, tok, numeric) })
	return dst
}

// AddressKeyWriter appends the address keys of a text (AddressKeys) to a
// buffer, given the text's tokens in order (EachToken), so that a store
// reading a line's tokens for its own index finds its keys in the same
// pass.
type AddressKeyWriter struct {
	parts [AddressParts]string // the numeric tokens in a row, the newest last
	run   int                  // how many of parts hold such tokens in a row
	first int                  // where the text's keys start in the buffer
	key   [AddressParts*(addressDigits+1) - 1]byte
}

// Reset begins a text whose keys go after dst's end.
func (w *AddressKeyWriter) Reset(dst []byte) {
	w.run, w.first = 0, len(dst)
}

// Token takes the next token of the text (numeric: of ASCII digits only)
// and appends to dst the key it ends, if any and not there yet.
func (w *AddressKeyWriter) Token(dst []byte, tok string, numeric bool) []byte {
	if !numeric || len(tok) > addressDigits {
		w.run = 0
		return dst
	}
	copy(w.parts[:], w.parts[1:])
	w.parts[AddressParts-1] = tok
	if w.run < AddressParts {
		w.run++
	}
	if w.run < AddressParts {
		return dst
	}
	k := w.key[:0]
	for j, p := range w.parts {
		if j > 0 {
			k = append(k, '.')
		}
		k = append(k, p...)
	}
	// Already there? The keys so far, space-separated.
	for rest := dst[w.first:]; len(rest) > 0; {
		var o []byte
		if sp := bytes.IndexByte(rest, ' '); sp >= 0 {
			o, rest = rest[:sp], rest[sp+1:]
		} else {
			o, rest = rest, nil
		}
		if string(o) == string(k) {
			return dst
		}
	}
	if len(dst) > w.first {
		dst = append(dst, ' ')
	}
	return append(dst, k...)
}

// EachToken calls fn with each token of text, in order, as Tokens splits
// it but with its case as written, and whether it is of ASCII digits
// only.
func EachToken(text string, fn func(tok string, numeric bool)) {
	start := -1 // start of the token being read
	numeric := true
	for i := 0; i < len(text); {
		c := text[i]
		size := 1
		word := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if c >= utf8.RuneSelf {
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			word = unicode.IsLetter(r) || unicode.IsDigit(r)
		}
		if word {
			if start < 0 {
				start, numeric = i, true
			}
			if c < '0' || c > '9' {
				numeric = false
			}
		} else if start >= 0 {
			fn(text[start:i], numeric)
			start = -1
		}
		i += size
	}
	if start >= 0 {
		fn(text[start:], numeric)
	}
}
