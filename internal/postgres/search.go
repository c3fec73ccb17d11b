package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

// SearchArtifacts returns a page of org's artifacts matching f, newest
// first by timestamp, and the number of all matches, exact. The query
// runs as a tsquery over the tsvector built by the same tokenizer
// (search.TSQuery, search.TSVector), so it matches what the SQLite
// store's FTS5 matches.
func (s *Store) SearchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int, error) {
	arts, total, _, err := s.SearchArtifactsEstimated(ctx, org, f, 0)
	return arts, total, err
}

// newestRows is how many of a filter's newest rows a search tests at
// most, first, for more than exactUpTo matches.
const newestRows = 100000

// sampleRows is about how many rows of the partitions a search's window
// reaches an estimate reads (TABLESAMPLE SYSTEM, whole blocks at random).
const sampleRows = 20000

// SearchArtifactsEstimated is SearchArtifacts, but its total is counted
// exactly up to exactUpTo matches only: counting every match of a
// frequent term, or every artifact of a list without a query, read
// millions of rows at 10 M artifacts (seconds each). Beyond, the total is
// estimated (estimated is true, the total more than exactUpTo) from a
// sample of about sampleRows rows of the partitions the time window
// reaches, the same blocks each time while the table is unchanged, so
// that identical searches give identical totals. exactUpTo ≤ 0 counts
// every total exactly.
func (s *Store) SearchArtifactsEstimated(ctx context.Context, org string, f vigil.ArtifactFilter, exactUpTo int) ([]*vigil.Artifact, int, bool, error) {
	q, err := search.Parse(f.Query)
	if err != nil {
		return nil, 0, false, err
	}
	var c conds
	c.add("org_id = ?", org)
	if f.Source != "" {
		c.add("source = ?", f.Source)
	}
	c.timeRange("ts", f.Range)
	filter := conds{where: c.where, args: slices.Clone(c.args)}
	// Addresses as their keys, once every vector holds its keys.
	render := (*search.Query).TSQuery
	if s.addressKeysReady(ctx) {
		render = (*search.Query).TSQueryAddressKeys
	}
	tsq := render(q)
	if tsq != "" {
		// Bound as a tsquery (pgx sends the text form), so the server
		// parses it once per statement, not once per row.
		c.add("search @@ ?::tsquery", tsq)
	}
	limit, pageArgs := c.page(f.Page)

	select {
	case s.searches <- struct{}{}:
		defer func() { <-s.searches }()
	case <-ctx.Done():
		return nil, 0, false, wrap("SearchArtifacts", ctx.Err())
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	defer conn.Release()
	if s.searchHook != nil {
		s.searchHook(ctx)
	}

	// The count and the page: in one round trip (one implicit
	// transaction), or, for a count by the GIN bitmap, the count first
	// and the page after it, by the keys it found when it found them all.
	// A sample of the partitions, when needed, in a transaction of its
	// own: before them if it chooses the count, else after them if the
	// total is past exactUpTo, which it then estimates.
	var setup txSetup
	if d, ok := ctx.Deadline(); ok {
		// The server stops the statements itself shortly after the
		// deadline: pgx gives up on the connection at the deadline, which
		// the server notices only when it next writes to it.
		setup.timeout = strconv.FormatInt(max(1, time.Until(d.Add(500*time.Millisecond)).Milliseconds()), 10)
	}
	// A list (no query) reads rows in the order of an index, or the
	// table, and stops: the source column of the full-text index would
	// otherwise offer the planner a bitmap of every row of the source,
	// built whole before the first is read (266 ms for the count of the
	// firewall's first 10,001 rows at 10 M, where reading them took 18).
	setup.noBitmap = tsq == ""
	upTo := `SELECT COUNT(*) FROM (SELECT 1 FROM artifacts WHERE ` + c.where + ` LIMIT ` + strconv.Itoa(exactUpTo+1) + `) m`
	count, countArgs := upTo, c.args
	// smp, when taken before the count, chose it and is the estimate
	// if the total is more than exactUpTo.
	var smp *sample
	newest := false
	// bitmap: the count up to exactUpTo of a query reads the GIN index's
	// bitmap of its matches, whatever the planner expects: its estimate of
	// a word excluded from another, or of two words that are seldom
	// together, takes them as independent, so that it may expect to find
	// exactUpTo+1 matches early in the table (or in the time index) where
	// it must read most of it: 0.8 s for "sshd -failed" in 614,000 rows.
	bitmap := tsq != "" && exactUpTo > 0
	// countUpTo: how far the bitmap's count goes; past exactUpTo when
	// the planner's statistics bound the matches to countAllUpTo times
	// exactUpTo (see countAllUpTo).
	countUpTo := exactUpTo
	switch {
	case exactUpTo <= 0:
		count = `SELECT COUNT(*) FROM artifacts WHERE ` + c.where
	case tsq != "":
		// The planner's statistics bound the query's share of the
		// filter's rows from above. Only when they let the newest rows
		// hold more matches than exactUpTo is it worth a sample, which
		// says how many they hold: testing the newest rows is then
		// cheaper than the GIN index's bitmap of every match, which the
		// count up to exactUpTo builds first (330-540 ms for two
		// frequent words at 10 M); else, as for a word excluded from a
		// frequent one (which the planner's statistics cannot bound),
		// testing them only adds to the count.
		density, rows, err := densityBound(ctx, conn.Conn(), filter, q, render)
		if err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
		// (A query of exclusions only has no such bound: its density is
		// the 0 of no alternative.)
		if len(q.Any) > 0 && density*rows <= float64(countAllUpTo*exactUpTo) {
			countUpTo = countAllUpTo * exactUpTo
		}
		if density*float64(s.newestRows) <= float64(exactUpTo) {
			break
		}
		if smp, err = takeSample(ctx, conn.Conn(), setup, filter, tsq, f.Range, s.sampleRows); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
		switch {
		case smp.whole:
			count, bitmap = `SELECT COUNT(*) FROM artifacts WHERE `+c.where, false
		case smp.beyond(exactUpTo):
			// No count: the sample's estimate is the total.
			count, bitmap = "", false
		case float64(smp.hits)*float64(s.newestRows) > newestMargin*float64(exactUpTo+1)*float64(smp.rows):
			// The matches among the filter's newest rows, stopping at
			// the exactUpTo+1st.
			newest, bitmap = true, false
			count = `SELECT COUNT(*) FROM (SELECT 1 FROM (SELECT search FROM artifacts WHERE ` + filter.where +
				` ORDER BY ts DESC, id DESC LIMIT ` + strconv.Itoa(s.newestRows) + `) r WHERE search @@ $` + strconv.Itoa(len(filter.args)+1) +
				`::tsquery LIMIT ` + strconv.Itoa(exactUpTo+1) + `) m`
			countArgs = append(slices.Clone(filter.args), tsq)
		}
	}
	cols, scan := artifactCols, scanArtifact
	if f.Preview {
		cols, scan = previewCols, scanPreview
	}
	page := `SELECT ` + cols + ` FROM artifacts WHERE ` + c.where + ` ORDER BY ts DESC, id DESC` + limit
	var out []*vigil.Artifact
	var total int
	if bitmap {
		// The count also keeps the keys of the newest offset+limit
		// matches it found. When they were all the matches (the total is
		// exact), the page is those, read by key: the page's own
		// statement would read the matches again (twice the work for a
		// phrase within a window), or, for a rare word the planner takes
		// for a frequent one (a lexeme outside its statistics), walk the
		// time index until it found limit of them (450,000 rows for the
		// 919 matches of an address at 8.4 M).
		lim, off := pageArgs[len(pageArgs)-2].(int), f.Page.Offset
		k := strconv.Itoa(lim + off)
		var tss []int64
		var ids []string
		err = queryWithin(ctx, conn.Conn(), txSetup{timeout: setup.timeout, bitmap: true},
			`SELECT COUNT(*), (array_agg(ts ORDER BY ts DESC, id DESC))[1:`+k+`], (array_agg(id ORDER BY ts DESC, id DESC))[1:`+k+
				`] FROM (SELECT ts, id FROM artifacts WHERE `+c.where+` LIMIT `+strconv.Itoa(countUpTo+1)+`) m`, c.args, &total, &tss, &ids)
		switch {
		case err != nil:
		case total <= countUpTo:
			// Exact, whatever exactUpTo.
			exactUpTo = max(exactUpTo, total)
			from := min(off, len(ids))
			out, err = readArtifacts(ctx, conn.Conn(), setup, scan, `SELECT `+cols+` FROM artifacts WHERE org_id = $1 AND (ts, id) IN
				(SELECT * FROM unnest($2::bigint[], $3::text[])) ORDER BY ts DESC, id DESC`, org, tss[from:], ids[from:])
		default:
			total = min(total, exactUpTo+1)
			out, err = readArtifacts(ctx, conn.Conn(), setup, scan, page, pageArgs...)
		}
	} else {
		// The page and the count in one round trip.
		b := &pgx.Batch{}
		setup.queue(b)
		b.Queue(page, pageArgs...)
		if count != "" {
			b.Queue(count, countArgs...)
		}
		out, total, err = func() ([]*vigil.Artifact, int, error) {
			br := conn.SendBatch(ctx, b)
			defer br.Close()
			if err := setup.read(br); err != nil {
				return nil, 0, err
			}
			rows, err := br.Query()
			if err != nil {
				return nil, 0, err
			}
			out, err := scanAll(rows, scan)
			if err != nil {
				return nil, 0, err
			}
			if count == "" {
				return out, exactUpTo + 1, nil
			}
			var total int
			err = br.QueryRow().Scan(&total)
			return out, total, err
		}()
	}
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	if newest && total <= exactUpTo {
		if total, err = countWithin(ctx, conn.Conn(), txSetup{timeout: setup.timeout, bitmap: true}, upTo, c.args); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
	}
	if exactUpTo <= 0 || total <= exactUpTo || smp != nil && smp.whole {
		return out, total, false, nil
	}
	if smp == nil {
		if smp, err = takeSample(ctx, conn.Conn(), setup, filter, tsq, f.Range, s.sampleRows); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
	}
	if smp.whole {
		// Partitions small enough to count.
		if total, err = countWithin(ctx, conn.Conn(), setup, `SELECT COUNT(*) FROM artifacts WHERE `+c.where, c.args); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
		return out, total, false, nil
	}
	return out, max(exactUpTo+1, int(math.Round(float64(smp.hits)*100/smp.pct))), true, nil
}

// A sample leaves no doubt that a query's total is past exactUpTo, and
// the search counts none of its matches, when the blocks of the sample
// holding matches are too many for a total of at most exactUpTo. Such a
// total lies in at most exactUpTo blocks, and TABLESAMPLE SYSTEM draws
// each block on its own with the same chance (pct/100), so the sample's
// blocks holding matches are then a binomial count of mean at most
// mu = exactUpTo·pct/100: beyond is at least mu + 6√mu + 10 of them, a
// chance below one in a million of saying so wrongly, however the
// matches crowd their blocks (which counting matches, not blocks, could
// not tell). The count up to exactUpTo+1 of two frequent words read the
// GIN index's postings of both, or the newest rows until it had found
// them, to tell what a sample of 20,000 rows already told: at 10 M
// artifacts, 1.6 M matches of "failed password" against a bound of
// 10,000.
func (smp *sample) beyond(exactUpTo int) bool {
	if smp.whole {
		return false
	}
	mu := float64(exactUpTo) * smp.pct / 100
	return float64(smp.hitBlocks) >= mu+6*math.Sqrt(mu)+10 && float64(smp.hits)*100/smp.pct > float64(exactUpTo)
}

// countAllUpTo: when the planner's statistics bound a query's matches
// (densityBound) to at most countAllUpTo times exactUpTo, the count by
// the GIN bitmap goes on up to that many, keeping the keys of the page:
// if they are all, the total is exact and the page is read by key, and
// neither the page's own statement nor a sample runs. Before, a count
// stopped at exactUpTo+1, then the page read every match again (the
// planner takes a phrase's words as independent, so expects a few rows
// from the GIN bitmap, and sorts them all for the newest) and a sample
// of 20,000 rows estimated the total: at 10 M artifacts, "authentication
// failure" over 30 days, 10,001 + 22,724 rows fetched and a sample, for
// a total of 22,724 that one pass over the matches counts.
const countAllUpTo = 4

// newestMargin is how many times more matches than exactUpTo a sample
// must let the newest rows hold for a search to test them first: the
// newest rows may hold fewer than the partitions' sample says.
const newestMargin = 1.25

// sample is what a sample of the partitions a search's window reaches
// holds: rows of the filter, hits among them, and the share of the
// partitions' rows it read (pct, in percent). whole is true, and nothing
// sampled, when those partitions hold fewer than twice sampleRows: they
// are counted instead.
type sample struct {
	whole      bool
	rows, hits int
	// hitBlocks: the blocks of the sample holding hits.
	hitBlocks int
	pct       float64
}

// takeSample samples about sampleRows rows of the partitions the time
// window r reaches (TABLESAMPLE SYSTEM, whole blocks at random, the same
// blocks each time while the table is unchanged, so that identical
// searches give identical totals), counting those of filter and those
// of them matching tsq (all of them when tsq is empty).
func takeSample(ctx context.Context, conn *pgx.Conn, setup txSetup, filter conds, tsq string, r vigil.TimeRange, sampleRows int) (*sample, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !r.Start.IsZero() {
		lo = nanos(r.Start)
	}
	if !r.End.IsZero() {
		hi = nanos(r.End)
	}
	// The partitions' rows, as the planner's statistics have them (their
	// size in pages for one never analyzed), of the months r reaches and
	// of the default partition.
	rows := 0.0
	lom, hasLo := monthOf(lo)
	him, hasHi := monthOf(hi - 1)
	err := conn.QueryRow(ctx, `SELECT COALESCE(SUM(CASE WHEN c.reltuples >= 0 THEN c.reltuples ELSE c.relpages * 20 END), 0)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'artifacts'::regclass AND (c.relname = 'artifacts_default' OR
			(c.relname >= $1 AND c.relname <= $2))`,
		partitionBound(lom, hasLo, "artifacts_p000000"), partitionBound(him, hasHi, "artifacts_p999999")).Scan(&rows)
	if err != nil {
		return nil, err
	}
	smp := &sample{pct: 100 * float64(sampleRows) / max(rows, 1)}
	if smp.pct >= 50 {
		smp.whole = true
		return smp, nil
	}
	hits, hitBlocks, args := `COUNT(*)`, `COUNT(DISTINCT (tableoid, (ctid::text::point)[0]))`, filter.args
	if tsq != "" {
		match := ` FILTER (WHERE search @@ $` + strconv.Itoa(len(filter.args)+1) + `::tsquery)`
		hits, hitBlocks = hits+match, hitBlocks+match
		args = append(slices.Clone(filter.args), tsq)
	}
	err = queryWithin(ctx, conn, setup, `SELECT `+hits+`, `+hitBlocks+`, COUNT(*) FROM artifacts TABLESAMPLE SYSTEM (`+
		strconv.FormatFloat(smp.pct, 'f', 6, 64)+`) REPEATABLE (0) WHERE `+filter.where, args, &smp.hits, &smp.hitBlocks, &smp.rows)
	return smp, err
}

// partitionBound is the name of month m's partition, or def when the
// window is open on that side (or beyond the months partitions cover).
func partitionBound(m int, ok bool, def string) string {
	if !ok {
		return def
	}
	return partitionName(m)
}

// bitmapOnly makes the statements after it in its transaction read
// artifacts by bitmaps of their indexes only.
const bitmapOnly = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true)`

// searchWorkMem raises work_mem to 64 MB, if lower, for the
// transaction. A bitmap of a query's matches larger than work_mem goes
// lossy, a bit per block instead of per row, and every row of such a
// block is then read and tested again: at PostgreSQL's default of 4 MB,
// past about 70,000 blocks (a word on 1 % of 10 M artifacts, whose
// blocks hold a dozen rows each). 64 MB keeps a bitmap exact up to
// about a million blocks; a
// search holds it while it runs, and searches at once are bounded
// (Options.MaxSearches).
const searchWorkMem = `SELECT set_config('work_mem', GREATEST(pg_size_bytes(current_setting('work_mem')), 64 << 20) / 1024 || 'kB', true)`

// txSetup is what a search sets in a transaction before its statements
// (searchWorkMem always).
type txSetup struct {
	timeout  string // statement_timeout in milliseconds, if not empty
	bitmap   bool   // bitmapOnly
	noBitmap bool   // enable_bitmapscan off
}

// queue queues the statements of t into b.
func (t txSetup) queue(b *pgx.Batch) {
	b.Queue(searchWorkMem)
	if t.timeout != "" {
		b.Queue(`SELECT set_config('statement_timeout', $1, true)`, t.timeout)
	}
	if t.bitmap {
		b.Queue(bitmapOnly)
	}
	if t.noBitmap {
		b.Queue(`SELECT set_config('enable_bitmapscan', 'off', true)`)
	}
}

// read reads the results of the statements of t from br.
func (t txSetup) read(br pgx.BatchResults) error {
	for _, on := range []bool{true, t.timeout != "", t.bitmap, t.noBitmap} {
		if !on {
			continue
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// readArtifacts reads the artifacts of query, of rows scan reads, in a
// transaction of its own, set up as setup says.
func readArtifacts(ctx context.Context, conn *pgx.Conn, setup txSetup, scan func(pgx.Row) (*vigil.Artifact, error), query string, args ...any) ([]*vigil.Artifact, error) {
	b := &pgx.Batch{}
	setup.queue(b)
	b.Queue(query, args...)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if err := setup.read(br); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	return scanAll(rows, scan)
}

// scanAll reads every row of rows with scan, and closes rows.
func scanAll(rows pgx.Rows, scan func(pgx.Row) (*vigil.Artifact, error)) ([]*vigil.Artifact, error) {
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

// countWithin runs the count query in a transaction of its own, set up
// as setup says.
func countWithin(ctx context.Context, conn *pgx.Conn, setup txSetup, query string, args []any) (int, error) {
	var n int
	err := queryWithin(ctx, conn, setup, query, args, &n)
	return n, err
}

// queryWithin runs query, of one row scanned into dest, in a
// transaction of its own, set up as setup says.
func queryWithin(ctx context.Context, conn *pgx.Conn, setup txSetup, query string, args []any, dest ...any) error {
	b := &pgx.Batch{}
	setup.queue(b)
	b.Queue(query, args...)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if err := setup.read(br); err != nil {
		return err
	}
	return br.QueryRow().Scan(dest...)
}

// densityBound is at most the share of the filter's rows matching q, and
// the filter's rows, by
// the planner's statistics: the sum over q's alternatives of the share of
// the rarest term of each (the planner's own estimate of an AND assumes
// its words independent, when "failed" and "password" are in the same
// lines).
func densityBound(ctx context.Context, conn *pgx.Conn, filter conds, q *search.Query, render func(*search.Query) string) (float64, float64, error) {
	all, err := planRows(ctx, conn, filter)
	if err != nil || all < 1 {
		return 1, all, err
	}
	bound := 0.0
	for _, g := range q.Any {
		rarest := math.Inf(1)
		for _, t := range g {
			c := conds{where: filter.where, args: slices.Clone(filter.args)}
			c.add("search @@ ?::tsquery", render(&search.Query{Any: [][]search.Term{{t}}}))
			n, err := planRows(ctx, conn, c)
			if err != nil {
				return 0, all, err
			}
			rarest = min(rarest, n)
		}
		bound += rarest
	}
	return min(bound/all, 1), all, nil
}

// planRows is how many rows of artifacts the planner expects c to select.
func planRows(ctx context.Context, conn *pgx.Conn, c conds) (float64, error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT 1 FROM artifacts WHERE `+c.where, c.args...).Scan(&raw); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		return 0, fmt.Errorf("plan: %w", err)
	}
	if len(plan) == 0 {
		return 0, fmt.Errorf("plan: none in %q", raw)
	}
	return plan[0].Plan.Rows, nil
}
