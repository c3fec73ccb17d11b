package search

import "strings"

// FTS5 renders the positive part of q as an SQLite FTS5 MATCH expression,
// and the excluded terms as a second expression (for a NOT), either of
// which may be "" when absent. Every token is quoted, so no user text is
// ever read as FTS5 syntax.
func (q *Query) FTS5() (match, not string) {
	var alts []string
	for _, g := range q.Any {
		parts := make([]string, len(g))
		for i, t := range g {
			parts[i] = fts5Term(t)
		}
		alts = append(alts, "("+strings.Join(parts, " AND ")+")")
	}
	match = strings.Join(alts, " OR ")
	var nots []string
	for _, t := range q.Not {
		nots = append(nots, fts5Term(t))
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
