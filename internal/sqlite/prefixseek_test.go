package sqlite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestPrefixWordsBySeek: the words a prefix stands for are found one
// statement each, in the index's view of single postings
// (artifacts_vocab_instances), never in the view that counts every
// posting of each word it lists (artifacts_vocab: 16 ms of CPU for
// "fail*" at 1 M artifacts, ten times that at 10 M); words of no live
// artifact after retention change no total.
func TestPrefixWordsBySeek(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	twoSources(t, s, "o1", 300, t0)
	var arts []*vigil.Artifact
	for i := range 20 {
		at := t0.Add(-time.Duration(i+1) * time.Hour) // older than the rest: retention takes them
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "auth", Raw: fmt.Sprintf("failover%d done", i), Timestamp: at, CreatedAt: at})
	}
	if err := s.InsertArtifacts(ctx, "o1", arts); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want int) {
		t.Helper()
		ran, total, _ := searchStatements(t, s, "o1", vigil.ArtifactFilter{Query: "fail*"}, 0)
		if total != want {
			t.Errorf("%s: fail*: total %d, want %d", when, total, want)
		}
		lookups := 0
		for _, st := range ran {
			if strings.Contains(st.query, "artifacts_vocab ") || strings.HasSuffix(st.query, "artifacts_vocab") {
				t.Errorf("%s: a statement counts every posting of the words:\n%s", when, st.query)
			}
			if strings.Contains(st.query, "artifacts_vocab_instances") {
				lookups++
				if !strings.Contains(st.query, "LIMIT 1") {
					t.Errorf("%s: a look-up of more than one word:\n%s", when, st.query)
				}
			}
		}
		// One a word, and one more for each of the org's two sources
		// (the end of its words; the firewall has none).
		if lookups == 0 || lookups > 23 {
			t.Errorf("%s: %d look-ups of words for 21", when, lookups)
		}
	}
	check("stored", 100+20) // "failed" in every third auth line, and the 20 words
	if _, err := s.DropArtifactsBefore(ctx, t0); err != nil {
		t.Fatal(err)
	}
	check("after retention", 100)
}
