package sigma

import (
	"strconv"

	"github.com/vigil-soc/vigil/internal/parse"
)

// number is a numeric field's value; its text is written only for a
// value that is not compared as a number (a port under contains), so
// that a port compared with a port allocates nothing.
type number struct {
	x     float64
	i     int64
	isInt bool
}

func (n number) text() string {
	if n.isInt {
		return strconv.FormatInt(n.i, 10)
	}
	return strconv.FormatFloat(n.x, 'f', -1, 64)
}

func (f *fieldNode) testNum(n number, ev parse.Event) bool {
	if f.refs != nil {
		return f.test(n.text(), ev)
	}
	hit := false
	if f.all {
		hit = len(f.values) > 0
		for _, ms := range f.values {
			if !anyMatchNum(ms, n) {
				hit = false
				break
			}
		}
	} else {
		for _, ms := range f.values {
			if anyMatchNum(ms, n) {
				hit = true
				break
			}
		}
	}
	if f.neq {
		return !hit
	}
	return hit
}

func anyMatchNum(ms []matcher, n number) bool {
	var s string // n's text, once needed
	for _, m := range ms {
		switch m := m.(type) {
		case numMatcher:
			if m.matchNum(n.x) {
				return true
			}
		case numEqual:
			if n.x == m.num {
				return true
			}
		default:
			if s == "" {
				s = n.text()
			}
			if m.matchString(s) {
				return true
			}
		}
	}
	return false
}
