package postgres

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// minWindow is the shortest window of time pageByWindows reads.
const minWindow = int64(time.Minute)

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
// "authentication failure" over 30 days at 10 M, to return 50.
func pageByWindows(ctx context.Context, conn *pgx.Conn, setup txSetup, scan func(pgx.Row) (*vigil.Artifact, error), cols string,
	c, filter conds, p vigil.Page, f found) ([]*vigil.Artifact, error) {
	pa := pageArgs(p)
	lim, off := pa[0].(int), pa[1].(int)
	k := lim + off
	// The filter's newest artifact, by the time index.
	var newest int64
	err := queryWithin(ctx, conn, txSetup{timeout: setup.timeout, noBitmap: true},
		`SELECT ts FROM artifacts WHERE `+filter.where+` ORDER BY ts DESC, id DESC LIMIT 1`, filter.args, &newest)
	if errors.Is(err, pgx.ErrNoRows) {
		return []*vigil.Artifact{}, nil
	}
	if err != nil {
		return nil, err
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
		rows, err := readArtifacts(ctx, conn, txSetup{timeout: setup.timeout, bitmap: true}, scan,
			`SELECT `+cols+` FROM artifacts WHERE `+wc.where+` ORDER BY ts DESC, id DESC LIMIT `+strconv.Itoa(k-len(out)), wc.args...)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
		if len(out) >= k || last {
			return out[min(off, len(out)):], nil
		}
		to, w = from, min(w, math.MaxInt64/8)*4
	}
}
