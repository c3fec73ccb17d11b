package postgres_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// datasetArtifacts are the lines of the datasets' auth and firewall logs,
// sources of their own, a minute apart from t0 (over two months).
func datasetArtifacts(t *testing.T, t0 time.Time) []*vigil.Artifact {
	t.Helper()
	var arts []*vigil.Artifact
	for _, src := range []string{"auth", "firewall"} {
		for _, l := range storetest.DatasetLines(t, src+"/*") {
			a := newArtifact(l, t0.Add(time.Duration(len(arts))*time.Minute))
			a.Source = src
			arts = append(arts, a)
		}
	}
	if len(arts) < 5000 {
		t.Skip("datasets not found in ../../../shared/datasets")
	}
	return arts
}

// addressQueries are searches of the most frequent address of arts
// (storetest.AddressQueries) and of it with a word.
func addressQueries(arts []*vigil.Artifact) []vigil.ArtifactFilter {
	ip, ip2 := storetest.FrequentAddresses(arts)
	return append(storetest.AddressQueries(ip, ip2), vigil.ArtifactFilter{Query: ip + " proto"})
}

// TestAddressKeysFindThePhrases: searches of addresses read as keys find
// what they find read as the phrases of their parts (page and total), which
// is the query language's definition; and the key is a lexeme the GIN index
// answers alone, where the phrase's words were in most rows, each match
// rechecked (380 ms p99 at 10 M artifacts).
func TestAddressKeysFindThePhrases(t *testing.T) {
	ctx := t.Context()
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	arts := datasetArtifacts(t, time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC))
	org := vigil.NewID()
	if err := s.InsertArtifacts(ctx, org, arts); err != nil {
		t.Fatal(err)
	}
	if !postgres.AddressKeysReady(ctx, s) {
		t.Fatal("a store migrated empty does not read address keys")
	}
	conn := mustConn(t, dbURL)
	if _, err := conn.Exec(ctx, `ANALYZE artifacts`); err != nil {
		t.Fatal(err)
	}
	keys := storetest.AddressKeys{Store: s, Org: org, Use: func(on bool) { postgres.SetAddressKeys(s, on) }}
	keys.FindThePhrases(t, "a fresh store", arts, addressQueries(arts))
	// The count of the most frequent address: its key in the index, no
	// row rechecked.
	f := addressQueries(arts)[0]
	tsq, err := postgres.SearchTSQuery(ctx, s, f.Query)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT COUNT(*) FROM artifacts WHERE org_id = $1 AND search @@ $2::tsquery`, org, tsq)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, l)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "Bitmap Index Scan") || strings.Contains(text, "Rows Removed by Index Recheck") || strings.Contains(text, "<->") {
		t.Errorf("%q as %s: the count rechecks rows or reads no index:\n%s", f.Query, tsq, text)
	}
}

// TestAddressKeysOfOlderArtifacts: a store whose artifacts were written
// before migration 0022 (vectors without keys) reads addresses as phrases
// after it, finding the same; WriteAddressKeys adds the keys (and a store
// opened after reads them), as retention does by dropping the partitions
// that held artifacts without keys.
func TestAddressKeysOfOlderArtifacts(t *testing.T) {
	ctx := t.Context()
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	t0 := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	arts := datasetArtifacts(t, t0)
	org := vigil.NewID()
	if err := s.InsertArtifacts(ctx, org, arts); err != nil {
		t.Fatal(err)
	}
	conn := mustConn(t, dbURL)
	// As an older build left the store: vectors without keys, no 0022.
	for _, q := range []string{
		`UPDATE artifacts SET search = ts_delete(search, ARRAY(SELECT lexeme FROM unnest(search) WHERE lexeme LIKE '%.%'))`,
		`DROP TABLE address_keys_pending`,
		`DELETE FROM schema_migrations WHERE name = '0022_address_keys.sql'`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	queries := addressQueries(arts)
	check := func(s *postgres.Store, keys bool, arts []*vigil.Artifact) {
		t.Helper()
		if got := postgres.AddressKeysReady(ctx, s); got != keys {
			t.Fatalf("address keys read: %v, want %v", got, keys)
		}
		for _, f := range queries {
			_, total, _, err := s.SearchArtifactsEstimated(ctx, org, f, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := storetest.PhraseMatches(t, arts, f); total != want {
				t.Errorf("keys %v, %+v: total %d, want %d", keys, f, total, want)
			}
		}
	}
	s2 := mustOpen(t, dbURL, postgres.Options{})
	check(s2, false, arts)
	// Artifacts written from now on have their keys; the older ones do
	// not until written.
	later := datasetArtifacts(t, t0.Add(30*24*time.Hour))[:500]
	if err := s2.InsertArtifacts(ctx, org, later); err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(arts), later...)
	check(s2, false, all)
	var parts []string
	if err := s2.WriteAddressKeys(ctx, func(part string, n int64) { parts = append(parts, part) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(parts, []string{"artifacts_p202601"}) {
		t.Errorf("keys written in partitions %v, want the month of the older artifacts only", parts)
	}
	check(s2, true, all)
	check(mustOpen(t, dbURL, postgres.Options{}), true, all)

	// Retention: the partitions without keys dropped, the store reads keys.
	if _, err := conn.Exec(ctx, `UPDATE artifacts SET search = ts_delete(search, ARRAY(SELECT lexeme FROM unnest(search) WHERE lexeme LIKE '%.%'));
		INSERT INTO address_keys_pending (part, before) SELECT c.relname, 0 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'artifacts'::regclass AND c.relname <> 'artifacts_default'`); err != nil {
		t.Fatal(err)
	}
	s3 := mustOpen(t, dbURL, postgres.Options{})
	if postgres.AddressKeysReady(ctx, s3) {
		t.Fatal("keys read with partitions pending")
	}
	if _, err := s3.DropArtifactsBefore(ctx, t0.Add(400*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	check(s3, true, nil)
}
