package postgres_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// CopyArtifacts, into a store of its own schema, stores what
// InsertArtifacts stores into the default one: searches of both answer
// the same, each schema holds its own rows only, and the months get their
// partitions.
func TestCopyArtifactsStoresWhatInsertStores(t *testing.T) {
	requirePostgres(t)
	ctx := t.Context()
	url := freshDB(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA scratch`); err != nil {
		t.Fatal(err)
	}
	ins := mustOpen(t, url, postgres.Options{})
	cp := mustOpen(t, url, postgres.Options{Schema: "scratch"})

	jan := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
	lines := []string{
		"Jan 15 08:00:01 web-1 sshd[4242]: Failed password for invalid user admin from 203.0.113.7 port 40022 ssh2",
		"Jan 15 08:00:02 fw kernel: [UFW BLOCK] IN=eth0 OUT= SRC=198.51.100.23 DST=10.0.0.5 PROTO=TCP SPT=51515 DPT=22",
		"15-Jan-2026 08:00:03.120 client @0x7f 192.0.2.44#53211 (example.com): query: example.com IN A +E(0)K (10.0.0.53)",
		"raw with a NUL \x00 byte from 203.0.113.7",
	}
	var arts []*vigil.Artifact
	for i, l := range lines {
		a := newArtifact(l, jan.AddDate(0, i%2, 0).Add(time.Duration(i)*time.Second))
		if i == 0 {
			a.Enrichment = json.RawMessage(`{"203.0.113.7":{"asn":64500}}`)
			a.Event = json.RawMessage(`{"user":"admin"}`)
		}
		arts = append(arts, a)
	}
	if err := ins.InsertArtifacts(ctx, "org-a", arts); err != nil {
		t.Fatal(err)
	}
	if err := cp.CopyArtifacts(ctx, "org-a", arts); err != nil {
		t.Fatalf("CopyArtifacts: %v", err)
	}
	for _, f := range []vigil.ArtifactFilter{
		{Page: vigil.Page{Limit: 10}},
		{Query: "203.0.113.7", Page: vigil.Page{Limit: 10}},
		{Query: `"Failed password"`, Page: vigil.Page{Limit: 10}},
		{Query: "example.com", Page: vigil.Page{Limit: 10}},
		{Range: vigil.TimeRange{Start: jan.AddDate(0, 1, 0)}, Page: vigil.Page{Limit: 10}},
	} {
		want, wantTotal, err := ins.SearchArtifacts(ctx, "org-a", f)
		if err != nil {
			t.Fatal(err)
		}
		got, gotTotal, err := cp.SearchArtifacts(ctx, "org-a", f)
		if err != nil {
			t.Fatal(err)
		}
		if gotTotal != wantTotal || wantTotal == 0 || !slices.EqualFunc(got, want, sameArtifact) {
			t.Errorf("%+v: copied %d %v, inserted %d %v", f, gotTotal, storetest.ArtifactIDs(got), wantTotal, storetest.ArtifactIDs(want))
		}
	}
	count := func(table string) (n int) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, table := range []string{"public.artifacts", "public.artifact_ids", "scratch.artifacts", "scratch.artifact_ids"} {
		if n := count(table); n != len(arts) {
			t.Errorf("%s holds %d rows, want %d", table, n, len(arts))
		}
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = "scratch"
	sconn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sconn.Close(ctx)
	parts, where := partitions(t, sconn)
	if want := []string{"artifacts_default", "artifacts_p202601", "artifacts_p202602"}; !slices.Equal(parts, want) {
		t.Errorf("partitions of scratch.artifacts: %v, want %v", parts, want)
	}
	for _, a := range arts {
		if want := "artifacts_p" + a.Timestamp.Format("200601"); where[a.ID] != want {
			t.Errorf("%s copied into %q, want %s", a.ID, where[a.ID], want)
		}
	}
	// Unlike InsertArtifacts, COPY refuses an ID stored before.
	if err := cp.CopyArtifacts(ctx, "org-a", arts[:1]); err == nil {
		t.Error("CopyArtifacts of a stored ID succeeded")
	}
}

func sameArtifact(a, b *vigil.Artifact) bool {
	return a.ID == b.ID && a.Source == b.Source && a.Raw == b.Raw && a.Timestamp.Equal(b.Timestamp) &&
		string(a.Event) == string(b.Event) && string(a.Enrichment) == string(b.Enrichment)
}
