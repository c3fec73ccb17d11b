package search

import (
	"slices"
	"strings"
)

// FTS5 renders the positive part of q as an SQLite FTS5 MATCH expression,
// and the excluded terms as a second expression (for a NOT), either of
// which may be "" when absent. Every token is quoted, so no user text is
// ever read as FTS5 syntax.
func (q *Query) FTS5() (match, not string) { return q.FTS5Expanded(nil) }

// FTS5Expanded is FTS5 with the prefix terms whose last token is a key of
// words written as the alternatives of that token it lists: "fail*"
// becomes ("failed" OR "failure"), "quick b*" ("quick bar" OR "quick
// baz"). FTS5 merges a prefix's doclists anew in every statement that
// names it, over the whole index; the words it stands for are found once
// (sqlite's artifacts_vocab) and each read only where a statement looks.
func (q *Query) FTS5Expanded(words map[string][]string) (match, not string) {
	term := func(t Term) string {
		alts := words[t.Tokens[len(t.Tokens)-1]]
		if !t.Prefix || len(alts) == 0 {
			return fts5Term(t)
		}
		out := make([]string, len(alts))
		for i, w := range alts {
			toks := append(slices.Clone(t.Tokens[:len(t.Tokens)-1]), w)
			out[i] = fts5Term(Term{Tokens: toks})
		}
		return "(" + strings.Join(out, " OR ") + ")"
	}
	var alts []string
	for _, g := range q.Any {
		parts := make([]string, len(g))
		for i, t := range g {
			parts[i] = term(t)
		}
		alts = append(alts, "("+strings.Join(parts, " AND ")+")")
	}
	match = strings.Join(alts, " OR ")
	var nots []string
	for _, t := range q.Not {
		nots = append(nots, term(t))
	}
	return match, strings.Join(nots, " OR ")
}

func fts5Term(t Term) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, tok := range t.Tokens {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ReplaceAll(tok, `"`, `""`))
	}
	b.WriteByte('"')
	if t.Prefix {
		b.WriteString(" *")
	}
	return b.String()
}

// FTS5Addresses renders q, all of whose terms are address terms
// (AddressesOnly), as FTS5 expressions over address keys (the positive
// part and the excluded terms, as FTS5 does), for an index of the keys
// AddressKeys returns whose tokenizer keeps a key whole.
func (q *Query) FTS5Addresses() (match, not string) {
	key := func(t Term) string {
		k, _ := t.Address()
		return `"` + k + `"`
	}
	var alts []string
	for _, g := range q.Any {
		parts := make([]string, len(g))
		for i, t := range g {
			parts[i] = key(t)
		}
		alts = append(alts, "("+strings.Join(parts, " AND ")+")")
	}
	var nots []string
	for _, t := range q.Not {
		nots = append(nots, key(t))
	}
	return strings.Join(alts, " OR "), strings.Join(nots, " OR ")
}
