package vlogs

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vigil-soc/vigil"
)

// Totals of a search that the API caps (exactUpTo, 10,000: docs/api.md,
// "Lists"): exact when there are that many matches or fewer, else either
// exact or an estimate above the bound, flagged. VictoriaLogs indexes
// words only by a bloom filter per block, so a count reads every block
// that may hold a match: counting all of a frequent term's matches reads
// them all (0.6 s for a word in 1.6 M of 10 M entries; 7 s for an IP,
// whose four numeric words are in nearly every block), and a term within
// a source reads every block of the source. For a range longer than a
// day (a day is counted exactly, as before) boundedTotal takes:
//
//  1. An estimate from a recent window: the share of matches among the
//     entries of the newest hour (or day, when the hour holds fewer than
//     minSample entries), times the entries the filter's time range and
//     source hold (which VictoriaLogs counts from its block headers). The
//     window ends at the start of the current hour (or at the range's
//     end), so that identical searches give identical estimates while
//     nothing older arrives.
//  2. The matches counted newest first, in windows back from that end
//     (newestWindows: the hour, then four times as far each time, then
//     the rest), each count stopped by VictoriaLogs once the matches
//     found reach exactUpTo+1 (| limit). A range that holds no more than
//     the bound is counted whole, exactly (every block that may hold a
//     match is read: no index but a word's own list of matches could
//     spare it). One that holds more is known to once its newest
//     exactUpTo+1 matches are found, which reads the newest blocks that
//     hold them and stops, whatever the store holds beyond; its total is
//     then the estimate of step 1 if that is above the bound, else the
//     exactUpTo+1 matches extrapolated over the range: exactUpTo+1 times
//     the range's entries over those of the windows read (a low
//     estimate, at most about four times too low: the last window was
//     read only in part), flagged either way.
//
// The estimate alone never flags a total: the newest hour's traffic may
// differ from the range's (a word in 8,670 of 20 M entries was estimated
// at 29,567 from an hour of other lines), and a total of 10,000 or fewer
// must be exact.

// sampleWindows are the windows tried, shortest first.
var sampleWindows = []time.Duration{time.Hour, 24 * time.Hour}

// newestWindows are where the matches are counted, newest first: each
// window reaches back this far from the sample's end, the first one open
// towards the range's end (or the future), the last one to the range's
// start (or the oldest entry). Each reaches four times as far as the one
// before: an estimate from the window where the count stopped is at
// most four times too low (the windows' entries are as many as the
// window is long), and a count of the whole range takes 7 queries.
var newestWindows = []time.Duration{time.Hour, 4 * time.Hour, 16 * time.Hour, 64 * time.Hour, 256 * time.Hour, 1024 * time.Hour}

// minSample is how many entries a window must hold to be used when a
// longer one remains.
const minSample = 10000

// sampleEnd is where the estimate's windows end for range r at now, and
// false when r is no longer than the widest window: counting it exactly
// is then no dearer than sampling it.
func sampleEnd(r vigil.TimeRange, now time.Time) (time.Time, bool) {
	end := now.Truncate(time.Hour)
	if !r.End.IsZero() && r.End.Before(end) {
		end = r.End
	}
	if !r.Start.IsZero() && !end.After(r.Start.Add(sampleWindows[len(sampleWindows)-1])) {
		return time.Time{}, false
	}
	return end, true
}

// boundedTotal returns the total of the entries matching filter (base,
// the time range and source, and qf, the query's words) in range r, and
// whether it is an estimate (above exactUpTo); ok false when r is no
// longer than a day and the caller must count it exactly.
func (s *Store) boundedTotal(ctx context.Context, t Tenant, base, qf, filter string, r vigil.TimeRange, exactUpTo int, now time.Time) (total int, estimated, ok bool, err error) {
	end, ok := sampleEnd(r, now)
	if !ok {
		return 0, false, false, nil
	}
	if base == "" {
		base = "*"
	}
	est, err := s.sampleEstimate(ctx, t, base, qf, r, end)
	if err != nil {
		return 0, false, false, err
	}
	want := exactUpTo + 1
	n, from, err := s.countNewest(ctx, t, filter, r, end, want)
	if err != nil || n < want {
		return n, false, true, err
	}
	if est > exactUpTo {
		return est, true, true, nil
	}
	all, err := s.count(ctx, t, base)
	if err != nil {
		return 0, false, false, err
	}
	read := all
	if !from.IsZero() {
		if read, err = s.count(ctx, t, base+" _time:>="+rfc(from)); err != nil {
			return 0, false, false, err
		}
	}
	est = want
	if read > 0 {
		est = max(want, int(math.Round(float64(want)*float64(all)/float64(read))))
	}
	return est, true, true, nil
}

