package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

// Matches of a full-text query are listed and counted in one of two ways:
// driven by the matches (read each matching row for its org, source and
// time, then sort) or by an index (walk the org's time index, newest
// first, testing each entry's rowid against the matches, without reading
// rows). The cheaper way is picked from sizes that cost little to learn,
// so that each query touches about denseMatches × (limit+offset), or
// windowScan, entries at most in the cases below. Every match set is
// bounded to the rowids the filter's time window can hold (spans.go), and
// a walk gathers the matches of the newest entries of the filter only
// (walkPage).
const (
	// denseMatches: matches that are 1 in denseMatches stored artifacts or
	// more are listed by walking the time index.
	denseMatches = 200
	// windowScan: a filter (org, source, time window) selecting fewer
	// artifacts than this, or a time window leaving fewer than this outside
	// it, is walked in the index to count the matches.
	windowScan = 50000
	// walkWindow is the fewest newest entries of a filter a walk tests
	// first.
	walkWindow = 2000
	// driveMatches: a filtered query with this many matches or fewer
	// among the rowids of its window reads them, whatever the filter's
	// size.
	driveMatches = 5000
)

// searchPlan holds the thresholds above (tests change them to run every
// way on small data).
type searchPlan struct{ denseMatches, windowScan, walkWindow, driveMatches int }

// SearchArtifacts returns a page of org's artifacts matching f, newest
// first by timestamp, and the number of all matches, exact.
func (s *Store) SearchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int, error) {
	arts, total, _, err := s.searchArtifacts(ctx, org, f, 0)
	return arts, total, err
}

// SearchArtifactsEstimated is SearchArtifacts, but a query's total is
// counted exactly up to exactUpTo matches only where counting them all
// would read many: a query without a time filter, within a source or not
// (its matches in the full-text index, all of the org and the source), and
// a query within a filter (a time window; a source or an org sharing the
// store for a query of addresses) whose matches both outside and inside
// the filter are many (filterCount). Beyond exactUpTo it is
// estimated (and estimated is true) from the newest exactUpTo+1 matches
// and samples of the older ones: such a total is always more than
// exactUpTo, an exact one never. A list without a query is always counted
// exactly (artifact_counts). exactUpTo ≤ 0 counts every total exactly.
func (s *Store) SearchArtifactsEstimated(ctx context.Context, org string, f vigil.ArtifactFilter, exactUpTo int) ([]*vigil.Artifact, int, bool, error) {
	return s.searchArtifacts(ctx, org, f, exactUpTo)
}

