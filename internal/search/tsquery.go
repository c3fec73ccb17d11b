package search

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PostgreSQL rendering. The PostgreSQL store does not let the server's
// text parser near artifact text or queries: its default parser keeps
// "10.0.0.1" or "evil.example.com" as one token, which would break the
// semantics above. Instead both sides are built here from Tokens, as
// literals of the tsvector and tsquery types, whose input functions take
// each quoted lexeme verbatim (no parser, no dictionary, no stemming).

// Limits of PostgreSQL's tsvector type.
const (
	// MaxLexemeBytes is the longest lexeme PostgreSQL stores; longer
	// tokens are cut to it (on a rune boundary) in vectors and queries
	// alike, so a prefix of such a token still matches.
	MaxLexemeBytes = 2047
	// MaxLexemePos is the highest position a tsvector records; tokens past
	// it all share it, so a phrase that lies entirely beyond it does not
	// match (a line of more than 16383 words).
	MaxLexemePos = 16383
	// MaxLexemePositions is how many positions a lexeme keeps.
	MaxLexemePositions = 256
	// maxVectorBytes keeps a vector below PostgreSQL's limit of 1 MiB of
	// lexeme and position data. Past it, new distinct tokens of a line are
	// no longer indexed: only a pathological 1 MiB line of ~100,000
	// distinct words reaches it.
	maxVectorBytes = 1000000
)

// TSVector returns the text form of the tsvector indexing text: each
// distinct token with its positions (1-based, as PostgreSQL counts them).
// Cast it with ::tsvector.
func TSVector(text string) string {
	toks := Tokens(text)
	if len(toks) == 0 {
		return ""
	}
	// Lexemes in order of first appearance; the kept (lexeme, position)
	// pairs in a flat list, grouped per lexeme when written.
	index := make(map[string]int32, len(toks))
	var (
		lexes      = make([]string, 0, len(toks))
		count      = make([]int32, 0, len(toks)) // positions kept per lexeme
		last       = make([]int32, 0, len(toks)) // last position kept per lexeme
		pairLex    = make([]int32, 0, len(toks))
		pairPos    = make([]int32, 0, len(toks))
		size, outN int
	)
	for i, tok := range toks {
		lex := tsLexeme(tok)
		pos := int32(min(i+1, MaxLexemePos))
		j, ok := index[lex]
		if !ok {
			// Lexeme bytes (aligned to 2), the position count, one position.
			cost := len(lex) + len(lex)%2 + 2 + 2
			if size+cost > maxVectorBytes {
				continue
			}
			size += cost
			j = int32(len(lexes))
			index[lex] = j
			lexes, count, last = append(lexes, lex), append(count, 0), append(last, 0)
			outN += len(lex) + 3
		} else if count[j] >= MaxLexemePositions || last[j] == pos || size+2 > maxVectorBytes {
			continue
		} else {
			size += 2
		}
		count[j]++
		last[j] = pos
		pairLex, pairPos = append(pairLex, j), append(pairPos, pos)
		outN += 6
	}
	// Counting sort of the pairs by lexeme; positions stay ascending.
	start := make([]int32, len(lexes)+1)
	for j, n := range count {
		start[j+1] = start[j] + n
	}
	sorted := make([]int32, len(pairPos))
	next := append([]int32(nil), start[:len(lexes)]...)
	for k, j := range pairLex {
		sorted[next[j]] = pairPos[k]
		next[j]++
	}
	// The address keys (address.go), as lexemes without positions: a key
	// holds dots, which no token does, so none is ever a word's lexeme.
	keys := AppendAddressKeys(nil, text)
	b := make([]byte, 0, outN+len(keys)+len(keys)/4)
	for j, lex := range lexes {
		if j > 0 {
			b = append(b, ' ')
		}
		b = appendLexeme(b, lex)
		for k := start[j]; k < start[j+1]; k++ {
			if k == start[j] {
				b = append(b, ':')
			} else {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(sorted[k]), 10)
		}
	}
	return string(appendKeyLexemes(b, keys, size))
}

