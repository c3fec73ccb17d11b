package bench

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/search"
)

// searchQuery is one class of the search phase.
type searchQuery struct {
	name, query, source string
	// window, if not zero, is the time filter: this long, ending just
	// after the newest match.
	window time.Duration
}

func (b *bench) searchQueries() []searchQuery {
	ip := b.frequentIP("")
	fwWord := "udp"
	return []searchQuery{
		{name: "list, no query", query: ""},
		{name: "single term", query: "sshd"},
		{name: "single IP", query: ip},
		{name: "two words", query: "failed password"},
		{name: "phrase + time filter", query: `"authentication failure"`, window: 30 * 24 * time.Hour},
		{name: "phrase + 24 h filter", query: `"authentication failure"`, window: 24 * time.Hour},
		{name: "prefix", query: "fail*"},
		{name: "OR", query: "sshd OR named"},
		{name: "negation", query: "sshd -failed"},
		{name: "term + source filter", query: fwWord, source: "firewall"},
	}
}

var ipv4RE = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)

// frequentIP returns the IPv4 address found in the most lines (of source,
// if given), so that the IP query has many matches in any data set.
func (b *bench) frequentIP(source string) string {
	counts := map[string]int{}
	for _, l := range b.lines {
		if source != "" && l.Source != source {
			continue
		}
		seen := map[string]bool{}
		for _, ip := range ipv4RE.FindAllString(l.Raw, -1) {
			if !seen[ip] && !strings.HasPrefix(ip, "0.") && !strings.HasPrefix(ip, "127.") {
				seen[ip] = true
				counts[ip]++
			}
		}
	}
	best, n := "203.0.113.7", 0
	for ip, c := range counts {
		if c > n || (c == n && ip < best) {
			best, n = ip, c
		}
	}
	return best
}

// searchPhase makes sure f.SearchArtifacts are stored, posting more if
// needed, then times f.SearchRequests sequential requests of each query
// class.
func (b *bench) searchPhase(ctx context.Context) error {
	r := &SearchReport{}
	b.rep.Search = r
	smp := b.startSampler(ctx)
	have, err := b.total(ctx)
	if err != nil {
		return err
	}
	var filled int64 // with --times live, total counts this run's artifacts only
	if f := b.rep.Fill; f != nil && !b.since.IsZero() {
		filled = f.Before + f.Added
	}
	if need := int64(b.f.SearchArtifacts) - filled - have; need > 0 {
		b.logf("search phase: posting %d more artifacts to reach %d", need, b.f.SearchArtifacts)
		t0 := time.Now()
		st := b.ingest(ctx, t0, time.Time{}, need, true)
		got, at, ok := b.waitSearchable(ctx, have+st.accepted, b.f.SearchableTimeout)
		r.PreloadAdded, r.PreloadSeconds = st.accepted, at.Sub(t0).Seconds()
		r.PreloadRate = float64(st.accepted) / r.PreloadSeconds
		if !ok {
			b.problem("search preload: not all searchable: %d of %d", got, have+st.accepted)
		}
		if st.errors > 0 {
			b.problem("search preload: %d requests failed: %v", st.errors, st.kinds)
		}
		have = got
	}
	r.Stored = filled + have
	b.logf("search phase: %d artifacts stored; %d requests per class", r.Stored, b.f.SearchRequests)
	// Expected totals are known when this run stored every artifact of
	// the org and every accepted batch was accepted whole.
	exact := b.rep.Load.TotalBefore == 0 && !b.partial.Load() && !b.renumbered.Load() && b.rep.Fill == nil && b.f.DataDir == ""
	for _, q := range b.searchQueries() {
		if !b.searchClassWanted(q.name) {
			continue
		}
		c, err := b.searchClass(ctx, q)
		if err != nil {
			return err
		}
		if exact && q.window == 0 {
			if want, err := b.expectedTotal(q); err == nil {
				c.Expected = &want
				if want != c.Total && !c.Estimated {
					b.problem("search %s: total %d, but %d of the artifacts posted match", q.name, c.Total, want)
				}
			}
		}
		if !c.Stable {
			b.problem("search %s: total changed between identical requests", q.name)
		}
		r.Classes = append(r.Classes, c)
	}
	for _, s := range smp.stop() {
		r.RSSMaxBytes = math.Max(r.RSSMaxBytes, s.rss)
	}
	return nil
}

