package postgres_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
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
	"winlog", "TargetUserName", "at_adm", `"at adm"`, "EQP01777", `"Credential Validation"`, "MICROSOFT_AUTHENTICATION_PACKAGE_V1_0",
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
	// A real Windows event, indexed by its values (parse.SearchText) on
	// both.
	golden, err := os.ReadFile("../../../shared/datasets/windows/winlogbeat/security/collection/security-windows2012_4776.evtx.golden.json")
	if err != nil {
		t.Fatalf("%v (../shared/datasets beside the checkout)", err)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(golden, &docs); err != nil || len(docs) == 0 {
		t.Fatalf("Winlogbeat document: %v", err)
	}
	var arts []*vigil.Artifact
	for i, raw := range append(slices.Clip(searchCorpus), string(docs[0])) {
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

// TestSearchEstimatedPostgres: beyond exactUpTo matches a total is
// estimated from a sample (flagged, above exactUpTo, near the exact
// count, the same for identical searches), for a query and for a list
// without one; up to exactUpTo, and with exactUpTo 0, it is exact; the
// page is the same either way.
func TestSearchEstimatedPostgres(t *testing.T) {
	ctx := t.Context()
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	postgres.SetSampleRows(s, 2000)
	t0 := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	var arts []*vigil.Artifact
	for i := range 20000 {
		at := t0.Add(time.Duration(i) * 8 * time.Second)
		a := &vigil.Artifact{ID: vigil.NewID(), Source: "auth", Raw: fmt.Sprintf("sshd[%d]: accepted publickey for root", i), Timestamp: at, CreatedAt: at,
			Metadata: []byte("{}")}
		if i%3 == 0 {
			a.Raw = fmt.Sprintf("sshd[%d]: failed password for root", i)
		}
		if i%2 == 1 {
			a.Source, a.Raw = "firewall", fmt.Sprintf("drop udp 10.0.0.%d:53 -> 10.0.1.1:%d", i%250, 1000+i)
		}
		arts = append(arts, a)
	}
	for i := 0; i < len(arts); i += 5000 {
		if err := s.CopyArtifacts(ctx, "o1", arts[i:i+5000]); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ANALYZE artifacts`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f         vigil.ArtifactFilter
		exactUpTo int
		exact     int
		estimated bool
	}{
		{vigil.ArtifactFilter{}, 1000, 20000, true},
		{vigil.ArtifactFilter{Query: "root"}, 1000, 10000, true},
		{vigil.ArtifactFilter{Query: "failed", Source: "auth"}, 1000, 3334, true},
		{vigil.ArtifactFilter{Query: "failed", Source: "auth"}, 5000, 3334, false},
		{vigil.ArtifactFilter{Query: "udp"}, 0, 10000, false},
		{vigil.ArtifactFilter{Query: "udp", Range: vigil.TimeRange{Start: t0.Add(10 * time.Hour), End: t0.Add(30 * time.Hour)}}, 1000, 4500, true},
	} {
		c.f.Page = vigil.Page{Limit: 20, Offset: 40}
		page, total, estimated, err := s.SearchArtifactsEstimated(ctx, "o1", c.f, c.exactUpTo)
		if err != nil {
			t.Fatal(err)
		}
		want, exact, err := s.SearchArtifacts(ctx, "o1", c.f)
		if err != nil {
			t.Fatal(err)
		}
		if exact != c.exact || estimated != c.estimated {
			t.Errorf("%+v up to %d: exact %d, estimated %v; want %d, %v", c.f, c.exactUpTo, exact, estimated, c.exact, c.estimated)
		}
		switch {
		case estimated && (total <= c.exactUpTo || total < exact*7/10 || total > exact*13/10):
			t.Errorf("%+v up to %d: estimate %d of %d", c.f, c.exactUpTo, total, exact)
		case !estimated && total != exact:
			t.Errorf("%+v up to %d: total %d, want %d", c.f, c.exactUpTo, total, exact)
		}
		if _, again, _, err := s.SearchArtifactsEstimated(ctx, "o1", c.f, c.exactUpTo); err != nil || again != total {
			t.Errorf("%+v up to %d: total %d, then %d (%v)", c.f, c.exactUpTo, total, again, err)
		}
		if fmt.Sprint(storetest.ArtifactIDs(page)) != fmt.Sprint(storetest.ArtifactIDs(want)) || len(page) != 20 {
			t.Errorf("%+v up to %d: page of %d differs from the exact search's", c.f, c.exactUpTo, len(page))
		}
	}
}
