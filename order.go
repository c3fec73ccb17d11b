package vigil

import "math"

// OrderChain follows the signals of one (detector, key), oldest first,
// and finds where their members name an order's members in that order
// (a temporal_ordered Sigma correlation: its base rules matched one after
// the other). Signals of the same time may follow each other in either
// order: "after" is "at or after".
//
// It keeps, for each position, the latest time at which a chain up to it
// began: a window [t-span, t] ending at the newest signal holds a
// complete chain exactly when that start lies in it (every later link
// does).
// The order's members must be distinct.
type OrderChain struct {
	order []string
	start []int64 // start[k]: latest start of a chain of order[:k+1]; none when math.MinInt64
	at    int64   // the time of the signals seen last
	seen  []bool  // the positions whose member was seen at at
}

// NewOrderChain returns a chain over order, or nil when order is empty
// (no order to keep).
func NewOrderChain(order []string) *OrderChain {
	if len(order) == 0 {
		return nil
	}
	c := &OrderChain{order: order, start: make([]int64, len(order)), seen: make([]bool, len(order))}
	for k := range c.start {
		c.start[k] = math.MinInt64
	}
	return c
}

// Add records a signal of member at Unix nanoseconds at, no earlier than
// the signals recorded before, and reports whether the window of span
// ending at at now holds a complete chain: one that began at or after
// at-span.
func (c *OrderChain) Add(member string, at, span int64) bool {
	if at != c.at {
		c.at = at
		clear(c.seen)
	}
	hit := false
	for k, m := range c.order {
		if m == member {
			c.seen[k], hit = true, true
		}
	}
	if hit {
		// Every member seen at this time extends the chains that end at
		// or before it, in order: one pass in order of position lets a
		// chain run through several members of the same time.
		for k := range c.order {
			if !c.seen[k] {
				continue
			}
			s := at
			if k > 0 {
				if s = c.start[k-1]; s == math.MinInt64 {
					continue
				}
			}
			c.start[k] = max(c.start[k], s)
		}
	}
	last := c.start[len(c.start)-1]
	return last != math.MinInt64 && last >= at-span
}
