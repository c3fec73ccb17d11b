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

// newestRows is how many of a filter's newest rows a search tests first
// for more than exactUpTo matches.
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

	// The count and the page in one round trip (one implicit
	// transaction), and the estimate, when needed, in a second.
	b := &pgx.Batch{}
	timeout := ""
	if d, ok := ctx.Deadline(); ok {
		// The server stops the statements itself shortly after the
		// deadline: pgx gives up on the connection at the deadline, which
		// the server notices only when it next writes to it.
		timeout = strconv.FormatInt(max(1, time.Until(d.Add(500*time.Millisecond)).Milliseconds()), 10)
		b.Queue(`SELECT set_config('statement_timeout', $1, true)`, timeout)
	}
	upTo := `SELECT COUNT(*) FROM (SELECT 1 FROM artifacts WHERE ` + c.where + ` LIMIT ` + strconv.Itoa(exactUpTo+1) + `) m`
	newest := false
	if exactUpTo > 0 && tsq != "" {
		// Worth it only when the planner's statistics let the newest
		// rows hold more matches than exactUpTo: else testing them all
		// first only adds to the count (a term of a few percent of its
		// source's lines, a phrase in a window).
		density, err := densityBound(ctx, conn.Conn(), filter, q, render)
		if err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
		newest = density*newestRows > float64(exactUpTo)
	}
	switch {
	case newest:
		// The matches among the filter's newest rows first: a frequent
		// term has more than exactUpTo of them, found in the time index
		// without the bitmap of all its matches that the count up to
		// exactUpTo builds in the GIN index first (330-540 ms for two
		// frequent words at 10 M).
		b.Queue(`SELECT COUNT(*) FILTER (WHERE search @@ $`+strconv.Itoa(len(filter.args)+1)+`::tsquery) FROM (SELECT search FROM artifacts WHERE `+
			filter.where+` ORDER BY ts DESC, id DESC LIMIT `+strconv.Itoa(newestRows)+`) r`, append(slices.Clone(filter.args), tsq)...)
	case exactUpTo > 0:
		b.Queue(upTo, c.args...)
	default:
		b.Queue(`SELECT COUNT(*) FROM artifacts WHERE `+c.where, c.args...)
	}
	cols, scan := artifactCols, scanArtifact
	if f.Preview {
		cols, scan = previewCols, scanPreview
	}
	b.Queue(`SELECT `+cols+` FROM artifacts WHERE `+c.where+` ORDER BY ts DESC, id DESC`+limit, pageArgs...)
	out, total, err := func() ([]*vigil.Artifact, int, error) {
		br := conn.SendBatch(ctx, b)
		defer br.Close()
		if timeout != "" {
			if _, err := br.Exec(); err != nil {
				return nil, 0, err
			}
		}
		var total int
		if err := br.QueryRow().Scan(&total); err != nil {
			return nil, 0, err
		}
		rows, err := br.Query()
		if err != nil {
			return nil, 0, err
		}
		defer rows.Close()
		out := []*vigil.Artifact{}
		for rows.Next() {
			a, err := scan(rows)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, a)
		}
		return out, total, rows.Err()
	}()
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	if newest && total <= exactUpTo {
		if total, err = countWithin(ctx, conn.Conn(), timeout, upTo, c.args); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
	}
	if exactUpTo <= 0 || total <= exactUpTo {
		return out, total, false, nil
	}
	total, estimated, err := estimateTotal(ctx, conn.Conn(), timeout, c, f.Range, exactUpTo, s.sampleRows)
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	return out, total, estimated, nil
}

// estimateTotal estimates how many rows match c, known to be more than
// exactUpTo, from a sample of about sampleRows rows of the partitions
// the time window r reaches; when those hold fewer than twice as many, it
// counts them all instead (estimated false).
func estimateTotal(ctx context.Context, conn *pgx.Conn, timeout string, c conds, r vigil.TimeRange, exactUpTo, sampleRows int) (int, bool, error) {
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
		return 0, false, err
	}
	pct := 100 * float64(sampleRows) / max(rows, 1)
	if pct >= 50 {
		n, err := countWithin(ctx, conn, timeout, `SELECT COUNT(*) FROM artifacts WHERE `+c.where, c.args)
		return n, false, err
	}
	hits, err := countWithin(ctx, conn, timeout, `SELECT COUNT(*) FROM artifacts TABLESAMPLE SYSTEM (`+
		strconv.FormatFloat(pct, 'f', 6, 64)+`) REPEATABLE (0) WHERE `+c.where, c.args)
	if err != nil {
		return 0, false, err
	}
	return max(exactUpTo+1, int(math.Round(float64(hits)*100/pct))), true, nil
}

// partitionBound is the name of month m's partition, or def when the
// window is open on that side (or beyond the months partitions cover).
func partitionBound(m int, ok bool, def string) string {
	if !ok {
		return def
	}
	return partitionName(m)
}

// countWithin runs the count query with the search's statement timeout
// (none when empty), in a transaction of its own.
func countWithin(ctx context.Context, conn *pgx.Conn, timeout, query string, args []any) (int, error) {
	b := &pgx.Batch{}
	if timeout != "" {
		b.Queue(`SELECT set_config('statement_timeout', $1, true)`, timeout)
	}
	b.Queue(query, args...)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if timeout != "" {
		if _, err := br.Exec(); err != nil {
			return 0, err
		}
	}
	var n int
	err := br.QueryRow().Scan(&n)
	return n, err
}

// densityBound is at most the share of the filter's rows matching q, by
// the planner's statistics: the sum over q's alternatives of the share of
// the rarest term of each (the planner's own estimate of an AND assumes
// its words independent, when "failed" and "password" are in the same
// lines).
func densityBound(ctx context.Context, conn *pgx.Conn, filter conds, q *search.Query, render func(*search.Query) string) (float64, error) {
	all, err := planRows(ctx, conn, filter)
	if err != nil || all < 1 {
		return 1, err
	}
	bound := 0.0
	for _, g := range q.Any {
		rarest := math.Inf(1)
		for _, t := range g {
			c := conds{where: filter.where, args: slices.Clone(filter.args)}
			c.add("search @@ ?::tsquery", render(&search.Query{Any: [][]search.Term{{t}}}))
			n, err := planRows(ctx, conn, c)
			if err != nil {
				return 0, err
			}
			rarest = min(rarest, n)
		}
		bound += rarest
	}
	return min(bound/all, 1), nil
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
