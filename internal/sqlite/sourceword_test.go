package sqlite_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// sourceWordOf is the word that stands for org's artifacts of source in
// the full-text index (migration 0034).
func sourceWordOf(org, source string) string {
	return "ꙮ" + hex.EncodeToString([]byte(org)) + "x" + hex.EncodeToString([]byte(source))
}

// wantWithin counts the artifacts of arts of source whose line holds
// word and not notWord (when not empty).
func wantWithin(arts []*vigil.Artifact, source, word, notWord string) int {
	n := 0
	for _, a := range arts {
		if a.Source == source && (word == "" || strings.Contains(a.Raw, word)) && (notWord == "" || !strings.Contains(a.Raw, notWord)) {
			n++
		}
	}
	return n
}

// TestSourceWordPlans: a query within a source is one full-text query of
// the query's terms and the source's word, every full-text statement of
// the search names that word, and none walks the source's time index
// beyond the page's own time bound: before, a term frequent in other
// sources and rare in this one read every match's row, or walked the
// source's time index entry by entry (8 s of CPU for "udp" in the
// firewall at 10 M artifacts).
func TestSourceWordPlans(t *testing.T) {
	s := open(t)
	sqlite.SetSearchPlan(s, 1, 100) // "large" is 100 artifacts here
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 600, t0)
	twoSources(t, s, "o2", 100, t0)
	for _, c := range []struct{ query, source, word, not string }{
		{"udp", "firewall", "udp", ""},
		{"sshd", "firewall", "sshd", ""}, // none there, frequent in auth
		{"root -failed", "auth", "root", "failed"},
		{"-failed", "auth", "", "failed"},
	} {
		want := wantWithin(arts, c.source, c.word, c.not)
		for _, exactUpTo := range []int{0, 10000} {
			f := vigil.ArtifactFilter{Query: c.query, Source: c.source, Page: vigil.Page{Limit: 20}}
			ran, total, estimated := searchStatements(t, s, "o1", f, exactUpTo)
			if total != want || estimated {
				t.Errorf("%q in %s, exact up to %d: total %d (estimated %v), want %d", c.query, c.source, exactUpTo, total, estimated, want)
			}
			word := sourceWordOf("o1", c.source)
			for _, st := range ran {
				if strings.Contains(st.query, " MATCH ?") && !strings.Contains(fmt.Sprint(st.args), word) {
					t.Errorf("%q in %s: a full-text statement without the source's word:\n%s\n%v", c.query, c.source, st.query, st.args)
				}
				if strings.Contains(st.plan, "artifacts_org_source_ts") && !strings.Contains(st.plan, "ts>?") {
					t.Errorf("%q in %s: a statement walks the source's time index:\n%s\n%s", c.query, c.source, st.query, st.plan)
				}
			}
		}
	}
}

// TestSourceWordMigration: a store whose full-text index has no source
// words (before migration 0034) gets them at Open, and its searches
// within a source and its retention work on them: the totals are exact,
// and the deleted artifacts leave the index.
func TestSourceWordMigration(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/vigil.db"
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 300, t0)
	// The index as an older build left it: the lines' words only.
	if err := sqlite.ExecSQL(ctx, s, `INSERT INTO artifacts_fts (artifacts_fts, rowid, raw)
			SELECT 'delete', rowid, 'ꙮ' || hex(org_id) || 'x' || hex(source) FROM artifacts;
		DROP TABLE artifacts_vocab_instances;
		DELETE FROM schema_migrations WHERE name LIKE '0034_%'`); err != nil {
		t.Fatal(err)
	}
	if n, err := sqlite.QueryStrings(ctx, s, `SELECT COUNT(*) FROM artifacts_fts WHERE artifacts_fts MATCH ?`, `"`+sourceWordOf("o1", "auth")+`"`); err != nil || n[0] != "0" {
		t.Fatalf("source words left: %v %v", n, err)
	}
	s.Close()
	if s, err = sqlite.Open(ctx, path, sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(when string, arts []*vigil.Artifact) {
		t.Helper()
		for _, c := range []struct{ query, source, word, not string }{
			{"udp", "firewall", "udp", ""},
			{"failed", "auth", "failed", ""},
			{"sshd -failed", "auth", "sshd", "failed"},
			{"sshd", "firewall", "sshd", ""},
		} {
			want := wantWithin(arts, c.source, c.word, c.not)
			for _, exactUpTo := range []int{0, 10000} {
				_, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", vigil.ArtifactFilter{Query: c.query, Source: c.source}, exactUpTo)
				if err != nil {
					t.Fatal(err)
				}
				if total != want || estimated {
					t.Errorf("%s: %q in %s: total %d (estimated %v), want %d", when, c.query, c.source, total, estimated, want)
				}
			}
		}
	}
	check("after the migration", arts)
	cut := t0.Add(123*time.Minute + 30*time.Second)
	if _, err := s.DropArtifactsBefore(ctx, cut); err != nil {
		t.Fatal(err)
	}
	var kept []*vigil.Artifact
	for _, a := range arts {
		if !a.Timestamp.Before(cut) {
			kept = append(kept, a)
		}
	}
	check("after retention", kept)
	// The index itself: no word of a deleted artifact is left.
	n, err := sqlite.QueryStrings(ctx, s, `SELECT COUNT(*) FROM artifacts_fts WHERE artifacts_fts MATCH ?`, `"`+sourceWordOf("o1", "auth")+`"`)
	if err != nil || n[0] != fmt.Sprint(wantWithin(kept, "auth", "", "")) {
		t.Errorf("the source word's entries after retention: %v (%v), want %d", n, err, wantWithin(kept, "auth", "", ""))
	}
}

// TestSourceWordNotForged: a line that writes out another org's source
// word (or its own) counts neither as that org's nor as of that source,
// and a query naming the word finds no source; a line with the word's
// letter inside a word is found as before by a query of that word.
func TestSourceWordNotForged(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 100, t0)
	forged := []*vigil.Artifact{
		{ID: vigil.NewID(), Source: "auth", Raw: "udp " + sourceWordOf("o1", "firewall"), Timestamp: t0, CreatedAt: t0},
		{ID: vigil.NewID(), Source: "auth", Raw: "fooꙮbar udp", Timestamp: t0, CreatedAt: t0},
	}
	other := *forged[0]
	other.ID = vigil.NewID()
	if err := s.InsertArtifacts(ctx, "o2", []*vigil.Artifact{&other}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertArtifacts(ctx, "o1", forged); err != nil {
		t.Fatal(err)
	}
	want := wantWithin(arts, "firewall", "udp", "")
	for _, exactUpTo := range []int{0, 10000} {
		_, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", vigil.ArtifactFilter{Query: "udp", Source: "firewall"}, exactUpTo)
		if err != nil || total != want || estimated {
			t.Errorf("udp in the firewall, exact up to %d: %d (estimated %v, %v), want %d", exactUpTo, total, estimated, err, want)
		}
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{sourceWordOf("o1", "firewall"), 1}, // the forged line itself, as "ꙮ" "6f31…"
		{"fooꙮbar", 1},
		{`"fooꙮbar udp"`, 1},
	} {
		_, total, err := s.SearchArtifacts(ctx, "o1", vigil.ArtifactFilter{Query: c.query})
		if err != nil || total != c.want {
			t.Errorf("%q: %d (%v), want %d", c.query, total, err, c.want)
		}
	}
}