// AddressKeysTSVector returns the text form of the tsvector of the
// address keys of text alone, the part of TSVector(text) they are.
func AddressKeysTSVector(text string) string {
	return string(appendKeyLexemes(nil, AppendAddressKeys(nil, text), 0))
}

// appendKeyLexemes appends the space-separated keys to the vector b, as
// lexemes without positions, while the vector's size (size so far) stays
// within maxVectorBytes.
func appendKeyLexemes(b, keys []byte, size int) []byte {
	for len(keys) > 0 {
		k := keys
		if sp := bytes.IndexByte(keys, ' '); sp >= 0 {
			k, keys = keys[:sp], keys[sp+1:]
		} else {
			keys = nil
		}
		// Lexeme bytes (aligned to 2) and its entry.
		if cost := len(k) + len(k)%2 + 4; size+cost <= maxVectorBytes {
			size += cost
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = appendLexeme(b, string(k))
		}
	}
	return b
}

// TSQuery renders q as the text form of a PostgreSQL tsquery, to be bound
// as a parameter and cast with ::tsquery; "" when q is empty. Every token
// is a quoted lexeme, so no user text is ever read as tsquery syntax.
// Phrases use <->, prefixes :*, AND &, OR |, and the excluded terms are
// one !(…) that applies to every alternative; a query of exclusions alone
// is that negation, which matches the rows lacking all of them.
func (q *Query) TSQuery() string { return q.tsQuery(false) }

// TSQueryAddressKeys is TSQuery with each address term (Term.Address) as
// its key's lexeme, which TSVector adds to the vector of each line holding
// the address's phrase: one lexeme of the GIN index instead of the phrase
// of four of the commonest, each match rechecked in its row.
func (q *Query) TSQueryAddressKeys() string { return q.tsQuery(true) }

func (q *Query) tsQuery(keys bool) string {
	term := func(t Term) string {
		if k, ok := t.Address(); ok && keys {
			return string(appendLexeme(nil, k))
		}
		return tsTerm(t)
	}
	var alts []string
	for _, g := range q.Any {
		parts := make([]string, len(g))
		for i, t := range g {
			parts[i] = term(t)
		}
		alts = append(alts, "("+strings.Join(parts, " & ")+")")
	}
	pos := strings.Join(alts, " | ")
	var nots []string
	for _, t := range q.Not {
		nots = append(nots, term(t))
	}
	neg := ""
	if len(nots) > 0 {
		neg = "!(" + strings.Join(nots, " | ") + ")"
	}
	switch {
	case pos != "" && neg != "":
		return "(" + pos + ") & " + neg
	case pos != "":
		return pos
	default:
		return neg
	}
}

// tsTerm renders one word, phrase or prefix.
func tsTerm(t Term) string {
	var b strings.Builder
	if len(t.Tokens) > 1 {
		b.WriteByte('(')
	}
	for i, tok := range t.Tokens {
		if i > 0 {
			b.WriteString(" <-> ")
		}
		b.Write(appendLexeme(nil, tsLexeme(tok)))
		if t.Prefix && i == len(t.Tokens)-1 {
			b.WriteString(":*")
		}
	}
	if len(t.Tokens) > 1 {
		b.WriteByte(')')
	}
	return b.String()
}

// appendLexeme appends lex quoted the way tsvector and tsquery input reads
// it: in single quotes, a quote doubled and a backslash escaped. Tokens
// hold only letters and digits, so this is defence in depth.
func appendLexeme(b []byte, lex string) []byte {
	b = append(b, '\'')
	for i := 0; i < len(lex); i++ {
		switch c := lex[i]; c {
		case '\'':
			b = append(b, "''"...)
		case '\\':
			b = append(b, `\\`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}

// tsLexeme cuts tok to MaxLexemeBytes on a rune boundary.
func tsLexeme(tok string) string {
	if len(tok) <= MaxLexemeBytes {
		return tok
	}
	cut := MaxLexemeBytes
	for cut > 0 && !utf8.RuneStart(tok[cut]) {
		cut--
	}
	return tok[:cut]
}
