package enrich

import "time"

// window is a sliding-window limiter: it remembers the send times of the
// last `limit` look-ups and admits one more only when the oldest of them is
// a full period old. Unlike a token bucket it never lets more than limit
// look-ups through in any period, which is what "rate_limit look-ups per
// minute" promises a DNS or RDAP operator. It costs 8 bytes per admitted
// look-up per period (800 KB at the maximum rate_limit of 100000).
type window struct {
	limit int
	times []int64 // unix nanos; once len == limit a ring whose oldest entry is at head
	head  int
}

// take admits one look-up at now under limit per period. When it cannot,
// it reports how long until it can.
func (w *window) take(now time.Time, limit int, period time.Duration) (bool, time.Duration) {
	if limit <= 0 {
		return false, 0
	}
	if limit != w.limit {
		w.resize(limit)
	}
	t := now.UnixNano()
	if len(w.times) < limit {
		w.times = append(w.times, t)
		return true, 0
	}
	if age := time.Duration(t - w.times[w.head]); age < period {
		return false, period - age
	}
	w.times[w.head] = t
	w.head = (w.head + 1) % limit
	return true, 0
}

// resize keeps the most recent send times that fit a new limit, oldest
// first, so that a changed rate_limit applies to the look-ups already made.
func (w *window) resize(limit int) {
	ordered := make([]int64, 0, len(w.times))
	ordered = append(ordered, w.times[w.head:]...)
	ordered = append(ordered, w.times[:w.head]...)
	if len(ordered) > limit {
		ordered = ordered[len(ordered)-limit:]
	}
	w.times, w.head, w.limit = ordered, 0, limit
}

// idle reports whether no look-up was admitted within period before now.
func (w *window) idle(now time.Time, period time.Duration) bool {
	if len(w.times) == 0 {
		return true
	}
	newest := w.head - 1
	if newest < 0 {
		newest = len(w.times) - 1
	}
	return time.Duration(now.UnixNano()-w.times[newest]) >= period
}
