package vlogs

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
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
//  1. A sample across the range: sampleSlices short windows spread
//     evenly over it (from its first entry's hour to its last's), as
//     long together as the range's share that holds about sampleSize
//     entries, read in one query that counts the entries and each
//     window's matches. When the matches are more than a total of
//     exactUpTo could give by chance (six standard deviations above what
//     the bound would, as PostgreSQL's sample does) and lie in at least
//     half the windows (not one burst), the total is the sample's share
//     of matches times the range's entries, flagged. The sample reads
//     about sampleSize entries whatever the store holds; when it says
//     more than the bound but not beyond doubt, a sample four times as
//     large is read in its place.
//  2. Else the matches counted newest first, in windows back from the
//     start of the current hour (or the range's end) (newestWindows: the
//     hour, then four times as far each time, then the rest), each count
//     stopped by VictoriaLogs once the matches found reach exactUpTo+1
//     (| limit). A range that holds no more than the bound is counted
//     whole, exactly (every block that may hold a match is read: no
//     index but a word's own list of matches could spare it). One that
//     holds more is known to once its newest exactUpTo+1 matches are
//     found, which reads the newest blocks that hold them and stops,
//     whatever the store holds beyond; its total is then the sample's
//     estimate if that is above the bound, else the exactUpTo+1 matches
//     extrapolated over the range: exactUpTo+1 times the range's entries
//     over those of the windows read (a low estimate, at most about four
//     times too low: the last window was read only in part), flagged
//     either way.
//
// A total of 10,000 or fewer is exact: an estimate from the newest hour
// alone (as before) is not enough, since its traffic may differ from the
// range's (a word in 8,670 of 20 M entries was estimated at 29,567 from
// an hour of other lines). A range of no more than sampleSize entries is
// counted whole.

// sampleSlices and sampleSize: a sample is this many windows holding
// about this many entries together. Its cost is mostly the blocks the
// windows touch, whatever their width: at 20 M artifacts over 30 days, a
// word over the whole store, 12 windows of 40,000 entries in all took
// 120-170 ms of the nodes' CPU, 6 of 20,000 53-59, one of 40,000 27-45.
// Store.sampleSize is sampleSize but in tests.
const (
	sampleSlices = 6
	sampleSize   = 20000
)

// newestWindows are where the matches are counted, newest first: each
// window reaches back this far from the sample's end, the first one open
// towards the range's end (or the future), the last one to the range's
// start (or the oldest entry). Each reaches four times as far as the one
// before: an estimate from the window where the count stopped is at
// most four times too low (the windows' entries are as many as the
// window is long), and a count of the whole range takes 7 queries.
var newestWindows = []time.Duration{time.Hour, 4 * time.Hour, 16 * time.Hour, 64 * time.Hour, 256 * time.Hour, 1024 * time.Hour}

