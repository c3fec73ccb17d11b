package sqlite_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// prefixOf is the prefix of the tokens of org's artifacts of source in the
// full-text index (migration 0036): the pair's id in base 36, then "_".
func prefixOf(t *testing.T, s *sqlite.Store, org, source string) string {
	t.Helper()
	ids, err := sqlite.QueryStrings(context.Background(), s, `SELECT id FROM fts_sources WHERE org_id = ? AND source = ?`, org, source)
	if err != nil || len(ids) != 1 {
		t.Fatalf("the id of %s's %s: %v %v", org, source, ids, err)
	}
	id, _ := strconv.ParseInt(ids[0], 10, 64)
	return strconv.FormatInt(id, 36) + "_"
}

// wantWithin counts the artifacts of arts of source (any when empty)
// whose line holds word and not notWord (when not empty).
func wantWithin(arts []*vigil.Artifact, source, word, notWord string) int {
	n := 0
	for _, a := range arts {
		if (source == "" || a.Source == source) && (word == "" || strings.Contains(a.Raw, word)) && (notWord == "" || !strings.Contains(a.Raw, notWord)) {
			n++
		}
	}
	return n
}

// quoted finds the phrases of an FTS5 expression.
var quoted = regexp.MustCompile(`"([^"]*)"`)

// TestSourcePostingsPlans: a word's postings are per org and source, and
// a search reads only those of the pairs it may find: within a source,
// every word of every full-text statement is the source's own (before:
// the term's postings in every source of every org, intersected with a
// word on every line of the source, 364 ms of CPU for "udp" in the
// firewall at 10 M artifacts); without a source, only the org's sources
// that hold the word ("sshd" is auth's only). No statement walks the
// source's time index beyond the page's own time bound.
func TestSourcePostingsPlans(t *testing.T) {
	s := open(t)
	sqlite.SetSearchPlan(s, 1, 100) // "large" is 100 artifacts here
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 600, t0)
	twoSources(t, s, "o2", 100, t0)
	for _, c := range []struct {
		query, source, word, not string
		read                     []string // the sources whose words the statements may name
	}{
		{"udp", "firewall", "udp", "", []string{"firewall"}},
		{"sshd", "firewall", "sshd", "", []string{"firewall"}}, // none there, frequent in auth
		{"root -failed", "auth", "root", "failed", []string{"auth"}},
		{"-failed", "auth", "", "failed", []string{"auth"}},
		{"sshd", "", "sshd", "", []string{"auth"}},
		{"udp OR root", "", "", "", []string{"auth", "firewall"}},
	} {
		want := wantWithin(arts, c.source, c.word, c.not)
		if c.word == "" && c.not == "" {
			want = wantWithin(arts, "", "udp", "") + wantWithin(arts, "", "root", "")
		}
		var prefixes []string
		for _, src := range c.read {
			prefixes = append(prefixes, prefixOf(t, s, "o1", src))
		}
		for _, exactUpTo := range []int{0, 10000} {
			f := vigil.ArtifactFilter{Query: c.query, Source: c.source, Page: vigil.Page{Limit: 20}}
			ran, total, estimated := searchStatements(t, s, "o1", f, exactUpTo)
			if total != want || estimated {
				t.Errorf("%q in %q, exact up to %d: total %d (estimated %v), want %d", c.query, c.source, exactUpTo, total, estimated, want)
			}
			fts := 0
			for _, st := range ran {
				if strings.Contains(st.query, "artifacts_fts MATCH ?") {
					fts++
					for _, a := range st.args {
						e, ok := a.(string)
						if !ok || !strings.Contains(e, `"`) {
							continue
						}
						for _, m := range quoted.FindAllStringSubmatch(e, -1) {
							for _, tok := range strings.Fields(m[1]) {
								if !hasAnyPrefix(tok, prefixes) {
									t.Errorf("%q in %q: the word %q is not of %v (%v):\n%s", c.query, c.source, tok, c.read, prefixes, e)
								}
							}
						}
					}
				}
				if strings.Contains(st.plan, "artifacts_org_source_ts") && !strings.Contains(st.plan, "ts>?") {
					t.Errorf("%q in %q: a statement walks the source's time index:\n%s\n%s", c.query, c.source, st.query, st.plan)
				}
			}
			if fts == 0 && want > 0 {
				t.Errorf("%q in %q: no full-text statement ran", c.query, c.source)
			}
		}
	}
}

