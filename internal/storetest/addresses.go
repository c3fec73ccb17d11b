package storetest

import (
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
)

// DatasetLines are the non-blank lines of the files of the shared
// datasets (../../../shared/datasets from a package under internal/)
// matching glob, in file order.
func DatasetLines(t testing.TB, glob string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", glob))
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(string(b), "\n") {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

var ipv4 = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)

// FrequentAddresses returns the two addresses in the most lines of arts.
func FrequentAddresses(arts []*vigil.Artifact) (string, string) {
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

// AddressQueries are searches of address ip: alone, near misses of it (a
// part longer or shorter, the address within a longer run of numbers),
// with address ip2 (ORed, both, ip2 excluded), excluded alone, and within
// the firewall's lines.
func AddressQueries(ip, ip2 string) []vigil.ArtifactFilter {
	return []vigil.ArtifactFilter{
		{Query: ip}, {Query: ip + "0"}, {Query: "1" + ip}, {Query: ip[:len(ip)-1]},
		{Query: ip + " OR " + ip2}, {Query: ip + " " + ip2}, {Query: ip + " -" + ip2}, {Query: "-" + ip},
		{Query: ip, Source: "firewall"},
	}
}

// PhraseMatches counts the artifacts of arts passing f by the query
// language's own definition: each term's tokens consecutive among the
// line's (search.Tokens), in f's source and window.
func PhraseMatches(t testing.TB, arts []*vigil.Artifact, f vigil.ArtifactFilter) int {
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
		if f.Source != "" && a.Source != f.Source || !InRange(f.Range, a.Timestamp) {
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

// InRange reports whether t is within r (start <= t < end, either open).
func InRange(r vigil.TimeRange, t time.Time) bool {
	return (r.Start.IsZero() || !t.Before(r.Start)) && (r.End.IsZero() || t.Before(r.End))
}

// AddressKeys is a store that reads the addresses of a query either as
// keys of their own or as the phrases of their parts.
type AddressKeys struct {
	Store vigil.ArtifactEstimator
	Org   string
	// Use makes the store read addresses as keys (true) or phrases.
	Use func(keys bool)
	// SameEstimates: a total the store estimates is the same read either
	// way (else only exact totals are compared).
	SameEstimates bool
}

// FindThePhrases checks that each search of filters, with a total exact up
// to 0 and to 50, finds read as keys what it finds read as phrases (the
// same page, estimated or not alike, the same total), and that an exact
// total is what the query language defines (PhraseMatches of arts). what
// names the setting in errors.
func (k AddressKeys) FindThePhrases(t *testing.T, what string, arts []*vigil.Artifact, filters []vigil.ArtifactFilter) {
	t.Helper()
	for _, f := range filters {
		want := PhraseMatches(t, arts, f)
		for _, exactUpTo := range []int{0, 50} {
			k.Use(false)
			page0, total0, est0, err := k.Store.SearchArtifactsEstimated(t.Context(), k.Org, f, exactUpTo)
			if err != nil {
				t.Fatal(err)
			}
			k.Use(true)
			page, total, est, err := k.Store.SearchArtifactsEstimated(t.Context(), k.Org, f, exactUpTo)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ArtifactIDs(page), ArtifactIDs(page0)) || est != est0 || total != total0 && (!est || k.SameEstimates) {
				t.Errorf("%s, %+v, exact up to %d: keys found %d (estimated %v, page of %d), phrases %d (%v, %d)",
					what, f, exactUpTo, total, est, len(page), total0, est0, len(page0))
			}
			if !est && total != want {
				t.Errorf("%s, %+v, exact up to %d: total %d, want %d", what, f, exactUpTo, total, want)
			}
		}
	}
}
