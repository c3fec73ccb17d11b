package search

import "strings"

// FTS5 renders the positive part of q as an SQLite FTS5 MATCH expression,
// and the excluded terms as a second expression (for a NOT), either of
// which may be "" when absent. Every token is quoted, so no user text is
// ever read as FTS5 syntax.
func (q *Query) FTS5() (match, not string) {
	match, not, _ = q.FTS5With(FTS5Term)
	return match, not
}

// FTS5With is FTS5 with each term as term renders it (FTS5Term, or an
// expression of its own: the alternatives a prefix stands for, the same
// words in each index a query may read): a term rendered "" matches
// nothing, so that its AND-group is left out of match and it out of not.
// none reports that q has groups and every one was left out: nothing
// matches.
func (q *Query) FTS5With(term func(Term) string) (match, not string, none bool) {
	var alts []string
	for _, g := range q.Any {
		parts := make([]string, 0, len(g))
		for _, t := range g {
			r := term(t)
			if r == "" {
				parts = nil
				break
			}
			parts = append(parts, r)
		}
		if parts != nil {
			alts = append(alts, "("+strings.Join(parts, " AND ")+")")
		}
	}
	var nots []string
	for _, t := range q.Not {
		if r := term(t); r != "" {
			nots = append(nots, r)
		}
	}
	return strings.Join(alts, " OR "), strings.Join(nots, " OR "), len(q.Any) > 0 && len(alts) == 0
}

// FTS5Term renders t as an FTS5 phrase, its tokens quoted, a prefix
// marked.
func FTS5Term(t Term) string {
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
