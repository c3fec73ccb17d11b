package sqlite

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

// TestInsertArtifactsInChunks stores real lines in batches that take
// every path of artifactWriter — whole chunks of insertChunk, the rest
// one at a time, a chunk with artifacts already stored among new ones,
// and a chunk naming one id twice (the first stored) — and checks that
// each stored artifact's full-text and address-key rows are those of its
// own line under its own rowid.
func TestInsertArtifactsInChunks(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "vigil.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var lines [][2]string
	seen := map[string]bool{}
	for _, l := range datasetLines(t) {
		// Distinct lines, each with an address key.
		if !seen[l[1]] && len(search.AppendAddressKeys(nil, l[1])) > 0 {
			seen[l[1]] = true
			lines = append(lines, l)
		}
		if len(lines) == 3*insertChunk {
			break
		}
	}
	if len(lines) < 3*insertChunk {
		t.Fatalf("%d distinct lines with an address, want %d", len(lines), 3*insertChunk)
	}
	now := time.Now().UTC()
	arts := make([]*vigil.Artifact, len(lines))
	for i, l := range lines {
		arts[i] = &vigil.Artifact{ID: vigil.NewID(), Source: l[0], Raw: l[1], Timestamp: now, CreatedAt: now}
	}
	// A chunk and a few more.
	first := arts[:insertChunk+7]
	if err := s.InsertArtifacts(ctx, "o", first); err != nil {
		t.Fatal(err)
	}
	// Again from the middle of the first chunk: stored and new artifacts
	// in one chunk; the next chunk names an id twice, with another line
	// the second time.
	again := slices.Clone(arts[insertChunk/2:])
	twin := *again[insertChunk+5]
	twin.Raw = arts[0].Raw
	again = slices.Insert(again, insertChunk+10, &twin)
	if err := s.InsertArtifacts(ctx, "o", again); err != nil {
		t.Fatal(err)
	}

	rowids := map[string]int64{}
	rows, err := s.r.QueryContext(ctx, `SELECT id, rowid FROM artifacts WHERE org_id = 'o'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var rowid int64
		if err := rows.Scan(&id, &rowid); err != nil {
			t.Fatal(err)
		}
		rowids[id] = rowid
	}
	rows.Close()
	if len(rowids) != len(arts) {
		t.Fatalf("%d artifacts stored, want %d", len(rowids), len(arts))
	}
	words := regexp.MustCompile(`[\p{L}\p{Nd}]+`)
	matches := func(q, table, match string) []int64 {
		t.Helper()
		rows, err := s.r.QueryContext(ctx, `SELECT rowid FROM `+table+` WHERE `+table+` MATCH ?`, match)
		if err != nil {
			t.Fatalf("%s MATCH %s: %v", table, match, err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var r int64
			if err := rows.Scan(&r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	// The phrase of a line's words in the index: each with its source's
	// prefix (source.go).
	phraseOf := func(a *vigil.Artifact) string {
		p, ok := s.prefixes.get("o", a.Source)
		if !ok {
			t.Fatalf("no prefix of source %q", a.Source)
		}
		return `"` + p + strings.Join(words.FindAllString(a.Raw, -1), " "+p) + `"`
	}
	for i, a := range arts {
		rowid := rowids[a.ID]
		phrase := phraseOf(a)
		if got := matches(a.Raw, "artifacts_fts", phrase); !slices.Contains(got, rowid) {
			t.Errorf("artifact %d (rowid %d): its line's words match rowids %v in the full-text index", i, rowid, got)
		}
		key := strings.Fields(string(search.AppendAddressKeys(nil, a.Raw)))[0]
		if got := matches(a.Raw, "artifacts_addr", `"`+key+`"`); !slices.Contains(got, rowid) {
			t.Errorf("artifact %d (rowid %d): its address %s matches rowids %v in the address keys", i, rowid, key, got)
		}
	}
	// The twin's line (arts[0]'s) is indexed under arts[0]'s rowid only.
	phrase := phraseOf(&twin)
	if got := matches(twin.Raw, "artifacts_fts", phrase); slices.Contains(got, rowids[twin.ID]) {
		t.Errorf("the second line given for id %s was indexed under its rowid (%v), not only the first", twin.ID, got)
	}
}
