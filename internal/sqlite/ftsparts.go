package sqlite

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The full-text indexes are kept in parts of consecutive rowids
// (migration 0038): once the newest part holds partRows artifacts, the
// next batch starts a new one. FTS5 merges an index's segments sixteen at
// a time, so every entry is written once more for each sixteen times its
// index grows: one index of the whole store spent more of each minute on
// merging the fuller it was (the edge mix's third level, from about five
// million artifacts, took the rate down by a fifth for a minute every
// seven: docs/benchmarks.md, session 14). A part stops growing at
// partRows, so an entry is written as often in the thirtieth minute as in
// the first. A search reads the parts its rowids lie in (matches): the
// newest for most windows of time, every part for a query of all time.
const (
	ftsBase   = "artifacts_fts"
	addrBase  = "artifacts_addr"
	vocabBase = "artifacts_vocab_instances"
	// defaultPartRows: at the edge mix's 1,400 artifacts a batch, a part
	// is about 3,000 batches, short of the 4,096 at which a third level's
	// merge begins.
	defaultPartRows = 1 << 22
	// maxParts bounds the parts one statement reads (SQLite allows 500
	// arms to a compound SELECT): beyond it, the newest part grows on.
	maxParts = 400
)

// ftsPart is one part of the full-text indexes: the artifacts of the
// rowids from first to the next part's first.
type ftsPart struct {
	n     int
	first int64
	// dropped: retention emptied the part at once (dropParts), every
	// artifact of its rowids being expired; searches skip it.
	dropped bool
	// merged: no longer written to, the part was merged into one
	// segment (merge.go).
	merged bool
}

// table is the name of the part's table of the index named base.
func (p ftsPart) table(base string) string {
	if p.n == 0 {
		return base
	}
	return base + "_" + strconv.Itoa(p.n)
}

// ftsParts are the parts in the order of their rowids; part 0 first.
type ftsParts []ftsPart

// readParts reads the parts of the full-text indexes.
func readParts(ctx context.Context, q querier) (ftsParts, error) {
	rows, err := q.QueryContext(ctx, `SELECT part, first_rowid, dropped, merged FROM fts_parts ORDER BY first_rowid`)
	if err != nil {
		return nil, fmt.Errorf("full-text parts: %w", err)
	}
	defer rows.Close()
	var ps ftsParts
	for rows.Next() {
		var p ftsPart
		if err := rows.Scan(&p.n, &p.first, &p.dropped, &p.merged); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ps) == 0 || ps[0].first != math.MinInt64 {
		return nil, fmt.Errorf("full-text parts: no part 0")
	}
	return ps, nil
}

// last returns the last rowid of part i.
func (ps ftsParts) last(i int) int64 {
	if i+1 < len(ps) {
		return ps[i+1].first - 1
	}
	return math.MaxInt64
}

// of returns the index of the part holding rowid.
func (ps ftsParts) of(rowid int64) int {
	return sort.Search(len(ps), func(i int) bool { return ps[i].first > rowid }) - 1
}

// runs calls fn for each run of consecutive elements of sorted (rowids,
// ascending) that lie in one part, with that part.
func (ps ftsParts) runs(sorted []int64, fn func(p ftsPart, from, to int) error) error {
	for from := 0; from < len(sorted); {
		i := ps.of(sorted[from])
		last := ps.last(i)
		to := from + sort.Search(len(sorted)-from, func(k int) bool { return sorted[from+k] > last })
		if err := fn(ps[i], from, to); err != nil {
			return err
		}
		from = to
	}
	return nil
}

// span calls fn for each part that holds some of the rowids [lo, hi],
// with the part's rowids among them; whole is true when the part is the
// only one they lie in.
func (ps ftsParts) span(lo, hi int64, fn func(p ftsPart, from, to int64, whole bool) error) error {
	first, last := ps.of(lo), ps.of(hi)
	for i := first; i <= last; i++ {
		if err := fn(ps[i], max(lo, ps[i].first), min(hi, ps.last(i)), first == last); err != nil {
			return err
		}
	}
	return nil
}

