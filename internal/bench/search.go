package bench

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/search"
)

// searchQuery is one class of the search phase.
type searchQuery struct {
	name, query, source string
	// window, if not zero, is the time filter: this long, ending just
	// after the newest match.
	window time.Duration
	// offset, if not zero, asks for a later page than the first.
	offset int
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
		{name: "list, source filter", source: "firewall"},
		{name: "term + source filter", query: fwWord, source: "firewall"},
		{name: "term + source + 24 h filter", query: fwWord, source: "firewall", window: 24 * time.Hour},
		// The next pages of a frequent term (of the default 50 each), as
		// an analyst pages through them. The query language has no field
		// syntax (source is a filter of its own, above).
		{name: "single term, page 2", query: "sshd", offset: 50},
		{name: "single term, page 10", query: "sshd", offset: 450},
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
	// With --times live, total counts the artifacts stamped since the run
	// started (this run's, and another's stamped as late): held is what
	// else the org held before.
	var held int64
	if !b.since.IsZero() {
		held = b.orgBefore - b.rep.Load.TotalBefore
	}
	if need := int64(b.f.SearchArtifacts) - held - have; need > 0 {
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
	r.Stored = held + have
	b.logf("search phase: %d artifacts stored; %d requests per class", r.Stored, b.f.SearchRequests)
	// Expected totals are known when every accepted batch was accepted
	// whole: a class's total before the load, plus the artifacts posted
	// since that match.
	exact := !b.partial.Load() && !b.renumbered.Load()
	for _, q := range b.searchQueries() {
		if !b.searchClassWanted(q.name) {
			continue
		}
		cpu0 := b.allCPU()
		c, err := b.searchClass(ctx, q)
		if err != nil {
			return err
		}
		if c.Requests > 0 {
			c.CPUMs = 1000 * (b.allCPU() - cpu0) / float64(c.Requests)
		}
		if before, ok := b.classBefore[q.name]; ok && exact {
			if posted, err := b.expectedTotal(q); err == nil {
				want := before + posted
				c.Before, c.Expected = &before, &want
				if want != c.Total && !c.Estimated {
					b.problem("search %s: total %d, want %d: %d before the run, and %d of the artifacts it posted match", q.name, c.Total, want, before, posted)
				}
			}
		}
		if !c.Stable {
			b.problem("search %s: total changed between identical requests (%d to %d)", q.name, c.TotalMin, c.TotalMax)
		}
		r.Classes = append(r.Classes, c)
	}
	for _, s := range smp.stop() {
		r.RSSMaxBytes = math.Max(r.RSSMaxBytes, s.rss)
	}
	return nil
}

// readBefore reads, before the load, what the search phase compares
// with: the total of each class it will check (those without a time
// window, whose expected total is known) and, with --times live, the
// org's, so that a store that already holds artifacts (a server given by
// --url, a reused --data-dir, a fill) is expected to hold those plus what
// this run posts. A class whose total is not read exactly (an error, an
// estimate) is not checked.
func (b *bench) readBefore(ctx context.Context) error {
	b.classBefore = map[string]int64{}
	org := int64(-1)
	if f := b.rep.Fill; f != nil {
		org = f.Before + f.Added
	}
	for _, q := range b.searchQueries() {
		if q.window > 0 || !b.searchClassWanted(q.name) {
			continue
		}
		p, err := b.api.Artifacts(ctx, client.ArtifactQuery{Query: q.query, Source: q.source, Limit: 1})
		switch {
		case err != nil:
			b.logf("search %s: its total before the load not read (%v): not checked", q.name, err)
		case p.TotalEstimated:
			b.logf("search %s: its total before the load is an estimate (%d): not checked", q.name, p.Total)
		default:
			b.classBefore[q.name] = int64(p.Total)
		}
		if err == nil && q.query == "" && q.source == "" {
			org = int64(p.Total)
		}
	}
	if !b.since.IsZero() && org < 0 {
		n, err := b.api.ArtifactTotal(ctx)
		if err != nil {
			return fmt.Errorf("the org's total before the load: %w", err)
		}
		org = int64(n)
	}
	b.orgBefore = max(org, 0)
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
	aq.Offset = q.offset
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
		t := int64(p.Total)
		if len(lats) == 1 {
			c.TotalMin, c.TotalMax = t, t
		}
		c.TotalMin, c.TotalMax = min(c.TotalMin, t), max(c.TotalMax, t)
		if i > 0 && t != c.Total && !(p.TotalEstimated && c.Estimated && estimateHeld(c.TotalMin, c.TotalMax)) {
			c.Stable = false
		}
		c.Total, c.Estimated = t, p.TotalEstimated
	}
	c.P50Ms, c.P99Ms, c.MaxMs = quantile(lats, 0.5), quantile(lats, 0.99), quantile(lats, 1)
	return c, nil
}

// estimateHeld reports whether estimated totals between lo and hi, of
// identical requests, stayed within estimateDrift of each other. An
// estimate is the same for identical searches only while nothing is
// stored (docs/api.md); the background writes that follow ingest
// (enrichment's results, PostgreSQL's row versions they make) may move
// a sampled one a little, never an exact total.
func estimateHeld(lo, hi int64) bool {
	return float64(hi-lo) <= estimateDrift*float64(max(lo, 1))
}

// estimateDrift is how far apart (a fraction) estimated totals of
// identical requests may be before the bench calls them unstable.
const estimateDrift = 0.01

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
		if matches(parsed, search.Tokens(parse.SearchText(l.Raw))) {
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