// countNewest counts the entries matching filter in r, in the windows of
// newestWindows back from end, newest first, until want are found: it
// returns how many were found (at most want) and the start of the last
// window read.
func (s *Store) countNewest(ctx context.Context, t Tenant, filter string, r vigil.TimeRange, end time.Time, want int) (int, time.Time, error) {
	found := 0
	var upper time.Time // zero: the first window is open towards the range's end
	for i := 0; i <= len(newestWindows); i++ {
		var from time.Time // zero: the last window reaches the range's start
		if i < len(newestWindows) {
			from = end.Add(-newestWindows[i])
			if !r.Start.IsZero() && !from.After(r.Start) {
				from = time.Time{}
			}
		}
		q := filter
		switch {
		case !upper.IsZero():
			q += " _time:[" + rfc(cmp.Or(from, time.Unix(0, 0))) + ", " + rfc(upper) + ")"
		case !from.IsZero():
			q += " _time:>=" + rfc(from)
		}
		// count(_time), not count(): after a limit, the front counts the
		// rows the nodes send, which carry no field for count() (v1.52.1
		// answers 0).
		n, err := s.countWith(ctx, t, q+" | limit "+strconv.Itoa(want-found), "count(_time)")
		if err != nil {
			return 0, time.Time{}, err
		}
		found += min(n, want-found)
		if found >= want || from.IsZero() {
			return found, from, nil
		}
		upper = from
	}
	return found, time.Time{}, nil // not reached: the last window has no start
}

// count returns how many entries q selects.
func (s *Store) count(ctx context.Context, t Tenant, q string) (int, error) {
	return s.countWith(ctx, t, q, "count()")
}

// countWith returns the result of stats fn over what q selects.
func (s *Store) countWith(ctx context.Context, t Tenant, q, fn string) (int, error) {
	var n int
	err := s.c.query(ctx, t, q+" | stats "+fn+" n", func(row map[string]string) error {
		var err error
		n, err = strconv.Atoi(row["n"])
		if err != nil {
			return fmt.Errorf("count %v: %w", row, err)
		}
		return nil
	})
	return n, err
}

// sampleEstimate returns the estimate of step 1: the share of matches
// of qf among the entries of base in the newest window ending at end,
// times the entries of base; 0 when the window holds none of them.
func (s *Store) sampleEstimate(ctx context.Context, t Tenant, base, qf string, r vigil.TimeRange, end time.Time) (int, error) {
	var n, m int64
	for i, w := range sampleWindows {
		start := end.Add(-w)
		if !r.Start.IsZero() && r.Start.After(start) {
			start = r.Start
		}
		if !start.Before(end) {
			return 0, nil
		}
		q := base + " _time:[" + rfc(start) + ", " + rfc(end) + ") | stats count() n, count() if (" + qf + ") m"
		err := s.c.query(ctx, t, q, func(row map[string]string) error {
			var err error
			if n, err = strconv.ParseInt(row["n"], 10, 64); err == nil {
				m, err = strconv.ParseInt(row["m"], 10, 64)
			}
			if err != nil {
				return fmt.Errorf("sample count %v: %w", row, err)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if n >= minSample || i == len(sampleWindows)-1 || !start.After(r.Start) && !r.Start.IsZero() {
			break
		}
	}
	if n == 0 || m == 0 {
		return 0, nil
	}
	all, err := s.count(ctx, t, base)
	if err != nil {
		return 0, err
	}
	return int(math.Round(float64(m) / float64(n) * float64(all))), nil
}
