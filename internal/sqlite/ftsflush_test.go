package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestOneSegmentPerBatch stores batches of real lines and counts the
// full-text segments they made: FTS5 writes what it holds as a new
// segment whenever a statement opens a savepoint in the transaction (any
// statement of many rows does), and every segment written is merged again
// and again as the index grows (a merge rewrites it on each level it
// climbs). One segment per table per batch, not one per chunk of
// insertChunk artifacts.
func TestOneSegmentPerBatch(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "vigil.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	lines := datasetLines(t)
	const batch, batches = 1000, 3
	if len(lines) < batch*batches {
		t.Skipf("%d dataset lines, want %d", len(lines), batch*batches)
	}
	now := time.Now().UTC()
	segments := func(table string) int { return ftsSegments(t, s, table) }
	for b := range batches {
		insertLines(t, s, lines[b*batch:(b+1)*batch], now)
		for _, table := range []string{"artifacts_fts", "artifacts_addr"} {
			if got := segments(table); got != b+1 {
				t.Errorf("after %d batches of %d artifacts, %s has %d segments, want %d", b+1, batch, table, got, b+1)
			}
		}
	}
}

// TestFTSRowsRoundTrip: the texts given to the full-text index through
// JSON (ftsRows) reach it byte for byte as they were, under their rowids
// and in their order; a text JSON would change (a NUL, bytes that are not
// UTF-8) sends its batch down the statement-per-row path instead.
func TestFTSRowsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "vigil.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	texts := []string{
		"plain words 10.0.0.1",
		`quote " and backslash \ and \" both`,
		"tab\there, newline\nthere, return\r, bell\a, escape\x1b[0m, unit\x1f, del\x7f",
		"unicode: Grüße, 日本語, emoji 🙂, combining é",
		`json-looking {"a": [1, "b"]} \u0041 \\n`,
		"",
		" ",
	}
	for _, l := range datasetLines(t) {
		texts = append(texts, l[1])
		if len(texts) == 2000 {
			break
		}
	}
	check := func(texts []string, wantOK bool) {
		t.Helper()
		var in []ftsRow
		for i, x := range texts {
			in = append(in, ftsRow{int64(1000 + 3*i), x})
		}
		rows, ok := ftsObject(in)
		if ok != wantOK {
			t.Fatalf("ftsRows of %q...: ok %v, want %v", texts[len(texts)-1], ok, wantOK)
		}
		if !ok {
			return
		}
		rs, err := s.w.QueryContext(ctx, `SELECT CAST(key AS INTEGER), value, typeof(value) FROM json_each(?)`, rows)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		k := 0
		for rs.Next() {
			var rowid int64
			var got, typ string
			if err := rs.Scan(&rowid, &got, &typ); err != nil {
				t.Fatal(err)
			}
			if k >= len(texts) {
				t.Fatalf("more rows than the %d texts", len(texts))
			}
			if rowid != in[k].rowid || got != texts[k] || typ != "text" {
				t.Errorf("row %d: rowid %d, %s %q; want rowid %d, text %q", k, rowid, typ, got, in[k].rowid, texts[k])
			}
			k++
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		if k != len(texts) {
			t.Errorf("%d rows, want %d", k, len(texts))
		}
	}
	check(texts, true)
	check(append(texts[:3:3], "a NUL \x00 inside"), false)
	check(append(texts[:3:3], "not UTF-8 \xff\xfe"), false)
}

