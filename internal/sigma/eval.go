package sigma

import (
	"fmt"
	"strconv"

	"github.com/vigil-soc/vigil/internal/parse"
)

// A node of a compiled condition.
//
// Nodes take what they read of the event by value (its fields, raw line
// and, when prepared, the Prepared that reads them once for all rules),
// not a pointer to an Event, so that evaluating does not make the event
// escape to the heap.
type node interface {
	eval(in input) bool
}

// input is what a condition reads of one event: its fields and raw line,
// or, when p is set, the same through p (f is p's fields).
type input struct {
	f   parse.Event
	raw line
	p   *Prepared
}

// value returns the field's value.
func (in input) value(id int, field string) (any, bool) {
	if in.p != nil {
		return in.p.value(id, field)
	}
	v, ok := in.f[field]
	return v, ok
}

type (
	andNode []node
	orNode  []node
	notNode struct{ x node }
	atLeast struct {
		n  int
		xs []node
	}
)

func andOf(ns []node) node {
	if len(ns) == 1 {
		return ns[0]
	}
	return andNode(ns)
}

func orOf(ns []node) node {
	if len(ns) == 1 {
		return ns[0]
	}
	return orNode(ns)
}

func (a andNode) eval(in input) bool {
	for _, n := range a {
		if !n.eval(in) {
			return false
		}
	}
	return true
}

func (o orNode) eval(in input) bool {
	for _, n := range o {
		if n.eval(in) {
			return true
		}
	}
	return false
}

func (n notNode) eval(in input) bool { return !n.x.eval(in) }

func (a *atLeast) eval(in input) bool {
	k := 0
	for _, n := range a.xs {
		if n.eval(in) {
			if k++; k >= a.n {
				return true
			}
		}
	}
	return false
}

// existsNode is field|exists: true or false.
type existsNode struct {
	field string
	id    int
	want  bool
}

func (e *existsNode) eval(in input) bool {
	_, ok := in.value(e.id, e.field)
	return ok == e.want
}

// fieldNode is one selection: the field's value against the values (ORed,
// or ANDed under all; each value ORs the strings its transforms made),
// negated under neq. raw selections read the raw line (keywords).
type fieldNode struct {
	field  string
	id     int // field's number in the rule's FieldSet
	raw    bool
	values [][]matcher
	null   bool     // the field may be absent or empty
	refs   []string // fieldref: fields whose values must be equal
	all    bool
	neq    bool
	// lower: a value is an uncased pattern, which a Prepared event
	// matches against the field's lower-case form, made once.
	lower bool
	// memo, when not 0, numbers the node among those several rules of
	// its FieldSet share: a Prepared event keeps its result (FieldSet.share).
	memo int
	// flat lists the patterns of values, when every one is an uncased
	// pattern and any of them matching is a hit (not all, no fieldref):
	// a Prepared event tests them in one loop, ruling out by the
	// value's grams the substrings it lacks.
	flat []*pattern
}

// matchFlat is hit for a Prepared event's string value s of lower-case
// form lower, through flat.
func (f *fieldNode) matchFlat(p *Prepared, s, lower string) bool {
	var g *Grams // lower's, once a substring is searched in a long value
	for _, pt := range f.flat {
		if pt.needs && (pt.kind == patContains || pt.kind == patSegments) && len(lower) >= gramsMin {
			if g == nil {
				g = p.gramsOf(f.id, lower)
			}
			if !g.covers(&pt.need) {
				continue
			}
		}
		if pt.matchLower(s, lower) {
			return true
		}
	}
	return false
}

func (f *fieldNode) eval(in input) bool {
	if f.memo != 0 && in.p != nil {
		m := &in.p.memo[f.memo]
		if m.gen != in.p.gen {
			m.v, m.gen = f.evalOnce(in), in.p.gen
		}
		return m.v
	}
	return f.evalOnce(in)
}

func (f *fieldNode) evalOnce(in input) bool {
	if f.raw {
		if in.p != nil {
			l := in.p.line()
			return f.testIn(l.s, in.p.rawLowerOf(), true, l, in.f)
		}
		return f.testLine(in.raw, in.f)
	}
	v, ok := in.value(f.id, f.field)
	if !ok || v == nil {
		return f.null != f.neq
	}
	ev := in.f
	switch x := v.(type) {
	case string:
		if x == "" && f.null {
			return !f.neq
		}
		if in.p != nil && f.flat != nil {
			return f.matchFlat(in.p, x, in.p.lower(f.id, x)) != f.neq
		}
		if in.p != nil && f.lower {
			return f.testIn(x, in.p.lower(f.id, x), true, line{}, ev)
		}
		return f.test(x, ev)
	case []string:
		if len(x) == 0 && f.null {
			return !f.neq
		}
		if f.neq {
			// Different from the values: no element equal to any.
			for _, s := range x {
				if !f.test(s, ev) {
					return false
				}
			}
			return true
		}
		for _, s := range x {
			if f.test(s, ev) {
				return true
			}
		}
		return false
	case int64:
		return f.testNum(number{x: float64(x), i: x, isInt: true}, ev)
	case int:
		return f.testNum(number{x: float64(x), i: int64(x), isInt: true}, ev)
	case float64:
		return f.testNum(number{x: x}, ev)
	case bool:
		return f.test(strconv.FormatBool(x), ev)
	}
	return f.null != f.neq
}

// test matches one string: true when the value matches (or, under neq,
// matches none of the values).
func (f *fieldNode) test(s string, ev parse.Event) bool { return f.testIn(s, "", false, line{}, ev) }

// testLine tests a raw line (keywords), ruling out without a search the
// values whose bytes it lacks.
func (f *fieldNode) testLine(l line, ev parse.Event) bool { return f.testIn(l.s, "", false, l, ev) }

// testIn tests s; lower is s's ASCII lower-case form when hasLower.
func (f *fieldNode) testIn(s, lower string, hasLower bool, l line, ev parse.Event) bool {
	hit := f.hit(s, lower, hasLower, l, ev)
	if f.neq {
		return !hit
	}
	return hit
}

func (f *fieldNode) hit(s, lower string, hasLower bool, l line, ev parse.Event) bool {
	if f.refs != nil {
		for _, r := range f.refs {
			o, ok := ev[r]
			if !ok {
				return false
			}
			os := fmt.Sprint(o)
			if len(os) != len(s) || !equalFold(os, s) {
				return false
			}
		}
		return true
	}
	if f.all {
		for _, ms := range f.values {
			if !anyMatch(ms, s, lower, hasLower, l) {
				return false
			}
		}
		return len(f.values) > 0
	}
	for _, ms := range f.values {
		if anyMatch(ms, s, lower, hasLower, l) {
			return true
		}
	}
	return false
}

// anyMatch reports whether s matches one of ms; s is l's line when
// l.grams is set, lower its ASCII lower-case form when hasLower.
func anyMatch(ms []matcher, s, lower string, hasLower bool, l line) bool {
	for _, m := range ms {
		if l.grams != nil {
			if p, ok := m.(*pattern); ok && !l.mayHold(p) {
				continue
			}
		}
		if hasLower {
			if m.matchLower(s, lower) {
				return true
			}
		} else if m.matchString(s) {
			return true
		}
	}
	return false
}

func equalFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
