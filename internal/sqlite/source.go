package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

// Each token of an artifact's entry in the full-text index begins with
// the prefix of its org and source (migration 0036): the id of the pair
// in fts_sources in base 36, then sourceMark ("3_udp" is "udp" in the
// pair 3). So each word has postings per source, and a word within a
// source is one doclist of its matches only: "udp" in the firewall read
// the postings of "udp" in every source and of a word on every firewall
// line (44 % of the store) to intersect them, 364 ms of CPU at 10 M
// artifacts, where it now reads its 12,000 matches (docs/benchmarks.md).
// A query without a source reads each word in the org's sources that hold
// it (sourceQuery), and never another org's postings. The entry ends with
// the prefix alone, one token every artifact of the pair has, so that an
// exclusion alone (-failed) is a full-text query too.
//
// The lines are split into tokens here (indexText), as search.Tokens
// splits queries, and the index's tokenizer keeps sourceMark inside a
// token (tokenchars '_'), so that it splits the text given only at the
// spaces between tokens. The prefix is self-delimiting (its first
// sourceMark ends it), and no line or query can forge one: sourceMark is
// neither letter nor digit, so no token of theirs holds it.

// sourceMark ends every token's prefix.
const sourceMark = '_'

// sourcePrefix is the prefix of the tokens of the pair id.
func sourcePrefix(id int64) string { return strconv.FormatInt(id, 36) + string(sourceMark) }

// indexText is the text artifacts_fts indexes for an artifact whose
// search text is raw and whose pair's prefix is p: each token of raw (a
// run of letters and digits, as search.Tokens splits text) as p and the
// token, then p alone. The index folds case itself.
func indexText(raw, p string) string {
	w := entryWriter{b: make([]byte, 0, 2*len(raw)+len(p)), p: p}
	search.EachToken(raw, func(tok string, _ bool) { w.token(tok) })
	w.end()
	return string(w.b)
}

// entryWriter appends the full-text entry of a text of the pair of prefix
// p to b, given the text's tokens in order.
type entryWriter struct {
	b []byte
	p string
}

func (w *entryWriter) token(tok string) {
	w.b = append(append(append(w.b, w.p...), tok...), ' ')
}

func (w *entryWriter) end() { w.b = append(w.b, w.p...) }

// batchTexts returns the address keys and the full-text entries
// (indexText) of a batch's search texts found, of the pairs of prefixes
// prefix(i), reading each text's tokens once for both (the workers' work,
// before the writer is taken).
func batchTexts(found []string, prefix func(i int) string) (lineKeys, []string) {
	keys := lineKeys{b: make([]byte, 0, 16*len(found)), end: make([]int, len(found))}
	texts := make([]string, len(found))
	var w entryWriter
	var aw search.AddressKeyWriter
	for i, t := range found {
		w.b, w.p = w.b[:0], prefix(i)
		aw.Reset(keys.b)
		search.EachToken(t, func(tok string, numeric bool) {
			keys.b = aw.Token(keys.b, tok, numeric)
			w.token(tok)
		})
		w.end()
		keys.end[i], texts[i] = len(keys.b), string(w.b)
	}
	return keys, texts
}

// sourceKey names an org's source.
type sourceKey struct{ org, source string }

// sourcePrefixes caches fts_sources: the prefix of each org's sources.
// Rows are only ever added, by a transaction of their own before the
// artifacts that need them (ensure), or by the reindex at Open.
type sourcePrefixes struct {
	mu sync.RWMutex
	m  map[sourceKey]string
}

// load reads every pair of fts_sources.
func (c *sourcePrefixes) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT id, org_id, source FROM fts_sources`)
	if err != nil {
		return err
	}
	defer rows.Close()
	m := map[sourceKey]string{}
	for rows.Next() {
		var id int64
		var k sourceKey
		if err := rows.Scan(&id, &k.org, &k.source); err != nil {
			return err
		}
		m[k] = sourcePrefix(id)
	}
	c.mu.Lock()
	c.m = m
	c.mu.Unlock()
	return rows.Err()
}

// get returns the prefix of org's source, false when it has none.
func (c *sourcePrefixes) get(org, source string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.m[sourceKey{org, source}]
	return p, ok
}

// add records a pair's prefix found or made in a transaction that
// committed, or in the reindex of Open (which fails Open when it does
// not commit).
func (c *sourcePrefixes) add(k sourceKey, p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[sourceKey]string{}
	}
	c.m[k] = p
}

// sourcePrefixIn returns the prefix of org's source within tx, making the
// pair when new; the caller adds it to s.prefixes once tx commits.
func sourcePrefixIn(ctx context.Context, tx *wtx, org, source string) (string, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM fts_sources WHERE org_id = ? AND source = ?`, org, source).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRowContext(ctx, `INSERT INTO fts_sources (org_id, source) VALUES (?, ?) RETURNING id`, org, source).Scan(&id)
	}
	if err != nil {
		return "", fmt.Errorf("the source's id: %w", err)
	}
	return sourcePrefix(id), nil
}

// prefixesOf returns the prefix of the source of each of org's
// artifacts arts, by source, making those of new pairs in a transaction
// of their own first: the texts of the full-text index are made before
// the writer is taken for the batch.
func (s *Store) prefixesOf(ctx context.Context, org string, arts []*vigil.Artifact) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, a := range arts {
		if _, done := out[a.Source]; done {
			continue
		}
		p, ok := s.prefixes.get(org, a.Source)
		if !ok {
			missing = append(missing, a.Source)
		}
		out[a.Source] = p
	}
	if len(missing) == 0 {
		return out, nil
	}
	made := map[string]string{}
	err := s.tx(ctx, func(tx *wtx) error {
		for _, src := range missing {
			p, err := sourcePrefixIn(ctx, tx, org, src)
			if err != nil {
				return err
			}
			made[src] = p
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for src, p := range made {
		s.prefixes.add(sourceKey{org, src}, p)
		out[src] = p
	}
	return out, nil
}