// TestMergerMerges: with the merger, the writer's commits merge nothing
// (a level holds more than automerge's 16 segments until the merger
// runs), and the merger merges them 16 at a time; WriterMerges starts no
// merger (FTS5's automerge, paced by the pages written, merges in the
// commits).
func TestMergerMerges(t *testing.T) {
	ctx := context.Background()
	lines := datasetLines(t)
	const batch, batches = 20, 40
	if len(lines) < batch*batches {
		t.Fatalf("%d dataset lines, want %d", len(lines), batch*batches)
	}
	for _, writer := range []bool{false, true} {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "vigil.db"), Options{WriterMerges: writer})
		if err != nil {
			t.Fatal(err)
		}
		segments := func(table string) int { return ftsSegments(t, s, table) }
		if writer && s.merge != nil {
			t.Fatal("WriterMerges started the merger")
		}
		if !writer {
			// Hold the merger back while the batches are written.
			s.merge.waiting.Add(1)
		}
		now := time.Now().UTC()
		for b := range batches {
			insertLines(t, s, lines[b*batch:(b+1)*batch], now)
		}
		for _, table := range []string{ftsBase, addrBase} {
			n := segments(table)
			if !writer && n != batches {
				t.Errorf("background merges: %d batches left %d segments in %s before the merger ran, want %d", batches, n, table, batches)
			}
		}
		if !writer {
			s.merge.waiting.Add(-1)
			deadline := time.After(time.Minute)
			// 40 segments merged 16 at a time leave 8 on the first level
			// and 2 on the second.
			for segments("artifacts_fts") >= 16 || segments("artifacts_addr") >= 16 {
				s.merge.poke()
				select {
				case <-s.merge.quiet:
				case <-deadline:
					t.Fatalf("the merger left %d and %d segments", segments("artifacts_fts"), segments("artifacts_addr"))
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// ftsSegments counts the segments of the full-text index table.
func ftsSegments(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRowContext(context.Background(), `SELECT count(DISTINCT segid) FROM `+table+`_idx`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// insertLines stores lines (source, raw) as one batch of org "o".
func insertLines(t *testing.T, s *Store, lines [][2]string, now time.Time) {
	t.Helper()
	arts := make([]*vigil.Artifact, len(lines))
	for i, l := range lines {
		arts[i] = &vigil.Artifact{ID: vigil.NewID(), Source: l[0], Raw: l[1], Timestamp: now, CreatedAt: now}
	}
	if err := s.InsertArtifacts(context.Background(), "o", arts); err != nil {
		t.Fatal(err)
	}
}

// TestSealedPartsMerged: a part of the full-text indexes no longer
// written to keeps a segment a batch until the writer idles; then the
// merger merges it into one, and the newest part keeps its levels.
func TestSealedPartsMerged(t *testing.T) {
	ctx := context.Background()
	lines := datasetLines(t)
	const batch, batches = 20, 40
	s, err := Open(ctx, filepath.Join(t.TempDir(), "vigil.db"), Options{FTSPartRows: 300})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.merge.waiting.Add(1) // no merging while the batches are written
	now := time.Now().UTC()
	for b := range batches {
		insertLines(t, s, lines[b*batch:(b+1)*batch], now)
	}
	ps, err := readParts(ctx, s.w)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) < 2 {
		t.Fatalf("%d parts of 300 for %d artifacts", len(ps), batch*batches)
	}
	sealed := ps[:len(ps)-1]
	for _, p := range sealed {
		if n := ftsSegments(t, s, p.table(ftsBase)); n < 10 {
			t.Fatalf("part %d: %d segments before the merger ran, want one a batch", p.n, n)
		}
	}
	s.merge.waiting.Add(-1)
	s.merge.poke()
	deadline := time.Now().Add(time.Minute)
	for _, p := range sealed {
		for _, table := range []string{p.table(ftsBase), p.table(addrBase)} {
			for ftsSegments(t, s, table) > 1 {
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d segments a minute after the writer went idle", table, ftsSegments(t, s, table))
				}
				select {
				case <-s.merge.quiet:
				case <-time.After(time.Second):
				}
			}
		}
	}
	newest := ps[len(ps)-1].table(ftsBase)
	if n := ftsSegments(t, s, newest); n <= 1 {
		t.Errorf("the newest part %s: %d segment, want its levels kept (merged 16 at a time)", newest, n)
	}
	// Merged, a part still holds an entry of each of its artifacts.
	for _, p := range sealed {
		var rows int
		if err := s.w.QueryRowContext(ctx, `SELECT COUNT(DISTINCT doc) FROM `+p.table(vocabBase)).Scan(&rows); err != nil || rows != 300 {
			t.Errorf("part %d after its merge: entries of %d artifacts (%v), want 300", p.n, rows, err)
		}
	}
}
