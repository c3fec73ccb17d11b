package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
	"github.com/vigil-soc/vigil/internal/sqlite"
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
		files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", src.glob))
		i := 0
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for l := range strings.SplitSeq(string(b), "\n") {
				if strings.TrimSpace(l) == "" {
					continue
				}
				at := t0.Add(time.Duration(i) * time.Second)
				arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), OrgID: org, Source: src.source, Raw: l, Timestamp: at, CreatedAt: at})
				i++
			}
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

var ipv4 = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)

// frequentAddresses returns the two addresses in the most lines of arts.
func frequentAddresses(arts []*vigil.Artifact) (string, string) {
	count := map[string]int{}
	for _, a := range arts {
		for _, ip := range ipv4.FindAllString(a.Raw, -1) {
			count[ip]++
		}
	}
	ips := make([]string, 0, len(count))
	for ip := range count {
		ips = append(ips, ip)
	}
	sort.Slice(ips, func(i, j int) bool {
		return count[ips[i]] > count[ips[j]] || count[ips[i]] == count[ips[j]] && ips[i] < ips[j]
	})
	return ips[0], ips[1]
}

// phraseMatches counts the artifacts of arts passing f by the query
// language's own definition: each term's tokens consecutive among the
// line's (search.Tokens), in f's source and window.
func phraseMatches(t *testing.T, arts []*vigil.Artifact, f vigil.ArtifactFilter) int {
	t.Helper()
	q, err := search.Parse(f.Query)
	if err != nil {
		t.Fatal(err)
	}
	has := func(toks []string, term search.Term) bool {
		for i := 0; i+len(term.Tokens) <= len(toks); i++ {
			if slices.Equal(toks[i:i+len(term.Tokens)], term.Tokens) {
				return true
			}
		}
		return false
	}
	n := 0
	for _, a := range arts {
		if f.Source != "" && a.Source != f.Source || !inRange(f.Range, a.Timestamp) {
			continue
		}
		toks := search.Tokens(a.Raw)
		ok := len(q.Any) == 0
		for _, g := range q.Any {
			all := true
			for _, term := range g {
				all = all && has(toks, term)
			}
			ok = ok || all
		}
		for _, term := range q.Not {
			ok = ok && !has(toks, term)
		}
		if ok {
			n++
		}
	}
	return n
}

// addressFilters are the searches of addresses the tests make: the most
// frequent address alone, within a source and a window, near misses of
// it (a part longer or shorter, the address within a longer run of
// numbers), two addresses ORed and excluded.
func addressFilters(arts []*vigil.Artifact) []vigil.ArtifactFilter {
	ip, ip2 := frequentAddresses(arts)
	mid := arts[len(arts)/2].Timestamp
	window := vigil.TimeRange{Start: mid.Add(-2 * time.Hour), End: mid.Add(90 * time.Minute)}
	return []vigil.ArtifactFilter{
		{Query: ip},
		{Query: ip + "0"},
		{Query: "1" + ip},
		{Query: ip[:len(ip)-1]},
		{Query: ip + " OR " + ip2},
		{Query: ip + " " + ip2},
		{Query: ip + " -" + ip2},
		{Query: "-" + ip},
		{Query: ip, Source: "firewall"},
		{Query: ip, Range: window},
		{Query: ip2, Source: "dns", Range: window},
	}
}

// TestAddressQueries: a query of addresses answered from their keys finds
// exactly what the phrases of their parts find (the same page, the same
// total, exact or estimated alike), and that is what the query language
// defines: each address's parts consecutive among a line's tokens, so
// not the address with a part one digit longer.
func TestAddressQueries(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	arts := datasetLines(t, s, "o1", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	for _, plan := range []struct {
		name string
		set  func()
	}{
		{"default plan", func() {}},
		{"every way on small data", func() { sqlite.SetSearchPlan(s, 1, 100) }},
	} {
		plan.set()
		for _, f := range addressFilters(arts) {
			want := phraseMatches(t, arts, f)
			for _, exactUpTo := range []int{0, 50} {
				sqlite.SetAddressIndex(s, false)
				page0, total0, est0, err := s.SearchArtifactsEstimated(ctx, "o1", f, exactUpTo)
				if err != nil {
					t.Fatal(err)
				}
				sqlite.SetAddressIndex(s, true)
				page, total, est, err := s.SearchArtifactsEstimated(ctx, "o1", f, exactUpTo)
				if err != nil {
					t.Fatal(err)
				}
				if total != total0 || est != est0 || !slices.Equal(ids(page), ids(page0)) {
					t.Errorf("%s, %+v, exact up to %d: keys found %d (estimated %v, page %d), phrases %d (%v, %d)",
						plan.name, f, exactUpTo, total, est, len(page), total0, est0, len(page0))
				}
				if !est && total != want {
					t.Errorf("%s, %+v, exact up to %d: total %d, want %d", plan.name, f, exactUpTo, total, want)
				}
			}
		}
	}
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
	ip, _ := frequentAddresses(arts)
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
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	if s, err = sqlite.Open(ctx, path, sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
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
			if want := phraseMatches(t, arts, f); total != want {
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

func ids(arts []*vigil.Artifact) []string {
	out := make([]string, len(arts))
	for i, a := range arts {
		out[i] = a.ID
	}
	return out
}