// searchArtifacts is SearchArtifactsEstimated.
//
// A query's matches in the full-text index are all the org's, of the
// source when one is given (its words are the org's sources' own,
// source.go): without a time window the total is counted from the index
// alone, and with a wide one as those matches less the ones outside it.
// A query of addresses (artifacts_addr, no sources) is so only when the
// org is alone in the store and no source is given; otherwise the
// filter's entries in the time index are walked when they are few, and
// only a query with many matches in a large filter reads every match in
// its window.
func (s *Store) searchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter, exactUpTo int) ([]*vigil.Artifact, int, bool, error) {
	q, err := search.Parse(f.Query)
	if err != nil {
		return nil, 0, false, err
	}
	// One snapshot for the counts and the page, on a connection of the
	// searches' own pool.
	rtx, err := s.search.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	defer rtx.Rollback()
	tx := &stx{Tx: rtx, hook: s.statementHook, index: ftsBase}
	if s.searchHook != nil {
		s.searchHook(ctx)
	}
	if tx.parts, err = readParts(ctx, tx); err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	base := []string{"a.org_id = ?"}
	baseArgs := []any{org}
	if f.Source != "" {
		base = append(base, "a.source = ?")
		baseArgs = append(baseArgs, f.Source)
	}
	where, args := rangeClause("a.ts", f.Range, slices.Clone(base), slices.Clone(baseArgs))
	timed := len(where) > len(base)
	cond := strings.Join(where, " AND ")
	var match, not string
	// clean: every match of the expression in its index is an artifact
	// of the filter but for its time window (the org's, the source's):
	// so in artifacts_fts, whose words are the org's sources' own
	// (source.go), not in artifacts_addr (nor where a query of addresses
	// is counted as it would be there).
	var clean bool
	if s.addrReady && q.AddressesOnly() {
		// Addresses only: each is one key of artifacts_addr (addresses.go).
		tx.index = addrBase
		match, not = q.FTS5Addresses()
	} else if !q.Empty() {
		// Addresses read as phrases (their keys not written yet) are
		// counted as their keys would be: not clean, exclusions apart.
		split := q.AddressesOnly()
		var none bool
		if match, not, none, err = sourceQuery(ctx, tx, org, f.Source, q, split); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
		if none {
			return []*vigil.Artifact{}, 0, false, nil
		}
		clean = !split
	}
	var expr string
	switch {
	case match != "" && not != "":
		expr = "(" + match + ") NOT (" + not + ")"
	case match != "":
		expr = match
	}
	count := func(cond string, args ...any) (n int, err error) {
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts a WHERE `+cond, args...).Scan(&n)
		return n, err
	}
	// bounded counts rows of cond, stopping at windowScan.
	bounded := func(cond string, args ...any) (n int, err error) {
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM artifacts a WHERE `+cond+` LIMIT ?)`,
			append(slices.Clone(args), s.plan.windowScan)...).Scan(&n)
		return n, err
	}
	// The rowids the filter's window can hold.
	var lo, hi int64
	if expr != "" || not != "" {
		if lo, hi, err = rowidSpan(ctx, tx, org, f.Range); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
	}
	// The matches of the window's rowids, the statement and its
	// arguments.
	in := func(expr string, lo, hi int64) (string, []any) {
		m, margs := tx.match(expr, lo, hi)
		return " (" + m + ")", margs
	}

	var total int
	var estimated bool
	page := cond
	var dense bool
	var matches, stored int
	// floor: the page may be listed from the rowids its newest matches
	// reach back to (pageFloor), cond's args in filterArgs.
	var floor bool
	var filterArgs []any // cond's
	switch {
	case expr == "" && not != "":
		// Only exclusions: everything of the filter but the matches.
		m, margs := in(not, lo, hi)
		page = cond + " AND a.rowid NOT IN" + m
		args = append(args, margs...)
		total, err = count(page, args...)
	case expr == "":
		total, err = filterSize(ctx, tx, org, f.Source, f.Range)
	default:
		if !clean {
			err = tx.QueryRowContext(ctx, `SELECT NOT (EXISTS (SELECT 1 FROM artifacts WHERE org_id < ?1)
				OR EXISTS (SELECT 1 FROM artifacts WHERE org_id > ?1))`, org).Scan(&clean)
			if err != nil {
				break
			}
			clean = clean && f.Source == ""
		}
		// The matches among the window's rowids, counted as far as the
		// choices below need: enough to tell dense from sparse (against
		// the rowids of the window, about its artifacts), every one for
		// the total of the whole store, or exactUpTo and one more.
		span := int(max(hi-lo+1, 0))
		whole := clean && !timed
		upTo := max(span/s.plan.denseMatches, s.plan.driveMatches) + 1
		if whole {
			upTo = -1
			if exactUpTo > 0 {
				upTo = exactUpTo + 1
			}
		}
		var oldest int64
		if matches, oldest, err = countMatches(ctx, tx, expr, lo, hi, upTo); err != nil {
			break
		}
		if whole && upTo > 0 && matches >= upTo {
			if matches, err = estimate(matches, oldest, lo, hi, ftsCounter(ctx, tx, expr)); err != nil {
				break
			}
			estimated = true
		}
		stored = span
		filterArgs = slices.Clone(args)
		floor = clean
		m, margs := in(expr, lo, hi)
		args = append(args, margs...)
		dense = matches*s.plan.denseMatches >= span
		page = cond + " AND a.rowid IN" + m
		if whole {
			total = matches
			break
		}
		if matches <= s.plan.driveMatches {
			// Few matches in the window's rowids: reading them is
			// cheaper than walking a filter of any size.
			dense = false
			total, err = s.countDriven(ctx, tx, cond, filterArgs, expr, lo, hi)
			break
		}
		if clean {
			var ok bool
			if total, ok, err = s.interiorCount(ctx, tx, org, f.Range, cond, filterArgs, expr, lo, hi); err != nil || ok {
				break
			}
		}
		var n int
		if n, err = filterSize(ctx, tx, org, f.Source, f.Range); err != nil {
			break
		}
		if n < s.plan.windowScan {
			dense = true
			total, err = count(cond+" AND +a.rowid IN"+m, args...)
			break
		}
		if clean {
			// A wide window: the matches less those outside it, where
			// each side (before its start, from its end on) is an index
			// range of its own.
			var done bool
			if total, done, err = s.outsideCount(ctx, tx, org, f.Range, base, baseArgs, expr, bounded); err != nil || done {
				break
			}
		}
		fw := &filterWalk{tx: tx, org: org, source: f.Source, r: f.Range, expr: expr}
		total, estimated, err = s.filterCount(ctx, fw, cond, filterArgs, n, lo, hi, exactUpTo)
	}
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	cols, scan := artifactCols, s.scanArtifact
	if f.Preview {
		cols, scan = previewCols, s.scanPreview
	}
	list := func(page string, args ...any) ([]*vigil.Artifact, error) {
		rows, err := tx.QueryContext(ctx, `SELECT `+cols+` FROM artifacts a WHERE `+page+` ORDER BY a.ts DESC, a.id DESC LIMIT ? OFFSET ?`, append(args, pageArgs(f.Page)...)...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := []*vigil.Artifact{}
		for rows.Next() {
			a, err := scan(rows)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, rows.Err()
	}
	var out []*vigil.Artifact
	if !estimated && total <= pageArgs(f.Page)[1].(int) {
		// An exact total the page starts at or beyond: nothing to list.
		out = []*vigil.Artifact{}
	} else if dense {
		out, err = s.walkPage(ctx, tx, base, baseArgs, f.Range, expr, f.Page, matches, stored, list)
	} else {
		if floor {
			pa := pageArgs(f.Page)
			var from, since int64
			var ok bool
			if from, since, ok, err = pageFloor(ctx, tx, org, f.Range, cond, filterArgs, expr, lo, hi, pa[0].(int)+pa[1].(int)); err != nil {
				return nil, 0, false, wrap("SearchArtifacts", err)
			}
			if ok {
				// The time bound as well, in place of the window's start
				// (given two lower bounds SQLite may seek by the wider):
				// given the matches of the floor's rowids only, it still
				// walked the time index past them (130 ms against 3 at
				// 1 M).
				wr := f.Range
				wr.Start = fromNanos(since)
				where, wargs := rangeClause("a.ts", wr, slices.Clone(base), slices.Clone(baseArgs))
				m, margs := in(expr, from, hi)
				page, args = strings.Join(where, " AND ")+" AND a.rowid IN"+m, append(wargs, margs...)
			}
		}
		out, err = list(page, args...)
	}
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	return out, total, estimated, nil
}

// pageFloor returns the lowest rowid of [lo, hi] that the page of a
// query whose matches there are all of the org (clean) can hold: a page
// of the newest k matches by time, sorted, took every match of the
// rowids (the whole store's for a query without a window) first, 30 ms
// of CPU for 1,300 at 1 M artifacts. The newest k matches by rowid are
// k matches at or after the oldest time t among them, so the page's are
// all at or after t too, and every artifact of the org at or after t
// lies in the rowids of the spans from t's bucket on (rowidSpan). Fewer
// than k matches: ok false. It returns that rowid and t.
func pageFloor(ctx context.Context, tx *stx, org string, r vigil.TimeRange, cond string, args []any, expr string, lo, hi int64,
	k int) (from, t int64, ok bool, err error) {
	var n int
	var oldest sql.NullInt64
	m, margs := tx.match(expr, lo, hi)
	err = tx.QueryRowContext(ctx, `SELECT COUNT(*), MIN(ts) FROM (SELECT a.ts AS ts
			FROM (`+m+` ORDER BY r DESC LIMIT -1) m
			CROSS JOIN artifacts a ON a.rowid = m.r WHERE `+cond+` LIMIT ?)`, append(append(margs, args...), k)...).Scan(&n, &oldest)
	if err != nil || n < k || !oldest.Valid {
		return lo, 0, false, err
	}
	from, _, err = rowidSpan(ctx, tx, org, vigil.TimeRange{Start: fromNanos(oldest.Int64), End: r.End})
	return max(lo, from), oldest.Int64, err == nil, err
}

// countMatches counts the rowids in [lo, hi] matching expr, newest first,
// stopping at upTo (none when negative), and returns the oldest counted.
func countMatches(ctx context.Context, tx *stx, expr string, lo, hi int64, upTo int) (n int, oldest int64, err error) {
	m, margs := tx.match(expr, lo, hi)
	if upTo < 0 {
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+m+`)`, margs...).Scan(&n)
		return n, lo, err
	}
	var o sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT COUNT(*), MIN(r) FROM (`+m+` ORDER BY r DESC LIMIT ?)`,
		append(margs, upTo)...).Scan(&n, &o)
	return n, o.Int64, err
}

// estimateSamples is how many stretches of the older rowids an estimate
// samples.
const estimateSamples = 8

// estimate extrapolates n matches found newest first among the rowids
// [oldest, hi] to the span [lo, hi]: it counts (count, the matches among
// a stretch of rowids) the matches of estimateSamples stretches spread
// evenly over [lo, oldest), together as wide as [oldest, hi] (so that the
// estimate reads about as much as the newest matches did, whatever the
// store's size) and each a sixteenth of its share at most, and scales
// their count to the whole of [lo, oldest), so that a term more frequent
// in old artifacts than in new ones (or less) is estimated by its
// frequency throughout. At least n.
// At 30.6 M artifacts, eight such samples were within 1 % of the exact
// count for frequent terms of every source, 2 % for a phrase and 13 % for
// a term of a few busy periods (docs/benchmarks.md); four samples each as
// wide as [oldest, hi] were no closer and read four times as much.
func estimate(n int, oldest, lo, hi int64, count func(from, to int64) (int, error)) (int, error) {
	rest := oldest - lo // the rowids not counted
	if rest <= 0 || hi < oldest {
		return n, nil
	}
	step := rest / estimateSamples
	w := min((hi-oldest)/estimateSamples+1, step, max(step/16, 1024)) // a sixteenth of the rest at most, unless small
	if w <= 0 {
		// Fewer rowids left than samples: count them.
		c, err := count(lo, oldest-1)
		return n + c, err
	}
	seen := 0
	for k := int64(0); k < estimateSamples; k++ {
		from := lo + k*step + (step-w)/2
		c, err := count(from, from+w-1)
		if err != nil {
			return 0, err
		}
		seen += c
	}
	est := float64(n) + float64(seen)*float64(rest)/float64(estimateSamples*w)
	return max(n, int(math.Round(est))), nil
}

// ftsCounter counts the matches of expr among a stretch of rowids from
// the full-text index alone.
func ftsCounter(ctx context.Context, tx *stx, expr string) func(from, to int64) (int, error) {
	return func(from, to int64) (int, error) {
		n, _, err := countMatches(ctx, tx, expr, from, to, -1)
		return n, err
	}
}

// outsideCount counts the matches of expr within the window r of an org
// alone in the store as all its matches less those outside r, when the
// outside holds fewer than windowScan artifacts (done is false when it
// does not).
func (s *Store) outsideCount(ctx context.Context, tx *stx, org string, r vigil.TimeRange, base []string, baseArgs []any,
	expr string, bounded func(string, ...any) (int, error)) (total int, done bool, err error) {
	sides := outsideWindow(r, base, baseArgs)
	outside := 0
	for _, side := range sides {
		n, err := bounded(side.cond, side.args...)
		if err != nil {
			return 0, false, err
		}
		outside += n
	}
	if outside >= s.plan.windowScan {
		return 0, false, nil
	}
	if total, _, err = countMatches(ctx, tx, expr, math.MinInt64, math.MaxInt64, -1); err != nil {
		return 0, false, err
	}
	for _, side := range sides {
		lo, hi, err := rowidSpan(ctx, tx, org, side.span)
		if err != nil {
			return 0, false, err
		}
		var n int
		m, margs := tx.match(expr, lo, hi)
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts a WHERE `+side.cond+
			` AND +a.rowid IN (`+m+`)`,
			append(slices.Clone(side.args), margs...)...).Scan(&n)
		if err != nil {
			return 0, false, err
		}
		total -= n
	}
	return total, true, nil
}