// match is the statement selecting the rowids among [lo, hi] of the
// parts of the index base matching expr, and its arguments: for each part
// that holds some of those rowids (and is not dropped), newest first, the
// part's own rowids among them, each part read by its own index (a
// statement of one table, so that it gives its rowids newest first when
// asked to). A part the span does not reach is not named: a statement of
// a part named but not reached still read each of its segments' doclists
// (≈ 1 ms for 55 segments), and bounds given to the parts through a table
// joined or scalar subqueries of one made a statement over a stretch of
// 10,000 rowids 3 to 13 times the cost of that stretch's part alone.
func (ps ftsParts) match(base, expr string, lo, hi int64) (string, []any) {
	var b strings.Builder
	var args []any
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		from, to := max(lo, p.first), min(hi, ps.last(i))
		if p.dropped || from > to {
			continue
		}
		if len(args) > 0 {
			b.WriteString(" UNION ALL ")
		}
		t := p.table(base)
		b.WriteString("SELECT rowid AS r FROM " + t + " WHERE " + t + " MATCH ? AND rowid BETWEEN ? AND ?")
		args = append(args, expr, from, to)
	}
	if len(args) == 0 {
		// No part holds the span: the newest, which has none of it.
		t := ps[len(ps)-1].table(base)
		return "SELECT rowid AS r FROM " + t + " WHERE " + t + " MATCH ? AND rowid BETWEEN ? AND ?", []any{expr, lo, hi}
	}
	return b.String(), args
}

// addPart starts part n+1 of the indexes at the rowid first, within the
// writer's transaction: its tables, made as migrations 0033 and 0036
// made part 0's, merged as startMerger set part 0's.
func (s *Store) addPart(ctx context.Context, tx *wtx, ps ftsParts, first int64) (ftsParts, error) {
	p := ftsPart{n: ps[len(ps)-1].n + 1, first: first}
	fts, addr, vocab := p.table(ftsBase), p.table(addrBase), p.table(vocabBase)
	stmts := []string{
		`CREATE VIRTUAL TABLE ` + fts + ` USING fts5(
			raw,
			content = 'artifacts',
			content_rowid = 'rowid',
			tokenize = "unicode61 remove_diacritics 0 categories 'L* Nd' tokenchars '_'",
			columnsize = 0
		)`,
		`CREATE VIRTUAL TABLE ` + vocab + ` USING fts5vocab(` + fts + `, instance)`,
		`CREATE VIRTUAL TABLE ` + addr + ` USING fts5(
			keys,
			content = '',
			columnsize = 0,
			detail = none,
			tokenize = "ascii tokenchars '.'"
		)`,
	}
	for _, t := range []string{fts, addr} {
		stmts = append(stmts, mergeSettings(t, s.merge != nil)...)
	}
	stmts = append(stmts, fmt.Sprintf(`INSERT INTO fts_parts (part, first_rowid) VALUES (%d, %d)`, p.n, p.first))
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("full-text part %d: %w", p.n, err)
		}
	}
	return append(ps, p), nil
}

// writeParts returns the parts of the indexes a batch of the new rowids
// [first, last] is written to, starting a new part when the newest holds
// partRows rowids or more (the artifacts of part 0 are counted from rowid
// 1). Rowids only go back into older parts' when retention deleted every
// artifact above them: a dropped part they reach is revived (revive).
func (s *Store) writeParts(ctx context.Context, tx *wtx, first, last int64) (ftsParts, error) {
	ps, err := readParts(ctx, tx)
	if err != nil {
		return nil, err
	}
	newest := ps[len(ps)-1]
	if len(ps) < maxParts && first-max(newest.first, 1) >= s.partRows {
		return s.addPart(ctx, tx, ps, first)
	}
	for i := ps.of(first); i <= ps.of(last); i++ {
		if ps[i].dropped {
			if err := s.revive(ctx, tx, ps, i, first); err != nil {
				return nil, err
			}
			ps[i].dropped = false
		}
	}
	return ps, nil
}

