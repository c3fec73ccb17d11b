package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"unicode/utf8"

	"github.com/vigil-soc/vigil/internal/search"
)

// Prefixes of a query are looked up in artifacts_vocab_instances
// (migration 0034) and written as the words they stand for, when these
// are few: FTS5 reads
// a prefix by merging the doclists of all its words over the whole index,
// in each of the several statements of a search, where a word's doclist
// is read only within the rowids a statement bounds it to.
const (
	// minExpandedPrefix: shorter prefixes stand for too many words (and
	// looking them up reads too many doclists) to be written out.
	minExpandedPrefix = 3
	// maxPrefixWords: a prefix of more words stays a prefix.
	maxPrefixWords = 32
)

// prefixWords returns, for each prefix of q of at least
// minExpandedPrefix characters, the words of the index it stands for,
// when there are at most maxPrefixWords of them (others are left out, and
// stay prefixes).
func prefixWords(ctx context.Context, tx *stx, q *search.Query) (map[string][]string, error) {
	var out map[string][]string
	terms := q.Not
	for _, g := range q.Any {
		terms = append(terms, g...)
	}
	for _, t := range terms {
		p := t.Tokens[len(t.Tokens)-1]
		if _, done := out[p]; !t.Prefix || done || utf8.RuneCountInString(p) < minExpandedPrefix {
			continue
		}
		// Every word beginning with p sorts between p and p followed by a
		// byte no UTF-8 text holds; the next word after w sorts at or
		// after w and a NUL (no word holds one). One seek each: the
		// first posting of the first word from there (a bound of ">"
		// would read every posting of w first).
		var words []string
		for from := p; len(words) <= maxPrefixWords; {
			var w string
			err := tx.QueryRowContext(ctx, `SELECT term FROM artifacts_vocab_instances WHERE term >= ? AND term < ? LIMIT 1`, from, p+"\xff").Scan(&w)
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				return nil, err
			}
			words = append(words, w)
			from = w + "\x00"
		}
		if out == nil {
			out = map[string][]string{}
		}
		if len(words) > maxPrefixWords {
			words = nil
		}
		out[p] = words
	}
	return out, nil
}