func hasAnyPrefix(tok string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(tok, p) {
			return true
		}
	}
	return false
}

// TestSourcePostingsMigration: a store whose full-text index is of the
// lines' plain words (before migration 0036) is indexed anew at Open,
// in several transactions: its searches, within a source and without,
// are exact after it and after retention, and no entry of a deleted
// artifact or of the old index is left.
func TestSourcePostingsMigration(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/vigil.db"
	s := openAt(t, path)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 300, t0)
	other := twoSources(t, s, "o2", 50, t0)
	oldIndex(t, s)
	s.Close()
	defer sqlite.SetReindexBatch(7)()
	s = openAt(t, path)
	defer s.Close()
	count := func(match string) int {
		t.Helper()
		n, err := sqlite.QueryStrings(ctx, s, `SELECT COUNT(*) FROM artifacts_fts WHERE artifacts_fts MATCH ?`, match)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := strconv.Atoi(n[0])
		return v
	}
	check := func(when string, arts, other []*vigil.Artifact) {
		t.Helper()
		for _, c := range []struct{ query, source, word, not string }{
			{"udp", "firewall", "udp", ""},
			{"failed", "auth", "failed", ""},
			{"sshd -failed", "auth", "sshd", "failed"},
			{"sshd", "firewall", "sshd", ""},
			{"sshd", "", "sshd", ""},
			{"-failed", "", "", "failed"},
		} {
			want := wantWithin(arts, c.source, c.word, c.not)
			for _, exactUpTo := range []int{0, 10000} {
				_, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", vigil.ArtifactFilter{Query: c.query, Source: c.source}, exactUpTo)
				if err != nil {
					t.Fatal(err)
				}
				if total != want || estimated {
					t.Errorf("%s: %q in %q: total %d (estimated %v), want %d", when, c.query, c.source, total, estimated, want)
				}
			}
		}
		// The index itself: each pair's own token on each of its
		// artifacts, no plain word of the old index.
		for _, k := range []struct {
			org, source string
			arts        []*vigil.Artifact
		}{{"o1", "auth", arts}, {"o1", "firewall", arts}, {"o2", "auth", other}} {
			if got, want := count(`"`+prefixOf(t, s, k.org, k.source)+`"`), wantWithin(k.arts, k.source, "", ""); got != want {
				t.Errorf("%s: %s's %s: %d entries, want %d", when, k.org, k.source, got, want)
			}
		}
		if n := count(`"sshd"`); n != 0 {
			t.Errorf("%s: %d entries of the old index's plain word sshd", when, n)
		}
	}
	check("after the migration", arts, other)
	cut := t0.Add(123*time.Minute + 30*time.Second)
	if _, err := s.DropArtifactsBefore(ctx, cut); err != nil {
		t.Fatal(err)
	}
	kept := func(arts []*vigil.Artifact) []*vigil.Artifact {
		var out []*vigil.Artifact
		for _, a := range arts {
			if !a.Timestamp.Before(cut) {
				out = append(out, a)
			}
		}
		return out
	}
	check("after retention", kept(arts), kept(other))
}

