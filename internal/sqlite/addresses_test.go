package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// datasetLines stores the lines of the datasets' auth and firewall logs
// and dnsmasq's DHCP log in org, each source's lines a second apart from
// t0 in file order, and returns them.
func datasetLines(t *testing.T, s *sqlite.Store, org string, t0 time.Time) []*vigil.Artifact {
	t.Helper()
	var arts []*vigil.Artifact
	for _, src := range []struct{ source, glob string }{
		{"auth", "auth/*.log"}, {"firewall", "firewall/*"}, {"dns", "dns/dnsmasq-hotspot.log"},
	} {
		for i, l := range storetest.DatasetLines(t, src.glob) {
			at := t0.Add(time.Duration(i) * time.Second)
			arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), OrgID: org, Source: src.source, Raw: l, Timestamp: at, CreatedAt: at})
		}
	}
	if len(arts) < 5000 {
		t.Skip("datasets not found in ../../../shared/datasets")
	}
	sort.SliceStable(arts, func(i, j int) bool { return arts[i].Timestamp.Before(arts[j].Timestamp) })
	for i := 0; i < len(arts); i += 500 {
		if err := s.InsertArtifacts(context.Background(), org, arts[i:min(i+500, len(arts))]); err != nil {
			t.Fatal(err)
		}
	}
	return arts
}

// addressFilters are the searches of addresses the tests make
// (storetest.AddressQueries of the two most frequent), and the most
// frequent within a window, the next within a source and a window.
func addressFilters(arts []*vigil.Artifact) []vigil.ArtifactFilter {
	ip, ip2 := storetest.FrequentAddresses(arts)
	mid := arts[len(arts)/2].Timestamp
	window := vigil.TimeRange{Start: mid.Add(-2 * time.Hour), End: mid.Add(90 * time.Minute)}
	return append(storetest.AddressQueries(ip, ip2),
		vigil.ArtifactFilter{Query: ip, Range: window},
		vigil.ArtifactFilter{Query: ip2, Source: "dns", Range: window})
}

// TestAddressQueries: a query of addresses answered from their keys finds
// exactly what the phrases of their parts find (the same page, the same
// total, exact or estimated alike), and that is what the query language
// defines: each address's parts consecutive among a line's tokens, so
// not the address with a part one digit longer.
func TestAddressQueries(t *testing.T) {
	s := open(t)
	arts := datasetLines(t, s, "o1", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	keys := storetest.AddressKeys{Store: s, Org: "o1", Use: func(on bool) { sqlite.SetAddressIndex(s, on) }, SameEstimates: true}
	keys.FindThePhrases(t, "default plan", arts, addressFilters(arts))
	sqlite.SetSearchPlan(s, 1, 100)
	keys.FindThePhrases(t, "every way on small data", arts, addressFilters(arts))
}

// addressesOnly reports whether f's query is made of addresses only
// (parts of one to three digits), which their keys answer.
func addressesOnly(t *testing.T, f vigil.ArtifactFilter) bool {
	q, err := search.Parse(f.Query)
	if err != nil {
		t.Fatal(err)
	}
	return q.AddressesOnly()
}

// TestAddressQueryPlans: every full-text statement of a search of
// addresses reads their keys in artifacts_addr, none the phrases of their
// parts in artifacts_fts (whose commonest words "10" "0" "0" "53" took 115
// ms of CPU for the newest 10,001 matches at any store size).
func TestAddressQueryPlans(t *testing.T) {
	s := open(t)
	arts := datasetLines(t, s, "o1", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	for _, f := range addressFilters(arts) {
		if !addressesOnly(t, f) {
			continue // a part of four digits: the phrase (TestAddressQueries)
		}
		for _, exactUpTo := range []int{0, 50} {
			ran, _, _ := searchStatements(t, s, "o1", f, exactUpTo)
			keys := 0
			for _, st := range ran {
				if strings.Contains(st.query, "artifacts_fts") {
					t.Errorf("%+v: a statement reads the phrase index:\n%s\nargs %v", f, st.query, st.args)
				}
				if strings.Contains(st.query, "artifacts_addr") {
					keys++
					if !strings.Contains(st.plan, "VIRTUAL TABLE INDEX") {
						t.Errorf("%+v: a statement does not use the keys' index:\n%s\n%s", f, st.query, st.plan)
					}
				}
			}
			if keys == 0 {
				t.Errorf("%+v, exact up to %d: no statement read the address keys", f, exactUpTo)
			}
		}
	}
	// A query with another word is still read by the phrase.
	ip, _ := storetest.FrequentAddresses(arts)
	ran, _, _ := searchStatements(t, s, "o1", vigil.ArtifactFilter{Query: ip + " udp"}, 0)
	for _, st := range ran {
		if strings.Contains(st.query, "artifacts_addr") {
			t.Errorf("%q: a statement reads the address keys:\n%s", ip+" udp", st.query)
		}
	}
}

// TestAddressBackfill: a store written before migration 0033 (no address
// keys) has the keys of every artifact, compressed lines included, once
// opened by this build, indexed in batches; searches of addresses then
// find what the phrases find, and go on doing so after retention deleted
// half of the artifacts with their keys.
func TestAddressBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vigil.db")
	s := openAt(t, path)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	arts := datasetLines(t, s, "o1", t0)
	// As an older build leaves the store.
	for _, q := range []string{`DROP TABLE artifacts_addr`, `DROP TABLE addr_backfill`,
		`DELETE FROM schema_migrations WHERE name = '0033_address_keys.sql'`} {
		if err := sqlite.ExecSQL(ctx, s, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	defer sqlite.SetAddressBackfillBatch(1000)()
	s = openAt(t, path)
	defer s.Close()
	compressed, err := sqlite.QueryStrings(ctx, s, `SELECT COUNT(*) FROM artifacts WHERE typeof(raw) = 'blob'`)
	if err != nil || compressed[0] == "0" {
		t.Fatalf("no compressed line to index (%v, %v)", compressed, err)
	}
	pending, err := sqlite.QueryStrings(ctx, s, `SELECT COUNT(*) FROM addr_backfill`)
	if err != nil || pending[0] != "0" {
		t.Fatalf("backfill pending after Open: %v, %v", pending, err)
	}
	check := func(when string, arts []*vigil.Artifact) {
		t.Helper()
		for _, f := range addressFilters(arts) {
			ran, total, _ := searchStatements(t, s, "o1", f, 0)
			if want := storetest.PhraseMatches(t, arts, f); total != want {
				t.Errorf("%s, %+v: total %d, want %d", when, f, total, want)
			}
			if addressesOnly(t, f) && !slices.ContainsFunc(ran, func(st statement) bool { return strings.Contains(st.query, "artifacts_addr") }) {
				t.Errorf("%s, %+v: the address keys were not read", when, f)
			}
		}
		if err := sqlite.ExecSQL(ctx, s, `INSERT INTO artifacts_addr (artifacts_addr) VALUES ('integrity-check')`); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	check("after the backfill", arts)
	half := arts[len(arts)/2].Timestamp
	if _, err := s.DropArtifactsBefore(ctx, half); err != nil {
		t.Fatal(err)
	}
	var kept []*vigil.Artifact
	for _, a := range arts {
		if !a.Timestamp.Before(half) {
			kept = append(kept, a)
		}
	}
	check("after retention", kept)
}
