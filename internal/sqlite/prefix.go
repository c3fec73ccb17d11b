package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil/internal/search"
)

// A query's terms are written for the index's tokens (source.go): each in
// every pair it may be searched in whose vocabulary holds its words, the
// others left out (a word of one source is not looked for in the
// others). Prefixes are looked up in artifacts_vocab_instances (migration
// 0034) and written as the words they stand for, when these are few:
// FTS5 reads a prefix by merging the doclists of all its words over the
// whole index, in each of the several statements of a search, where a
// word's doclist is read only within the rowids a statement bounds it to.
const (
	// minExpandedPrefix: shorter prefixes stand for too many words (and
	// looking them up reads too many doclists) to be written out.
	minExpandedPrefix = 3
	// maxPrefixWords: a prefix of more words stays a prefix.
	maxPrefixWords = 32
)

// sourceQuery renders q as a full-text query of org's artifacts, of
// source only when not empty: for each pair of the org (or the source)
// the query of its own words, the terms whose words it lacks left out
// (an AND-group with one left out, and the pair itself when every group
// is), and for a query of exclusions only, the pair's own token less
// them; the pairs' queries ORed, as match. A term is so never read in a
// pair where the rest of its group cannot match ("failed" in the
// firewall for "sshd -failed"). With split, the pairs' positive parts
// are ORed as match and their exclusions as not, and a query of
// exclusions only has no match: the shape of a query of address keys
// (FTS5Addresses), which a query of addresses read as phrases takes, so
// that both are counted the same way. none: no artifact of theirs can
// match.
func sourceQuery(ctx context.Context, tx *stx, org, source string, q *search.Query, split bool) (match, not string, none bool, err error) {
	prefixes, err := pairPrefixes(ctx, tx, org, source)
	if err != nil {
		return "", "", true, err
	}
	v := &vocab{ctx: ctx, tx: tx, has: map[string]bool{}}
	var matches, nots []string
	for _, p := range prefixes {
		m, n, none := q.FTS5With(func(t search.Term) string { return v.term(p, t) })
		if v.err != nil {
			return "", "", false, v.err
		}
		switch {
		case none:
		case split:
			if m != "" {
				matches = append(matches, m)
			}
			if n != "" {
				nots = append(nots, n)
			}
		default:
			if len(q.Any) == 0 {
				// Exclusions only: every artifact of the pair but theirs.
				m = search.FTS5Term(search.Term{Tokens: []string{p}})
			}
			if n != "" {
				m = "(" + m + ") NOT (" + n + ")"
			}
			matches = append(matches, m)
		}
	}
	none = len(q.Any) > 0 && len(matches) == 0 || !split && len(matches) == 0
	return orOf(matches), orOf(nots), none, nil
}

// orOf is the FTS5 OR of alternatives, "" when none.
func orOf(alts []string) string {
	switch len(alts) {
	case 0:
		return ""
	case 1:
		return alts[0]
	}
	return "(" + strings.Join(alts, " OR ") + ")"
}

// pairPrefixes returns the prefixes of org's pairs in fts_sources, of
// source only when not empty.
func pairPrefixes(ctx context.Context, tx *stx, org, source string) ([]string, error) {
	q, args := `SELECT id FROM fts_sources WHERE org_id = ? ORDER BY id`, []any{org}
	if source != "" {
		q, args = `SELECT id FROM fts_sources WHERE org_id = ? AND source = ?`, []any{org, source}
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, sourcePrefix(id))
	}
	return out, rows.Err()
}

// vocab looks words up in the index's vocabulary, each once a search.
type vocab struct {
	ctx context.Context
	tx  *stx
	has map[string]bool
	err error // the first error; every look-up after it finds nothing
}

// term renders t for the pair of prefix p, "" when the pair holds none of
// it: a word of t that the pair's vocabulary lacks, a prefix that begins
// none of its words. Words not in ASCII are not looked up (Go's case
// folding may differ from the index's), and so are always rendered.
func (v *vocab) term(p string, t search.Term) string {
	toks := make([]string, len(t.Tokens))
	for i, tok := range t.Tokens {
		toks[i] = p + tok
	}
	last := len(toks) - 1
	for i, tok := range toks {
		if (i < last || !t.Prefix) && ascii(tok[len(p):]) && !v.holds(tok) {
			return ""
		}
	}
	if !t.Prefix || !ascii(toks[last][len(p):]) {
		return search.FTS5Term(search.Term{Tokens: toks, Prefix: t.Prefix})
	}
	n := 0 // whether any word begins with it, for a short prefix
	if utf8.RuneCountInString(toks[last][len(p):]) >= minExpandedPrefix {
		n = maxPrefixWords
	}
	words := v.words(toks[last], n)
	if len(words) == 0 {
		return ""
	}
	if len(words) > n {
		return search.FTS5Term(search.Term{Tokens: toks, Prefix: true})
	}
	alts := make([]string, len(words))
	for i, w := range words {
		alts[i] = search.FTS5Term(search.Term{Tokens: append(toks[:last:last], w)})
	}
	return orOf(alts)
}

// holds reports whether word is in the vocabulary of some part of the
// index.
func (v *vocab) holds(word string) bool {
	if has, ok := v.has[word]; ok || v.err != nil {
		return has
	}
	found := false
	for i := len(v.tx.parts) - 1; i >= 0 && !found; i-- {
		if v.tx.parts[i].dropped {
			continue
		}
		var one int
		err := v.tx.QueryRowContext(v.ctx, `SELECT 1 FROM `+v.tx.parts[i].table(vocabBase)+` WHERE term = ? LIMIT 1`, word).Scan(&one)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			v.err = err
			return false
		}
		found = err == nil
	}
	v.has[word] = found
	return found
}

// words returns the words of the vocabulary (of every part) beginning
// with prefix, up to n+1 of them, in order. Every such word sorts between
// prefix and prefix followed by a byte no UTF-8 text holds; the next word
// after w sorts at or after w and a NUL (no word holds one). One seek
// each: the first posting of the first word from there (a bound of ">"
// would read every posting of w first).
func (v *vocab) words(prefix string, n int) []string {
	var out []string
	for _, p := range v.tx.parts {
		if p.dropped {
			continue
		}
		for from, k := prefix, 0; k <= n && v.err == nil; k++ {
			var w string
			err := v.tx.QueryRowContext(v.ctx, `SELECT term FROM `+p.table(vocabBase)+` WHERE term >= ? AND term < ? LIMIT 1`, from, prefix+"\xff").Scan(&w)
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				v.err = err
				break
			}
			out = append(out, w)
			from = w + "\x00"
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out[:min(len(out), n+1)]
}

// ascii reports whether s is ASCII only.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
