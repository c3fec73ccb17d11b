package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
)

// S_PG on the real PostgreSQL: the scratch schema has the store's indexes,
// holds exactly the rows the loop claims to have stored, and is gone after
// the measurement, which leaves the org's own data as it was.
func TestStorageLimitPostgres(t *testing.T) {
	pgtest.Require(t)
	ctx := t.Context()
	dbURL := pgtest.FreshDB(t)
	real, err := postgres.Open(ctx, dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	now := time.Now()
	own := []*vigil.Artifact{
		{ID: vigil.NewID(), Source: "auth", Raw: "sshd[1]: Failed password for root from 203.0.113.9 port 22 ssh2", Timestamp: now, CreatedAt: now, Metadata: json.RawMessage("{}")},
		{ID: vigil.NewID(), Source: "dns", Raw: "client 192.0.2.1#5353: query: example.com IN A", Timestamp: now, CreatedAt: now, Metadata: json.RawMessage("{}")},
	}
	if err := real.InsertArtifacts(ctx, "bench", own); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(table string) (n int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The dataset replay with the lines' own times, so that the rows
	// spread over many monthly partitions, as the store's would.
	b := &bench{f: Config{Batch: 100, Clients: 1, Duration: 300 * time.Millisecond, Times: "original", Via: ViaHTTP, DatabaseURL: dbURL},
		stderr: io.Discard, start: time.Now(), rep: &Report{Load: &LoadReport{E2ERate: 500}}}
	if err := b.loadLines(); err != nil {
		t.Fatal(err)
	}

	t.Run("stores what it claims", func(t *testing.T) {
		st, schema, err := openScratch(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		n, secs, err := b.insertLoop(ctx, 200*time.Millisecond, st.CopyArtifacts)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || n%100 != 0 || secs <= 0 {
			t.Fatalf("insertLoop: %d artifacts in %v s", n, secs)
		}
		for _, table := range []string{"artifacts", "artifact_ids"} {
			if got := count(pgx.Identifier{schema, table}.Sanitize()); got != n {
				t.Errorf("%s.%s holds %d rows, the loop claims %d", schema, table, got, n)
			}
		}
		if want, got := indexDefs(t, conn, "public"), indexDefs(t, conn, schema); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("indexes of the scratch schema:\n%s\nwant those of the store:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		var parts int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`,
			pgx.Identifier{schema, "artifacts"}.Sanitize()).Scan(&parts); err != nil || parts < 3 {
			t.Errorf("scratch artifacts has %d partitions (%v), want the months of the lines", parts, err)
		}
		st.Close()
		if err := dropScratch(ctx, dbURL, schema); err != nil {
			t.Fatal(err)
		}
		if s := scratchSchemas(t, conn); len(s) > 0 {
			t.Errorf("schemas left after dropScratch: %v", s)
		}
	})

	t.Run("report, cleaned up", func(t *testing.T) {
		if err := b.storageLimit(ctx); err != nil {
			t.Fatal(err)
		}
		s := b.rep.Storage
		if s == nil || s.Engine != EnginePostgres || s.Artifacts == 0 || s.Rate <= 0 || s.Ratio != 500/s.Rate {
			t.Fatalf("storage report %+v", s)
		}
		if left := scratchSchemas(t, conn); len(left) > 0 {
			t.Errorf("schemas left after the measurement: %v", left)
		}
		if n := count("public.artifacts"); n != int64(len(own)) {
			t.Errorf("the org's artifacts: %d rows after the measurement, want its own %d", n, len(own))
		}
		if n := count("public.artifact_ids"); n != int64(len(own)) {
			t.Errorf("the org's artifact_ids: %d rows after the measurement, want %d", n, len(own))
		}
	})
}

// indexDefs returns the definitions of the indexes on artifacts and
// artifact_ids in schema, the schema's name left out.
func indexDefs(t *testing.T, conn *pgx.Conn, schema string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT replace(indexdef, $1, 'S.') FROM pg_indexes
		WHERE schemaname = $2 AND tablename IN ('artifacts', 'artifact_ids') ORDER BY indexname`, schema+".", schema)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) < 4 {
		t.Fatalf("%d indexes in %s: %v", len(defs), schema, defs)
	}
	return defs
}

func scratchSchemas(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, scratchSchemaPrefix)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A database S_PG cannot be measured in is a problem in the report, which
// keeps the load's figures.
func TestStorageLimitPostgresRefused(t *testing.T) {
	f := &fakeServer{stamps: map[string]bool{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	u, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/vigil_no_such_database"
	var cfg Config
	cfg.FlagSet(io.Discard)
	cfg.URL, cfg.Token, cfg.Clients, cfg.Batch, cfg.Duration = srv.URL, "tok", 1, 50, 200*time.Millisecond
	cfg.Files, cfg.JSON, cfg.SearchableTimeout, cfg.DatabaseURL = "synthetic", "-", 10*time.Second, u.String()
	var stdout, stderr bytes.Buffer
	if err := Run(t.Context(), cfg, Options{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	if rep.Load == nil || rep.Load.Accepted == 0 || rep.Storage != nil || len(rep.Problems) != 1 ||
		!strings.Contains(rep.Problems[0], "storage limit not measured") || !strings.Contains(rep.Problems[0], "vigil_no_such_database") {
		t.Errorf("load %+v, storage %+v, problems %q", rep.Load, rep.Storage, rep.Problems)
	}
}

// TestFillPostgres: --fill with --database-url COPYs the rows into the
// server's PostgreSQL until the org holds what it is asked to; a second
// fill to the same size adds nothing.
func TestFillPostgres(t *testing.T) {
	pgtest.Require(t)
	ctx := t.Context()
	dbURL := pgtest.FreshDB(t)
	b := &bench{f: Config{Fill: 450, Batch: 100, Org: "o", FillDays: 2, FillFiles: "synthetic", DatabaseURL: dbURL},
		rep: &Report{}, stderr: io.Discard, start: time.Now()}
	for _, added := range []int64{450, 0} {
		if err := b.fill(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if b.rep.Fill.Added != added || b.rep.Fill.Before != 450-added {
			t.Fatalf("fill: %+v, want %d added", b.rep.Fill, added)
		}
	}
	st, err := postgres.Open(ctx, dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arts, total, err := st.SearchArtifacts(ctx, "o", vigil.ArtifactFilter{Page: vigil.Page{Limit: 1000}})
	if err != nil || total != 450 || len(arts) != 450 {
		t.Fatalf("stored %d (%d listed), %v", total, len(arts), err)
	}
	if span := arts[0].Timestamp.Sub(arts[449].Timestamp); span < 47*time.Hour || span > 48*time.Hour {
		t.Errorf("timestamps span %s", span)
	}
}