// sampleEnd is where the newest windows end for range r at now, and
// false when r is no longer than a day: it is then counted exactly.
func sampleEnd(r vigil.TimeRange, now time.Time) (time.Time, bool) {
	end := now.Truncate(time.Hour)
	if !r.End.IsZero() && r.End.Before(end) {
		end = r.End
	}
	if !r.Start.IsZero() && !end.After(r.Start.Add(24*time.Hour)) {
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
	all, err := s.count(ctx, t, base)
	if err != nil || all <= s.sampleSize {
		return 0, false, false, err // counting them all reads no more than a sample
	}
	smp, err := s.sample(ctx, t, base, qf, all, s.sampleSize)
	if err != nil {
		return 0, false, false, err
	}
	est := smp.estimate(all)
	if !smp.beyond(exactUpTo, all) && est > exactUpTo && all > 4*s.sampleSize {
		// Above the bound but not beyond doubt: a sample four times as
		// large (≈ 4 times the cost, where counting to the bound's next
		// match read 0.8-1.9 s at 20-40 M) decides more of them.
		if smp, err = s.sample(ctx, t, base, qf, all, 4*s.sampleSize); err != nil {
			return 0, false, false, err
		}
		est = smp.estimate(all)
	}
	if smp.beyond(exactUpTo, all) {
		return est, true, true, nil
	}
	want := exactUpTo + 1
	if est <= exactUpTo/2 {
		// Few matches, as the sample says: one count of the whole
		// range, not one per window (7 queries: 15-30 ms more of the
		// nodes' CPU for a word in no entry at 20 M); the windows only
		// if it finds more than the bound after all.
		n, err := s.countWith(ctx, t, filter+" | limit "+strconv.Itoa(want), "count(_time)")
		if err != nil || n < want {
			return n, false, true, err
		}
	}
	n, from, err := s.countNewest(ctx, t, filter, r, end, want)
	if err != nil || n < want {
		return n, false, true, err
	}
	if est > exactUpTo {
		return est, true, true, nil
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

// sample is what a sample across a range found: its entries, and the
// matches in each of its windows.
type sample struct {
	n int
	m [sampleSlices]int
}

// matches is the sample's matches, and hit how many of its windows hold
// any.
func (smp sample) matches() (m, hit int) {
	for _, k := range smp.m {
		m += k
		if k > 0 {
			hit++
		}
	}
	return m, hit
}

// estimate is the sample's share of matches times all, the range's
// entries.
func (smp sample) estimate(all int) int {
	m, _ := smp.matches()
	if smp.n == 0 {
		return 0
	}
	return int(math.Round(float64(m) / float64(smp.n) * float64(all)))
}

// beyond reports whether the sample shows more than exactUpTo matches
// among all entries beyond chance: its matches at least six standard
// deviations (and 10) above the number a total of exactUpTo would give,
// in at least half its windows.
func (smp sample) beyond(exactUpTo, all int) bool {
	m, hit := smp.matches()
	mu := float64(exactUpTo) * float64(smp.n) / float64(all)
	return float64(m) >= mu+6*math.Sqrt(mu)+10 && hit >= sampleSlices/2
}

// sample reads a sample of step 1, of about size of the entries of base
// (all of them), for the matches of qf.
func (s *Store) sample(ctx context.Context, t Tenant, base, qf string, all, size int) (sample, error) {
	var lo, hi time.Time
	err := s.c.query(ctx, t, base+" | stats min(_time) lo, max(_time) hi", func(row map[string]string) error {
		var err error
		if lo, err = time.Parse(time.RFC3339Nano, row["lo"]); err == nil {
			hi, err = time.Parse(time.RFC3339Nano, row["hi"])
		}
		if err != nil {
			return fmt.Errorf("range of entries %v: %w", row, err)
		}
		return nil
	})
	if err != nil || lo.IsZero() {
		return sample{}, err
	}
	// Whole hours, so that identical searches read the same windows
	// while nothing older, nor in a later hour, arrives.
	lo, hi = lo.Truncate(time.Hour), hi.Truncate(time.Hour).Add(time.Hour)
	step := hi.Sub(lo) / sampleSlices
	width := max(time.Duration(float64(step)*float64(size)/float64(all)), time.Millisecond)
	windows := make([]string, sampleSlices)
	for i := range sampleSlices {
		from := lo.Add(step*time.Duration(i) + (step-width)/2)
		windows[i] = "_time:[" + rfc(from) + ", " + rfc(from.Add(width)) + ")"
	}
	// One evaluation of qf per entry, the counts grouped by the steps
	// (whole seconds: the range is whole hours) that hold the windows.
	secs := int64(step / time.Second)
	by := fmt.Sprintf("_time:%ds offset %ds", secs, lo.Unix()%secs)
	var smp sample
	q := base + " (" + strings.Join(windows, " or ") + ") | stats by (" + by + ") count() n, count() if (" + qf + ") m"
	err = s.c.query(ctx, t, q, func(row map[string]string) error {
		at, err := time.Parse(time.RFC3339Nano, row["_time"])
		var n, m int
		if err == nil {
			if n, err = strconv.Atoi(row["n"]); err == nil {
				m, err = strconv.Atoi(row["m"])
			}
		}
		if err != nil {
			return fmt.Errorf("sample %v: %w", row, err)
		}
		smp.n += n
		if i := int(at.Sub(lo) / step); i >= 0 && i < sampleSlices {
			smp.m[i] += m
		}
		return nil
	})
	return smp, err
}
