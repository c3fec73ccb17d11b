package postgres_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// searchCorpus is a set of lines that exercise the tokenizer: addresses,
// domains, paths, punctuation, case, unicode, repeated words.
var searchCorpus = []string{
	"sshd[411]: Failed password for root from 10.0.0.1 port 22 ssh2",
	"sshd[412]: Accepted password for alice from 10.0.0.15 port 51000 ssh2",
	"connection from 10.0.0.15 and 110.0.0.1 refused by firewall",
	"dns query evil.example.com A from 192.168.1.5",
	"dns query evil.example.org A from 192.168.1.6",
	"dns query notevil.example.com A from 192.168.1.7",
	"session closed: user alice logged out",
	"passwd: password changed for bob",
	"the quick brown fox jumps over the lazy dog",
	"brown quick fox",
	"AUTHENTICATION FAILURE FOR ROOT",
	`{"event_type":"alert","src_ip":"203.0.113.7","dest_port":443,"alert":{"signature":"ET MALWARE Win32/Agent C2"}}`,
	"GET /wp-login.php?user=admin&pass=admin HTTP/1.1 404",
	"[UFW BLOCK] IN=eth0 SRC=198.51.100.23 DST=10.0.0.5 PROTO=TCP DPT=3389",
	"user O'Brien logged in from 2001:db8::1",
	"fe80::1%eth0 neighbour solicitation",
	"héllo wörld — 日本語のログ 🚨 Ünïcödé",
	"it's a 'quoted' \"string\" with \\backslashes\\ and & | ! <-> :* tsquery syntax",
	"the the the the quick quick",
	"aaa bbb ccc aaa bbb ccc aaa",
	"x1 x2 x3 123abc abc123 0x1F",
	"",
	"   \t  ",
	"---...---",
}

var searchQueries = []string{
	"", "password", "password alice", "fox quick", `"quick brown"`, `"brown quick"`, "pass*", "authentic*",
	"alice OR bob", "password alice OR fox", "password -alice", "password OR fox -alice -lazy", "-password",
	`fox -"quick brown"`, "10.0.0.1", "10.0.0.15", "110.0.0.1", "10.0.0.*", "10.0*", "evil.example.com",
	"example.com", "example", "FAILED", "failure", "Root", "nonexistentword", "203.0.113.7", `"dest_port":443`,
	"ET MALWARE", `"Win32/Agent C2"`, "/wp-login.php", "wp-login*", "UFW BLOCK", "SRC=198.51.100.23", "DPT=3389",
	"O'Brien", "o brien", "2001:db8::1", "db8*", "fe80::1", "日本語のログ", "wörld", "Ünïcödé", "tsquery syntax",
	"'quoted'", `\backslashes\`, "& | !", "the quick", `"the the the"`, `"the quick quick"`, `"aaa bbb ccc aaa"`,
	`"ccc aaa bbb ccc aaa bbb"`, "abc*", "123*", "0x1f", "x1 OR x2 OR nothing", "-the -aaa", `-"quick brown" -x1`,
	"a*", "q* -quick", `"quick b*"`, `"evil.example.*"`, "evil.* -notevil",
}

// The PostgreSQL store answers every query as the SQLite store does: the
// same artifacts, the same total, the same order.
func TestSearchMatchesSQLite(t *testing.T) {
	pg := mustOpen(t, freshDB(t), postgres.Options{})
	lite, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "vigil.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	org := vigil.NewID()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var arts []*vigil.Artifact
	for i, raw := range searchCorpus {
		// Spread over three months, with ties on the timestamp.
		arts = append(arts, newArtifact(raw, base.Add(time.Duration(i/2)*240*time.Hour)))
	}
	for name, s := range map[string]vigil.Store{"postgres": pg, "sqlite": lite} {
		if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
			t.Fatalf("%s: InsertArtifacts: %v", name, err)
		}
	}
	for _, q := range searchQueries {
		for _, page := range []vigil.Page{{Limit: vigil.MaxLimit}, {Limit: 3, Offset: 2}} {
			f := vigil.ArtifactFilter{Query: q, Page: page}
			want, wantTotal, wantErr := lite.SearchArtifacts(t.Context(), org, f)
			got, gotTotal, gotErr := pg.SearchArtifacts(t.Context(), org, f)
			if vigil.ErrorCode(gotErr) != vigil.ErrorCode(wantErr) {
				t.Errorf("query %q: postgres error %v, sqlite error %v", q, gotErr, wantErr)
				continue
			}
			if gotTotal != wantTotal || !slices.Equal(rawsOf(got), rawsOf(want)) {
				t.Errorf("query %q page %+v:\npostgres (%d) %q\n  sqlite (%d) %q", q, page, gotTotal, rawsOf(got), wantTotal, rawsOf(want))
			}
		}
	}
}

func rawsOf(as []*vigil.Artifact) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s %.20q", a.ID, a.Raw))
	}
	return out
}
