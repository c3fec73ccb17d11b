package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil"
)

// insertChunk is how many artifacts one INSERT stores (and one more
// gives their full-text rows): a statement per artifact cost the writer
// ≈ 5 µs each of database/sql, the driver and the statement's start and
// end, twice an artifact, all under the one writer's lock.
const insertChunk = 50

var (
	insertArtifactSQL = `INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at, event, enrichment)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	// The rows inserted come back with their rowids (one already stored
	// is skipped and does not).
	insertArtifactsSQL = `INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at, event, enrichment)
		VALUES ` + valueRows(9, insertChunk) + ` ON CONFLICT (id) DO NOTHING RETURNING rowid, id`
	insertFTSSQL  = `INSERT INTO artifacts_fts (rowid, raw) VALUES (?, ?)`
	insertFTSsSQL = `INSERT INTO artifacts_fts (rowid, raw) VALUES ` + valueRows(2, insertChunk)
)

// valueRows returns rows of n placeholders each: "(?, ?), (?, ?)".
func valueRows(n, rows int) string {
	return strings.TrimSuffix(strings.Repeat("("+placeholders(n)+"), ", rows), ", ")
}

// artifactWriter stores the artifacts of a batch in a transaction: their
// rows, then their full-text rows in the order of their rowids (FTS5
// flushes what it holds when a rowid is not larger than the last).
type artifactWriter struct {
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
// ones one at a time, and sets rowids.
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
	return nil
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

// chunk stores the insertChunk artifacts from start in two statements.
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
	if len(got) < insertChunk {
		return w.index(ctx, start, start+insertChunk)
	}
	fts, err := w.tx.stmt(ctx, insertFTSsSQL)
	if err != nil {
		return err
	}
	w.args = w.args[:0]
	for i := start; i < start+insertChunk; i++ {
		w.args = append(w.args, w.rowids[i], w.text(i))
	}
	_, err = fts.ExecContext(ctx, w.args...)
	return err
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
	return w.index(ctx, start, end)
}

// index writes the full-text rows of the artifacts [start, end) stored,
// one statement each, in the order of their rowids.
func (w *artifactWriter) index(ctx context.Context, start, end int) error {
	fts, err := w.tx.stmt(ctx, insertFTSSQL)
	if err != nil {
		return err
	}
	order := make([]int, 0, end-start)
	for i := start; i < end; i++ {
		if w.rowids[i] != 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(w.rowids[a], w.rowids[b]) })
	for _, i := range order {
		if _, err := fts.ExecContext(ctx, w.rowids[i], w.text(i)); err != nil {
			return err
		}
	}
	return nil
}