// revive indexes again the artifacts part i still holds below the rowid
// first (expired ones retention has not deleted yet; usually none), in
// the part's emptied tables, and takes the part off the dropped.
func (s *Store) revive(ctx context.Context, tx *wtx, ps ftsParts, i int, first int64) error {
	from, to := max(ps[i].first, 0), min(ps.last(i), first-1)
	if from <= to {
		if _, err := s.reindexRows(ctx, tx, from, to); err != nil {
			return fmt.Errorf("full-text part %d: %w", ps[i].n, err)
		}
		if _, err := s.indexAddresses(ctx, tx, from, to); err != nil {
			return fmt.Errorf("full-text part %d: %w", ps[i].n, err)
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE fts_parts SET dropped = 0, merged = 0 WHERE part = ?`, ps[i].n)
	return err
}

// dropParts empties at once every part but the newest whose artifacts
// are all older than t, as no span of a bucket from t's on reaches its
// rowids (spans.go: a bucket's span holds the rowid of every artifact of
// its time): retention then deletes their rows without unindexing each
// (unindex skips a dropped part).
func (s *Store) dropParts(ctx context.Context, tx *wtx, t time.Time) error {
	ps, err := readParts(ctx, tx)
	if err != nil {
		return err
	}
	for i, p := range ps[:len(ps)-1] {
		if p.dropped {
			continue
		}
		var live bool
		err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM artifact_spans WHERE bucket >= ? AND max_rowid >= ? AND min_rowid <= ?)`,
			bucketOf(nanos(t)), p.first, ps.last(i)).Scan(&live)
		if err != nil || live {
			if err != nil {
				return err
			}
			continue
		}
		for _, q := range []string{
			fmt.Sprintf(`INSERT INTO %[1]s (%[1]s) VALUES ('delete-all')`, p.table(ftsBase)),
			fmt.Sprintf(`INSERT INTO %[1]s (%[1]s) VALUES ('delete-all')`, p.table(addrBase)),
			fmt.Sprintf(`UPDATE fts_parts SET dropped = 1 WHERE part = %d`, p.n),
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("full-text part %d: %w", p.n, err)
			}
		}
		s.log.Info("retention emptied a full-text part", "part", p.n, "first_rowid", max(p.first, 0), "last_rowid", ps.last(i))
	}
	return nil
}

// ftsRow is a full-text row: an artifact's rowid and the text indexed.
type ftsRow struct {
	rowid int64
	text  string
}

// writeFTS inserts rows (ascending by rowid) into the full-text index's
// parts: one statement a part from a JSON object of rowid → text, or,
// when a text cannot pass through JSON unchanged (jsonSafe), a statement
// a row (a statement of one row opens no savepoint: FTS5 flushes what it
// holds as a new segment at each savepoint).
func writeFTS(ctx context.Context, tx *wtx, ps ftsParts, rows []ftsRow) error {
	rowids := make([]int64, len(rows))
	for i, r := range rows {
		rowids[i] = r.rowid
	}
	return ps.runs(rowids, func(p ftsPart, from, to int) error {
		t := p.table(ftsBase)
		if obj, ok := ftsObject(rows[from:to]); ok {
			st, err := tx.stmt(ctx, `INSERT INTO `+t+` (rowid, raw) SELECT CAST(key AS INTEGER), value FROM json_each(?)`)
			if err != nil {
				return err
			}
			_, err = st.ExecContext(ctx, obj)
			return err
		}
		st, err := tx.stmt(ctx, `INSERT INTO `+t+` (rowid, raw) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		for _, r := range rows[from:to] {
			if _, err := st.ExecContext(ctx, r.rowid, r.text); err != nil {
				return err
			}
		}
		return nil
	})
}