// interiorCount counts the matches of expr in the time window r of an
// org alone in the store (cond and its args) mostly without reading their
// rows. The rowids of the window's whole buckets (a bucket the window
// cuts is whole when none of its artifacts lies outside the window),
// [ilo, ihi], hold only
// artifacts of the window except where the span of another bucket
// reaches into them: artifacts stored a little out of time order (several
// workers, sensors' clocks apart) make neighbouring buckets' spans
// overlap at their ends, and a backfill makes an old bucket's span cover
// the rowids written since. Those parts, and the window's rowids outside
// [ilo, ihi] (the buckets it cuts), are read to test each match's
// time; the full-text index alone counts the matches of the rest. ok is
// false when other buckets reach into [ilo, ihi] in more than
// maxMixedStretches places (the caller then reads every match).
func (s *Store) interiorCount(ctx context.Context, tx *stx, org string, r vigil.TimeRange, cond string, args []any,
	expr string, lo, hi int64) (total int, ok bool, err error) {
	// The window's whole buckets, and a bucket it cuts when none of the
	// org's artifacts in it lies outside the window: the last bucket of
	// "the last 24 hours" holds everything up to now, often the busiest
	// rowids of all.
	first, last := int64(math.MinInt64), int64(math.MaxInt64)
	if !r.Start.IsZero() {
		start := nanos(r.Start)
		b := bucketOf(start)
		if first, err = edgeBucket(ctx, tx, org, b, b+1, b*int64(spanBucket), start); err != nil {
			return 0, false, err
		}
	}
	if !r.End.IsZero() {
		end := nanos(r.End)
		b := bucketOf(end)
		if last, err = edgeBucket(ctx, tx, org, b, b-1, end, (b+1)*int64(spanBucket)); err != nil {
			return 0, false, err
		}
	}
	if first > last {
		return 0, false, nil
	}
	var ilo, ihi sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT MIN(min_rowid), MAX(max_rowid) FROM artifact_spans WHERE org_id = ? AND bucket BETWEEN ? AND ?`,
		org, first, last).Scan(&ilo, &ihi)
	if err != nil || !ilo.Valid {
		return 0, false, err
	}
	mixed, ok, err := mixedStretches(ctx, tx, org, first, last, ilo.Int64, ihi.Int64)
	if err != nil || !ok {
		return 0, false, err
	}
	// The window's rowids in order: its partial bucket below, the
	// interior's clean and mixed stretches, its partial bucket above.
	read := [][2]int64{{lo, ilo.Int64 - 1}, {ihi.Int64 + 1, hi}}
	from := ilo.Int64
	for _, m := range mixed {
		read = append(read, m)
		n, err := countClean(ctx, tx, expr, from, m[0]-1)
		if err != nil {
			return 0, false, err
		}
		total += n
		from = m[1] + 1
	}
	n, err := countClean(ctx, tx, expr, from, ihi.Int64)
	if err != nil {
		return 0, false, err
	}
	total += n
	for _, part := range read {
		if part[0] > part[1] {
			continue
		}
		n, err := s.countDriven(ctx, tx, cond, args, expr, part[0], part[1])
		if err != nil {
			return 0, false, err
		}
		total += n
	}
	return total, true, nil
}

// edgeBucket returns b, the bucket a bound of a time window cuts, when
// none of org's artifacts lies in b's part outside the window, [from, to)
// nanoseconds (the time index answers), and inward, the next bucket
// inside the window, when some do. Buckets before 1970 truncate toward
// zero and are never taken whole.
func edgeBucket(ctx context.Context, tx *stx, org string, b, inward, from, to int64) (int64, error) {
	if from < 0 {
		return inward, nil
	}
	var cut bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM artifacts WHERE org_id = ? AND ts >= ? AND ts < ?)`, org, from, to).Scan(&cut)
	if err != nil || cut {
		return inward, err
	}
	return b, nil
}