// searchClassWanted reports whether --search-classes names the class
// (all when empty).
func (b *bench) searchClassWanted(name string) bool {
	if b.f.SearchClasses == "" {
		return true
	}
	for _, c := range strings.Split(b.f.SearchClasses, ",") {
		if strings.TrimSpace(c) == name {
			return true
		}
	}
	return false
}

// searchClass times f.SearchRequests sequential requests of q.
func (b *bench) searchClass(ctx context.Context, q searchQuery) (SearchClass, error) {
	aq := client.ArtifactQuery{Query: q.query, Source: q.source}
	if q.window > 0 {
		// A window ending just after the newest match, in whole seconds.
		aq.Limit = 1
		p, err := b.api.Artifacts(ctx, aq)
		if err != nil {
			return SearchClass{}, err
		}
		aq.Limit = 0
		end := time.Now()
		if len(p.Artifacts) > 0 {
			end = p.Artifacts[0].Timestamp.Add(time.Minute)
		}
		end = end.Truncate(time.Second)
		aq.Start, aq.End = end.Add(-q.window), end
	}
	c := SearchClass{Name: q.name, Params: aq.Values().Encode(), Stable: true}
	var lats []float64
	for i := 0; i < b.f.SearchRequests && ctx.Err() == nil; i++ {
		start := time.Now()
		p, err := b.api.Artifacts(ctx, aq)
		ms := float64(time.Since(start)) / float64(time.Millisecond)
		c.Requests++
		if err != nil {
			c.Errors++
			if c.Errors == 1 {
				b.problem("search %s: %v", q.name, err)
			}
			continue
		}
		lats = append(lats, ms)
		if i > 0 && int64(p.Total) != c.Total {
			c.Stable = false
		}
		c.Total, c.Estimated = int64(p.Total), p.TotalEstimated
	}
	c.P50Ms, c.P99Ms, c.MaxMs = quantile(lats, 0.5), quantile(lats, 0.99), quantile(lats, 1)
	return c, nil
}

// expectedTotal counts the accepted artifacts matching q, matching each
// line with the query language's own parser and tokenizer.
func (b *bench) expectedTotal(q searchQuery) (int64, error) {
	parsed, err := search.Parse(q.query)
	if err != nil {
		return 0, fmt.Errorf("query %q: %w", q.query, err)
	}
	perLine := make([]int64, len(b.lines))
	for i, n := range b.sent {
		if n == 0 {
			continue
		}
		times := n / int64(b.spans[i][1])
		for k := 0; k < b.spans[i][1]; k++ {
			perLine[(b.spans[i][0]+k)%len(b.lines)] += times
		}
	}
	var total int64
	for i, l := range b.lines {
		if perLine[i] == 0 || (q.source != "" && l.Source != q.source) {
			continue
		}
		if matches(parsed, search.Tokens(l.Raw)) {
			total += perLine[i]
		}
	}
	return total, nil
}

// matches reports whether a line of tokens matches q: some AND-group has
// all its terms, and no excluded term occurs.
func matches(q *search.Query, toks []string) bool {
	for _, t := range q.Not {
		if hasTerm(toks, t) {
			return false
		}
	}
	if len(q.Any) == 0 {
		return true
	}
	for _, g := range q.Any {
		all := true
		for _, t := range g {
			if !hasTerm(toks, t) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasTerm(toks []string, t search.Term) bool {
	n := len(t.Tokens)
	for i := 0; i+n <= len(toks); i++ {
		ok := true
		for k, want := range t.Tokens {
			got := toks[i+k]
			if k == n-1 && t.Prefix {
				ok = strings.HasPrefix(got, want)
			} else {
				ok = got == want
			}
			if !ok {
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
