package vlogs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/vigil-soc/vigil"
)

// A page of a search, newest first. Ordered by _time alone, VictoriaLogs
// reads only the matches' times and keeps the newest (61 ms for the 50
// newest of 10 M entries); ordered by (_time, ts, id), the order that
// makes pages stable when times tie, it reads and sorts every match's id
// (11 s). So a page is read in two queries: the times of the first
// offset+limit matches, by _time alone, say the span of times the page
// lies in and how many matches are newer than it; then the matches in
// that span only are sorted by (_time, ts, id) and the page cut from
// them. The first query looks at the newest hour, then day, then week,
// first (newestTimes).

// pageWindows are the spans, ending now (and open towards the future),
// in which newestTimes looks for a page's matches before it looks at all
// of them: VictoriaLogs reads every match to keep the newest n, so a
// term that is rare but spread over the whole store (a word within one
// source, 2,477 matches in 0.9 M entries: 438 ms of CPU) costs as much
// as its count, where the newest day alone holds the page (23 ms). The
// hour first: a frequent term's matches of a day are as many as the
// store holds in a day (3.3 M entries a day at 100 M over 30 days), of an
// hour 24 times fewer.
var pageWindows = []time.Duration{time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// newestTimes returns the _time of the newest n entries matching filter,
// newest first: from the narrowest window ending at now that holds n of
// them, else from all of them. Every entry outside a window is older than
// every entry in it, so the n newest of a window that holds n are the n
// newest of all.
// total, the filter's total matches, skips the windows when they
// cannot hold n.
func (s *Store) newestTimes(ctx context.Context, t Tenant, filter string, n, total int, now time.Time) ([]time.Time, error) {
	var times []time.Time
	first := 0
	if total <= n {
		first = len(pageWindows)
	}
	for i := first; i <= len(pageWindows); i++ {
		q := filter
		if i < len(pageWindows) {
			q += " _time:>=" + rfc(now.Add(-pageWindows[i]))
		}
		times = times[:0]
		err := s.c.query(ctx, t, q+" | fields _time | sort by (_time desc) limit "+strconv.Itoa(n), func(row map[string]string) error {
			tm, err := time.Parse(time.RFC3339Nano, row["_time"])
			if err != nil {
				return fmt.Errorf("entry time %q: %w", row["_time"], err)
			}
			times = append(times, tm)
			return nil
		})
		if err != nil || len(times) >= n {
			return times, err
		}
	}
	return times, nil
}

// page reads the page p of org's entries matching filter (total of
// them, perhaps estimated), newest first.
func (s *Store) page(ctx context.Context, org string, t Tenant, filter string, total int, p vigil.Page, previews bool) ([]*vigil.Artifact, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = vigil.DefaultLimit
	}
	off := max(p.Offset, 0)
	times, err := s.newestTimes(ctx, t, filter, off+limit, total, time.Now())
	if err != nil {
		return nil, err
	}
	if len(times) <= off {
		return []*vigil.Artifact{}, nil
	}
	hi, lo := times[off], times[min(off+limit, len(times))-1]
	newer := 0 // matches before the page that are newer than its newest
	for _, tm := range times[:off] {
		if tm.After(hi) {
			newer++
		}
	}
	span := " _time:[" + rfc(lo) + ", " + rfc(hi) + "]"
	return s.read(ctx, org, t, filter+span+orderPage(vigil.Page{Offset: off - newer, Limit: limit}), previews)
}
