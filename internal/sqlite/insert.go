package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/jsontext"
)

// insertChunk is how many artifacts one INSERT stores: a statement per
// artifact cost the writer ≈ 5 µs each of database/sql, the driver and
// the statement's start and end, all under the one writer's lock.
const insertChunk = 50

var (
	insertArtifactSQL = `INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at, event, enrichment)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	// The rows inserted come back with their rowids (one already stored
	// is skipped and does not).
	insertArtifactsSQL = `INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at, event, enrichment)
		VALUES ` + valueRows(9, insertChunk) + ` ON CONFLICT (id) DO NOTHING RETURNING rowid, id`
)

// valueRows returns rows of n placeholders each: "(?, ?), (?, ?)".
func valueRows(n, rows int) string {
	return strings.TrimSuffix(strings.Repeat("("+placeholders(n)+"), ", rows), ", ")
}

// artifactWriter stores the artifacts of a batch in a transaction: their
// rows, then their full-text rows in the order of their rowids (FTS5
// flushes what it holds when a rowid is not larger than the last), all in
// one statement. FTS5 also flushes what it holds, as a new segment,
// whenever a later statement of the transaction opens a savepoint, which
// every statement of many rows does: the full-text rows given a chunk at a
// time between the chunks of artifacts made a segment of insertChunk
// artifacts each, twenty a batch, and every segment is read and written
// again at each level of FTS5's merges, one more level for each sixteen
// times the index grows (docs/benchmarks.md, "The full-text index's
// segments").
type artifactWriter struct {
	store  *Store
	tx     *wtx
	org    string
	arts   []*vigil.Artifact
	raws   []any   // the raw column of each (rawCodec.encode)
	rowids []int64 // each one's rowid, 0 where already stored
	args   []any
	texts  []string // what the full-text index takes of each (indexText)
	// prefixes are the prefixes of the batch's sources (source.go).
	prefixes map[string]string
	// wholeBelow: an artifact given a rowid below it is indexed by its
	// whole line (migration 0035, Store.searchText).
	wholeBelow int64
	// parts are the full-text parts the batch was written to (index).
	parts ftsParts
}

// text returns the full-text entry of the i-th artifact, once its rowid is
// known.
func (w *artifactWriter) text(i int) string {
	if w.rowids[i] < w.wholeBelow {
		return indexText(w.arts[i].Raw, w.prefixes[w.arts[i].Source])
	}
	return w.texts[i]
}

// insert writes the rows, insertChunk artifacts a statement, the last
// ones one at a time, and sets rowids; then their full-text rows.
func (w *artifactWriter) insert(ctx context.Context) error {
	for start := 0; start < len(w.arts); start += insertChunk {
		ctx, err := uninterrupted(ctx)
		if err != nil {
			return err
		}
		end := min(start+insertChunk, len(w.arts))
		if end-start == insertChunk {
			err = w.chunk(ctx, start)
		} else {
			err = w.each(ctx, start, end)
		}
		if err != nil {
			return err
		}
	}
	ctx, err := uninterrupted(ctx)
	if err != nil {
		return err
	}
	return w.index(ctx)
}

// row appends the columns of artifact i to w.args.
func (w *artifactWriter) row(i int) {
	a := w.arts[i]
	meta := a.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	w.args = append(w.args, a.ID, w.org, a.Source, w.raws[i], nanos(a.Timestamp), string(meta), nanos(a.CreatedAt),
		nullJSON(a.Event), nullJSON(a.Enrichment))
}

// chunk stores the insertChunk artifacts from start in one statement.
func (w *artifactWriter) chunk(ctx context.Context, start int) error {
	ins, err := w.tx.stmt(ctx, insertArtifactsSQL)
	if err != nil {
		return err
	}
	w.args = w.args[:0]
	for i := start; i < start+insertChunk; i++ {
		w.row(i)
	}
	rows, err := ins.QueryContext(ctx, w.args...)
	if err != nil {
		return err
	}
	type stored struct {
		rowid int64
		id    string
	}
	got := make([]stored, 0, insertChunk)
	for rows.Next() {
		var r stored
		if err := rows.Scan(&r.rowid, &r.id); err != nil {
			rows.Close()
			return err
		}
		got = append(got, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for k, r := range got {
		// All stored: no id twice in the chunk, and the rows come back
		// in the order given (else found by id).
		if len(got) == insertChunk && w.arts[start+k].ID == r.id {
			w.rowids[start+k] = r.rowid
			continue
		}
		// A row skipped (already stored, or its id earlier in the
		// chunk): the row stored of an id is its first in the chunk.
		for i := start; i < start+insertChunk; i++ {
			if w.arts[i].ID == r.id {
				w.rowids[i] = r.rowid
				break
			}
		}
	}
	return nil
}

// each stores the artifacts [start, end) one statement each.
func (w *artifactWriter) each(ctx context.Context, start, end int) error {
	ins, err := w.tx.stmt(ctx, insertArtifactSQL)
	if err != nil {
		return err
	}
	for i := start; i < end; i++ {
		w.args = w.args[:0]
		w.row(i)
		res, err := ins.ExecContext(ctx, w.args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue // already stored
		}
		if w.rowids[i], err = res.LastInsertId(); err != nil {
			return err
		}
	}
	return nil
}

// index writes the full-text rows of the artifacts stored, in the order of
// their rowids (writeFTS), to the parts of the index their rowids lie in,
// the first of them starting a new part when the newest is full.
func (w *artifactWriter) index(ctx context.Context) error {
	order := make([]int, 0, len(w.arts))
	for i := range w.arts {
		if w.rowids[i] != 0 {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return nil
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(w.rowids[a], w.rowids[b]) })
	rows := make([]ftsRow, len(order))
	for k, i := range order {
		rows[k] = ftsRow{w.rowids[i], w.text(i)}
	}
	ps, err := w.store.writeParts(ctx, w.tx, rows[0].rowid, rows[len(rows)-1].rowid)
	if err != nil {
		return err
	}
	w.parts = ps
	return writeFTS(ctx, w.tx, ps, rows)
}

// ftsObject returns rows as a JSON object of rowid → text, or false if a
// text holds what SQLite's JSON would not give back byte for byte: a NUL,
// or bytes that are not UTF-8. Those are rare; their rows take a
// statement each instead.
func ftsObject(rows []ftsRow) (string, bool) {
	n := 2
	for _, r := range rows {
		n += len(r.text) + 32
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for k, r := range rows {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, r.rowid, 10)
		b = append(b, '"', ':')
		if !jsonSafe(r.text) {
			return "", false
		}
		b = jsontext.AppendString(b, r.text)
	}
	b = append(b, '}')
	return string(b), true
}

// jsonSafe reports whether s comes back from SQLite's JSON byte for byte
// when written as a JSON string (jsontext.AppendString): valid UTF-8
// (AppendString would replace other bytes) without a NUL (which ends a
// text read back from JSON).
func jsonSafe(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}
