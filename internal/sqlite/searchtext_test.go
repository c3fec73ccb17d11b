package sqlite_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/evtx"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// windowsArtifacts returns the records of the real recordings of one
// tactic as vigil import sends them, a second apart from t0.
func windowsArtifacts(t *testing.T, org string, t0 time.Time) []*vigil.Artifact {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx", "Lateral Movement", "*.evtx"))
	if len(files) == 0 {
		t.Fatal("no recordings under ../../../shared/datasets/windows/evtx (beside the checkout)")
	}
	var arts []*vigil.Artifact
	for _, f := range files {
		docs, err := evtx.Documents(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			at := t0.Add(time.Duration(len(arts)) * time.Second)
			arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), OrgID: org, Source: "windows", Raw: string(d), Timestamp: at, CreatedAt: at})
		}
	}
	return arts
}

// A Windows event is found by its values, not by its member names
// (parse.SearchText); one stored by a build before migration 0035 (indexed
// by its whole line) is still found by both, and both kinds leave the
// index whole when retention deletes them.
func TestWindowsSearchText(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vigil.db")
	s := openAt(t, path)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	old := windowsArtifacts(t, "o1", t0)
	// As a build before migration 0035 stores them, and leaves the store.
	sqlite.SetWholeBelow(s, math.MaxInt64)
	if err := s.InsertArtifacts(ctx, "o1", old); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE search_text_whole`, `DELETE FROM schema_migrations WHERE name = '0035_search_text.sql'`} {
		if err := sqlite.ExecSQL(ctx, s, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path)
	defer s.Close()
	t1 := old[len(old)-1].Timestamp.Add(time.Hour)
	fresh := windowsArtifacts(t, "o1", t1)
	if err := s.InsertArtifacts(ctx, "o1", fresh); err != nil {
		t.Fatal(err)
	}
	count := func(query string) int {
		t.Helper()
		_, total, _, err := s.SearchArtifactsEstimated(ctx, "o1", vigil.ArtifactFilter{Query: query, Page: vigil.Page{Limit: 10}}, math.MaxInt32)
		if err != nil {
			t.Fatal(err)
		}
		return total
	}
	// What the query language finds in the text indexed: the old lines
	// whole, the new ones' search text.
	indexed := append([]*vigil.Artifact(nil), old...)
	for _, a := range fresh {
		c := *a
		c.Raw = parse.SearchText(a.Raw)
		indexed = append(indexed, &c)
	}
	// Values: a word, an address (its keys), a path written with escaped
	// backslashes in the JSON, a phrase; member names, found only in the
	// lines indexed whole.
	for _, q := range []struct {
		query string
		fresh bool // the new lines hold it
	}{
		{"wmiprvse", true}, {"10.0.2.17", true}, {`"C:\Windows\System32\cmd.exe"`, true}, {`"NT AUTHORITY"`, true},
		{"winlog", false}, {"TargetUserName", false}, {`"event data"`, false},
	} {
		want := storetest.PhraseMatches(t, indexed, vigil.ArtifactFilter{Query: q.query})
		inFresh := storetest.PhraseMatches(t, indexed[len(old):], vigil.ArtifactFilter{Query: q.query})
		if got := count(q.query); got != want || want == 0 || (inFresh > 0) != q.fresh {
			t.Errorf("%s: %d found, want %d (%d of the new lines)", q.query, got, want, inFresh)
		}
	}
	if _, err := s.DropArtifactsBefore(ctx, t1.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Every entry deleted with its artifact: no word is left in the index.
	left, err := sqlite.QueryStrings(ctx, s, `SELECT COUNT(*) FROM artifacts_vocab`)
	if err != nil || left[0] != "0" {
		t.Fatalf("words left in the index after every artifact went: %v, %v", left, err)
	}
	if err := sqlite.ExecSQL(ctx, s, `INSERT INTO artifacts_addr (artifacts_addr) VALUES ('integrity-check')`); err != nil {
		t.Fatal(err)
	}
}
