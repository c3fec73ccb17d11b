package vlogs

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vigil-soc/vigil"
)

// Estimated totals. Counting every match of a frequent term reads every
// match (0.6 s for a word in 1.6 M of 10 M entries; 7 s for an IP, whose
// four numeric words are in nearly every block). A total above the
// caller's bound may be an estimate instead: the share of matches among
// the entries of a recent window, times the entries the filter's time
// range and source hold (which VictoriaLogs counts from its block
// headers). The window ends at the start of the current hour (or at the
// range's end), so that identical searches give identical estimates
// while nothing older arrives; it is the newest hour, or the newest day
// when the hour holds fewer than minSample entries. An estimate under
// twice the bound is not trusted: the total is then counted exactly, as
// it is for a range no longer than a day.

// sampleWindows are the windows tried, shortest first.
var sampleWindows = []time.Duration{time.Hour, 24 * time.Hour}

// minSample is how many entries a window must hold to be used when a
// longer one remains.
const minSample = 10000

// estimateTotal returns an estimate of the entries matching base and qf,
// and true, when it is above twice exactUpTo; false when the total must
// be counted.
func (s *Store) estimateTotal(ctx context.Context, t Tenant, base, qf string, r vigil.TimeRange, exactUpTo int, now time.Time) (int, bool, error) {
	end := now.Truncate(time.Hour)
	if !r.End.IsZero() && r.End.Before(end) {
		end = r.End
	}
	if !r.Start.IsZero() && !end.After(r.Start.Add(sampleWindows[len(sampleWindows)-1])) {
		// A range no longer than the widest window: counting it is no
		// dearer than sampling it.
		return 0, false, nil
	}
	if base == "" {
		base = "*"
	}
	var n, m int64
	for i, w := range sampleWindows {
		start := end.Add(-w)
		if !r.Start.IsZero() && r.Start.After(start) {
			start = r.Start
		}
		if !start.Before(end) {
			return 0, false, nil
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
			return 0, false, err
		}
		if n >= minSample || i == len(sampleWindows)-1 || !start.After(r.Start) && !r.Start.IsZero() {
			break
		}
	}
	if n == 0 || m == 0 {
		return 0, false, nil
	}
	var all int64
	err := s.c.query(ctx, t, base+" | stats count() n", func(row map[string]string) error {
		var err error
		all, err = strconv.ParseInt(row["n"], 10, 64)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	est := int(math.Round(float64(m) / float64(n) * float64(all)))
	if est <= 2*exactUpTo {
		return 0, false, nil
	}
	return est, true, nil
}