// maxMixedStretches bounds the stretches of a window's interior that
// interiorCount reads.
const maxMixedStretches = 64

// mixedStretches returns, in order and disjoint, the stretches of the
// rowids [ilo, ihi] that the spans of buckets other than org's [first,
// last] reach into; ok is false when there are more than
// maxMixedStretches.
func mixedStretches(ctx context.Context, tx *stx, org string, first, last, ilo, ihi int64) (out [][2]int64, ok bool, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT max(min_rowid, ?4), min(max_rowid, ?5) FROM artifact_spans
		WHERE NOT (org_id = ?1 AND bucket BETWEEN ?2 AND ?3) AND max_rowid >= ?4 AND min_rowid <= ?5 ORDER BY 1`,
		org, first, last, ilo, ihi)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var s [2]int64
		if err := rows.Scan(&s[0], &s[1]); err != nil {
			return nil, false, err
		}
		if n := len(out); n > 0 && s[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		if len(out) == maxMixedStretches {
			return nil, false, rows.Err()
		}
		out = append(out, s)
	}
	return out, rows.Err() == nil, rows.Err()
}

// countClean counts the matches of expr among the rowids [lo, hi] from
// the full-text index alone (0 when the stretch is empty).
func countClean(ctx context.Context, tx *stx, expr string, lo, hi int64) (int, error) {
	if lo > hi {
		return 0, nil
	}
	n, _, err := countMatches(ctx, tx, expr, lo, hi, -1)
	return n, err
}

// countDriven counts the artifacts of cond (and its args) among the
// rowids [lo, hi] matching expr by reading each match's row: CROSS JOIN
// keeps SQLite from walking cond's index instead, which it may prefer
// for a wide time window however few the matches.
func (s *Store) countDriven(ctx context.Context, tx *stx, cond string, args []any, expr string, lo, hi int64) (n int, err error) {
	if s.drivenHook != nil {
		s.drivenHook(lo, hi)
	}
	m, margs := tx.match(expr, lo, hi)
	err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+m+`) m
		CROSS JOIN artifacts a ON a.rowid = m.r WHERE `+cond, append(margs, args...)...).Scan(&n)
	return n, err
}

// walkPage lists the page of a query whose matches are dense among the
// filter's artifacts (base conditions, their args and the time range r;
// matches of about stored): it tests only the newest
// entries of the filter, w of them and every other of the same timestamp,
// gathering the matches among their rowids only, and tests four times as
// many while they hold fewer than the page needs. Every artifact outside
// such a window is older than all those in it, so that a window holding
// offset+limit matches holds the page. The first w is what the matches'
// density says the page needs, twice over.
func (s *Store) walkPage(ctx context.Context, tx *stx, base []string, baseArgs []any, r vigil.TimeRange, expr string, p vigil.Page,
	matches, stored int, list func(string, ...any) ([]*vigil.Artifact, error)) ([]*vigil.Artifact, error) {
	where, args := rangeClause("a.ts", r, slices.Clone(base), slices.Clone(baseArgs))
	cond := strings.Join(where, " AND ")
	pa := pageArgs(p)
	limit, offset := pa[0].(int), pa[1].(int)
	w := s.plan.walkWindow
	if matches > 0 {
		w = max(w, int(min(float64(math.MaxInt32), 2*float64(offset+limit)*float64(stored)/float64(matches))))
	}
	matching := func(lo, hi int64) (string, []any) {
		m, margs := tx.match(expr, lo, hi)
		return " AND +a.rowid IN (" + m + ")", margs
	}
	for {
		var from int64
		// The w-th newest timestamp, whatever the order among equal ones:
		// by ts alone, the time index answers without reading rows.
		err := tx.QueryRowContext(ctx, `SELECT a.ts FROM artifacts a WHERE `+cond+` ORDER BY a.ts DESC LIMIT 1 OFFSET ?`,
			append(slices.Clone(args), w-1)...).Scan(&from)
		if errors.Is(err, sql.ErrNoRows) {
			// The filter holds fewer than w: all of it.
			var lo, hi sql.NullInt64
			if err := tx.QueryRowContext(ctx, `SELECT MIN(a.rowid), MAX(a.rowid) FROM artifacts a WHERE `+cond, args...).Scan(&lo, &hi); err != nil {
				return nil, err
			}
			m, margs := matching(lo.Int64, hi.Int64)
			return list(cond+m, append(slices.Clone(args), margs...)...)
		}
		if err != nil {
			return nil, err
		}
		// The window's start replaces the filter's (from is within the
		// filter): given two lower bounds, SQLite may seek by the wider.
		wr := r
		wr.Start = fromNanos(from)
		ww, winArgs := rangeClause("a.ts", wr, slices.Clone(base), slices.Clone(baseArgs))
		win := strings.Join(ww, " AND ")
		var lo, hi int64
		if err := tx.QueryRowContext(ctx, `SELECT MIN(a.rowid), MAX(a.rowid) FROM artifacts a WHERE `+win, winArgs...).Scan(&lo, &hi); err != nil {
			return nil, err
		}
		m, margs := matching(lo, hi)
		out, err := list(win+m, append(winArgs, margs...)...)
		if err != nil || len(out) >= limit {
			return out, err
		}
		w *= 4
	}
}

// side is one part of the outside of a time window: a condition on
// artifacts a and its arguments, and its time range.
type side struct {
	cond string
	args []any
	span vigil.TimeRange
}

// outsideWindow returns the parts of org's artifacts (base and its args) that lie
// outside the window r: before its start, and from its end on.
func outsideWindow(r vigil.TimeRange, base []string, args []any) []side {
	var out []side
	if !r.Start.IsZero() {
		out = append(out, side{strings.Join(append(slices.Clone(base), "a.ts < ?"), " AND "), append(slices.Clone(args), nanos(r.Start)),
			vigil.TimeRange{End: r.Start}})
	}
	if !r.End.IsZero() {
		out = append(out, side{strings.Join(append(slices.Clone(base), "a.ts >= ?"), " AND "), append(slices.Clone(args), nanos(r.End)),
			vigil.TimeRange{Start: r.End}})
	}
	return out
}
