package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// minWindow is the shortest window of time pageByWindows reads.
const minWindow = int64(time.Minute)

// denseMatches is the share of the rows, among those of the matches a
// count found, past which pageByWindows leaves the page to the planner:
// a walk of the time index then tests fewer rows for the page (offset+
// limit over the share) than a bitmap of a window holding twice the page
// reads, a block of a dozen rows or so for each match (at 10 M
// artifacts, an address on 3.7 % of the rows: the walk tests 1,400
// rows for a page of 50).
const denseMatches = 0.02

// found is what the count of a query up to exactUpTo+1 found of its
// matches, when they were more than exactUpTo: how many (n), the oldest
// and newest timestamps among them, and the timestamp of the k-th newest
// of them (bound), where k is the page's offset plus its limit.
type found struct {
	n                     int
	oldest, newest, bound int64
}

// pageByWindows reads page p of the matches of c, a query's conditions
// with its filter's (filter: those of the filter alone), that are more
// than a count found (f), newest window of time first: the matches of
// the newest window that the density of f's matches says holds twice
// the page, then, while fewer than offset+limit are read, of the window
// before it, four times as long, and so on. The windows end at the
// filter's newest artifact, and start no earlier than f.bound, since
// the window from it holds offset+limit of the matches f found at
// least. Each window is read by the GIN index's bitmap of the matches
// ANDed with the time index's blocks of the window (bitmaps only).
// Before, the page was read by the planner's choice, the bitmap of
// every match sorted for the newest: all ~18,600 matches of
// "authentication failure" over 30 days at 10 M, to return 50. When
// the matches found are denseMatches of the filter's rows of their
// time span or more (by the planner's statistics), it reads nothing and
// reports false: the planner's walk of the time index is the cheaper;
// and so when the planner would read a partition's rows of the first
// window without the GIN index (andsMatches).
func pageByWindows(ctx context.Context, conn *pgx.Conn, setup txSetup, scan func(pgx.Row) (*vigil.Artifact, error), cols string,
	c, filter conds, p vigil.Page, f found) ([]*vigil.Artifact, bool, error) {
	span := conds{where: filter.where, args: slices.Clone(filter.args)}
	span.add("ts >= ?", f.oldest)
	span.add("ts <= ?", f.newest)
	rows, err := planRows(ctx, conn, span)
	if err != nil || float64(f.n) >= denseMatches*rows {
		return nil, false, err
	}
	pa := pageArgs(p)
	lim, off := pa[0].(int), pa[1].(int)
	k := lim + off
	// The filter's newest artifact, by the time index.
	var newest int64
	err = queryWithin(ctx, conn, txSetup{timeout: setup.timeout, noBitmap: true},
		`SELECT ts FROM artifacts WHERE `+filter.where+` ORDER BY ts DESC, id DESC LIMIT 1`, filter.args, &newest)
	if errors.Is(err, pgx.ErrNoRows) {
		return []*vigil.Artifact{}, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	// Twice the page at the density of the matches found.
	w := max(minWindow, int64(min(float64(math.MaxInt64/8), 2*float64(k)*float64(max(f.newest-f.oldest, 1))/float64(max(f.n, 1)))))
	to := newest + 1
	out := []*vigil.Artifact{}
	for {
		from := to - w
		last := from > to || from <= f.bound
		if last {
			from = f.bound
		}
		wc := conds{where: c.where, args: slices.Clone(c.args)}
		wc.add("ts >= ?", from)
		wc.add("ts < ?", to)
		query := `SELECT ` + cols + ` FROM artifacts WHERE ` + wc.where + ` ORDER BY ts DESC, id DESC LIMIT ` + strconv.Itoa(k-len(out))
		bitmaps := txSetup{timeout: setup.timeout, bitmap: true}
		if len(out) == 0 && to == newest+1 {
			// The newest window is where the planner's statistics may
			// not reach (rows stored since the last ANALYZE, a month's
			// new partition): it then expects a row or so in the window
			// and reads its every row by the time index's bitmap alone,
			// where the bitmap of every match would read fewer.
			if ok, err := andsMatches(ctx, conn, bitmaps, query, wc.args); err != nil || !ok {
				return nil, false, err
			}
		}
		rows, err := readArtifacts(ctx, conn, bitmaps, scan, query, wc.args...)
		if err != nil {
			return nil, false, err
		}
		out = append(out, rows...)
		if len(out) >= k || last {
			return out[min(off, len(out)):], true, nil
		}
		to, w = from, min(w, math.MaxInt64/8)*4
	}
}

// andsMatches reports whether the plan of query (its args, under setup)
// reads every partition's rows by the GIN index's bitmap of the
// matches (ANDed with another or not), none by the time index's alone.
func andsMatches(ctx context.Context, conn *pgx.Conn, setup txSetup, query string, args []any) (bool, error) {
	var raw []byte
	if err := queryWithin(ctx, conn, setup, `EXPLAIN (FORMAT JSON) `+query, args, &raw); err != nil {
		return false, err
	}
	var plan []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		return false, fmt.Errorf("plan: %q: %v", raw, err)
	}
	return plan[0].Plan.readsGIN(), nil
}

// planNode is the part of a node of EXPLAIN (FORMAT JSON) that
// andsMatches reads.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Children []planNode `json:"Plans"`
}

// readsGIN reports whether every scan of a table under n reads by a
// bitmap holding the GIN index's.
func (n planNode) readsGIN() bool {
	if n.Type == "Bitmap Heap Scan" {
		return slices.ContainsFunc(n.Children, planNode.hasGIN)
	}
	if n.Relation != "" {
		return false
	}
	for _, c := range n.Children {
		if !c.readsGIN() {
			return false
		}
	}
	return true
}

// hasGIN reports whether n or a node under it reads the GIN index of
// artifacts (artifacts_source_search, named "…_search_idx" in each
// partition).
func (n planNode) hasGIN() bool {
	return n.Type == "Bitmap Index Scan" && strings.HasSuffix(n.Index, "_search_idx") || slices.ContainsFunc(n.Children, planNode.hasGIN)
}