// oldIndex leaves s's full-text index as the build before migration 0036
// did: each line's words, then its source word (migration 0034).
func oldIndex(t *testing.T, s *sqlite.Store) {
	t.Helper()
	if err := sqlite.ExecSQL(context.Background(), s, `INSERT INTO artifacts_fts (artifacts_fts) VALUES ('delete-all');
		INSERT INTO artifacts_fts (rowid, raw) SELECT rowid, raw || char(10) || 'ꙮ' || hex(org_id) || 'x' || hex(source) FROM artifacts;
		DROP TABLE fts_sources;
		DROP TABLE fts_reindex;
		DELETE FROM schema_migrations WHERE name LIKE '0036_%'`); err != nil {
		t.Fatal(err)
	}
}

// TestSourcePostingsResume: a reindex stopped halfway (here by a line it
// cannot read) keeps the transactions it committed, and the next Open
// goes on from there: every search is then exact.
func TestSourcePostingsResume(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/vigil.db"
	s := openAt(t, path)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 300, t0)
	oldIndex(t, s)
	// The 101st artifact's line made unreadable.
	first, err := sqlite.QueryStrings(ctx, s, `SELECT MIN(rowid) FROM artifacts`)
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := strconv.ParseInt(first[0], 10, 64)
	bad += 100
	raw, err := sqlite.QueryStrings(ctx, s, `SELECT raw FROM artifacts WHERE rowid = ?`, bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlite.ExecSQL(ctx, s, `UPDATE artifacts SET raw = x'00' WHERE rowid = ?`, bad); err != nil {
		t.Fatal(err)
	}
	s.Close()
	defer sqlite.SetReindexBatch(7)()
	if s, err := sqlite.Open(ctx, path, sqlite.Options{}); err == nil {
		s.Close()
		t.Fatal("opened with a line the reindex cannot read")
	}
	db := sqlite.OpenDB(path)
	var next int64
	if err := db.QueryRowContext(ctx, `SELECT next_rowid FROM fts_reindex`).Scan(&next); err != nil || next <= bad-7 || next > bad {
		t.Errorf("the reindex stopped at %d (%v), want the batch of rowid %d", next, err, bad)
	}
	if _, err := db.ExecContext(ctx, `UPDATE artifacts SET raw = ? WHERE rowid = ?`, raw[0], bad); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = openAt(t, path)
	defer s.Close()
	for _, c := range []struct{ query, source, word, not string }{
		{"udp", "firewall", "udp", ""},
		{"sshd -failed", "", "sshd", "failed"},
		{"root", "auth", "root", ""},
	} {
		_, total, err := s.SearchArtifacts(ctx, "o1", vigil.ArtifactFilter{Query: c.query, Source: c.source})
		if want := wantWithin(arts, c.source, c.word, c.not); err != nil || total != want {
			t.Errorf("%q in %q after the resumed reindex: %d (%v), want %d", c.query, c.source, total, err, want)
		}
	}
}

// TestSourceTokensNotForged: a line that writes out a token of another
// org's source (or its own) counts neither as that org's nor as of that
// source, and a query naming the token finds the line by its words.
func TestSourceTokensNotForged(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := twoSources(t, s, "o1", 100, t0)
	twoSources(t, s, "o2", 10, t0)
	fw := prefixOf(t, s, "o1", "firewall")
	forged := []*vigil.Artifact{{ID: vigil.NewID(), Source: "auth", Raw: "udp " + fw + "udp " + fw, Timestamp: t0, CreatedAt: t0}}
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
		for _, q := range []string{"udp", "-sshd"} {
			_, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", vigil.ArtifactFilter{Query: q, Source: "firewall"}, exactUpTo)
			if err != nil || total != want || estimated {
				t.Errorf("%q in the firewall, exact up to %d: %d (estimated %v, %v), want %d", q, exactUpTo, total, estimated, err, want)
			}
		}
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{fw + "udp", 1}, // the forged line itself, as its words
		{fmt.Sprintf("%q", fw+"udp "+fw), 1},
	} {
		_, total, err := s.SearchArtifacts(ctx, "o1", vigil.ArtifactFilter{Query: c.query})
		if err != nil || total != c.want {
			t.Errorf("%q: %d (%v), want %d", c.query, total, err, c.want)
		}
	}
}
