package sigma

import (
	"fmt"
	"strconv"

	"github.com/vigil-soc/vigil/internal/parse"
)

// Event is what a compiled rule reads of one artifact: its source, the
// ECS fields its parser produced, and the raw line (for keywords).
type Event struct {
	Source string
	Fields parse.Event
	Raw    string
	// Grams, when set, sketch Raw (Grams.Add): keywords with a byte or
	// byte pair the line lacks are ruled out without a search.
	Grams *Grams
	// GramsSet, when set, says whether Grams is filled yet: a Prepared
	// event fills it at the first keyword and sets *GramsSet.
	GramsSet *bool
}

// Compiled is a detection (or filter) rule ready to evaluate.
type Compiled struct {
	Rule   *Rule
	target *target
	cond   node
	// set numbers the fields the rule reads (CompileIn).
	set *FieldSet
	// filters are the Sigma filters attached to the rule: an event that
	// one of them matches is no match of the rule.
	filters []*Compiled
	// Fields are the ECS fields the rule's selections read, in order.
	Fields []string
}

// Sources returns the Vigil sources whose events the rule reads.
func (c *Compiled) Sources() []string { return c.target.sourceList() }

// Compile prepares a detection or filter rule for Vigil: its log source
// and fields mapped, its values and modifiers compiled. A rule Vigil
// cannot run is an *Error naming the field and the reason.
func Compile(r *Rule) (*Compiled, error) { return CompileIn(r, NewFieldSet()) }

// CompileIn is Compile with the rule's fields numbered in set, shared
// with the other rules compiled into it: MatchPrepared reads each field
// of an event once for all of them.
func CompileIn(r *Rule, set *FieldSet) (*Compiled, error) {
	det := r.Detection
	path := "detection"
	if r.Filter != nil {
		det, path = r.Filter.Detection, "filter"
	}
	if det == nil {
		return nil, fail("correlation", "a correlation rule is compiled with its base rules (CompileCorrelation)")
	}
	if det.Timeframe != "" {
		return nil, fail(path+".timeframe", "Sigma 1 aggregations are not supported: write a correlation rule")
	}
	if r.Taxonomy != "" && r.Taxonomy != "sigma" && r.Taxonomy != "ecs" {
		return nil, fail("taxonomy", "%q: Vigil reads the sigma and ecs taxonomies", r.Taxonomy)
	}
	t, err := resolveLogSource(r.LogSource)
	if err != nil {
		return nil, err
	}
	for _, req := range t.sources {
		if req != nil {
			req.id = set.id(req.field)
		}
	}
	c := &Compiled{Rule: r, target: t, set: set}
	cc := &compiler{c: c, searches: map[string]node{}, seenField: map[string]bool{}}
	for _, s := range det.Searches {
		n, err := cc.search(s, path+"."+s.Name)
		if err != nil {
			return nil, err
		}
		cc.searches[s.Name] = n
		cc.order = append(cc.order, s.Name)
	}
	var conds []node
	for i, text := range det.Conditions {
		f := path + ".condition"
		if len(det.Conditions) > 1 {
			f = fmt.Sprintf("%s[%d]", f, i)
		}
		ast, err := parseCondition(text)
		if err != nil {
			return nil, fail(f, "%s", err.Error())
		}
		n, err := cc.cond(ast)
		if err != nil {
			return nil, fail(f, "%s", err.Error())
		}
		conds = append(conds, n)
	}
	c.cond = orOf(conds)
	return c, nil
}

// Match reports whether ev is of the rule's log source, meets its
// condition and none of its filters.
func (c *Compiled) Match(ev *Event) bool {
	return c.InScope(ev) && c.matchCond(ev)
}

// InScope reports whether ev is of the rule's log source: one of its
// sources, with the field the source requires, if any.
func (c *Compiled) InScope(ev *Event) bool {
	req, ok := c.target.sources[ev.Source]
	return ok && (req == nil || req.holds(ev.Fields))
}

// Scope names the events the rule reads: rules of the same Scope read
// the same events (InScope agrees on every event), so that a batch can
// be sorted out once for all of them.
func (c *Compiled) Scope() string { return c.target.key }

// MatchInScope is Match for an event InScope admitted: the rule's
// condition and none of its filters.
func (c *Compiled) MatchInScope(ev *Event) bool { return c.matchCond(ev) }

func (c *Compiled) matchCond(ev *Event) bool {
	in := input{f: ev.Fields, raw: line{ev.Raw, ev.Grams}}
	if ev.Grams != nil && ev.GramsSet != nil && !*ev.GramsSet {
		in.raw.grams = nil // not filled: no sketch to rule out by
	}
	if !c.cond.eval(in) {
		return false
	}
	for _, f := range c.filters {
		if f.cond.eval(in) {
			return false
		}
	}
	return true
}

func (r *requirement) holds(f parse.Event) bool { return r.holdsValue(f[r.field]) }

func (r *requirement) holdsValue(x any) bool {
	s, _ := x.(string)
	for _, v := range r.values {
		if len(s) == len(v) && equalFoldASCII(s, v) {
			return true
		}
	}
	return false
}

type compiler struct {
	c *Compiled
	// matchers counts the strings the rule's values stand for after
	// their transforms (windash, base64offset), bounded by maxValues:
	// 10,000 values of four flags each would otherwise be 6 M matchers.
	matchers  int
	searches  map[string]node
	order     []string
	seenField map[string]bool
}

// mapField maps a field of the rule, as its log source names fields.
func (cc *compiler) mapField(name string) (string, bool) {
	if cc.c.target.windows {
		return mapWindowsField(name)
	}
	return mapField(name)
}

func (cc *compiler) field(f string) {
	if !cc.seenField[f] {
		cc.seenField[f] = true
		cc.c.Fields = append(cc.c.Fields, f)
	}
}

func (cc *compiler) search(s *Search, path string) (node, error) {
	if len(s.Keywords) > 0 {
		sel := &Selection{Values: s.Keywords, Path: path}
		return cc.selection(sel)
	}
	var alts []node
	for i, m := range s.Maps {
		p := path
		if len(s.Maps) > 1 {
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		var all []node
		for _, sel := range m {
			n, err := cc.selection(sel)
			if err != nil {
				return nil, err
			}
			all = append(all, n)
		}
		if len(all) == 0 {
			return nil, fail(p, "an empty map")
		}
		alts = append(alts, andOf(all))
	}
	return orOf(alts), nil
}

// selection compiles one field selection, or keywords when Field is "".
func (cc *compiler) selection(sel *Selection) (node, error) {
	n, err := cc.compileSelection(sel)
	if err != nil {
		return nil, err
	}
	if fn, ok := n.(*fieldNode); ok && !fn.raw && fn.refs == nil {
		return cc.c.set.share(fn, sel), nil
	}
	return n, nil
}

// compileSelection is selection, the node the rule's own.
func (cc *compiler) compileSelection(sel *Selection) (node, error) {
	mods, err := parseModifiers(sel.Modifiers, sel.Path)
	if err != nil {
		return nil, err
	}
	fn := &fieldNode{all: mods.all, neq: mods.neq}
	if sel.Field == "" {
		fn.raw = true
	} else {
		ecs, ok := cc.mapField(sel.Field)
		if !ok {
			return nil, fail(sel.Path, "unknown field %q with no mapping to Vigil's ECS fields (docs/sigma.md, Fields)", sel.Field)
		}
		fn.field = ecs
		fn.id = cc.c.set.id(ecs)
		cc.field(ecs)
	}
	if mods.all && len(sel.Values) < 2 && len(mods.transforms) == 0 {
		return nil, fail(sel.Path, "modifier all needs a list of values")
	}
	switch mods.match {
	case "exists":
		if len(sel.Values) != 1 || sel.Values[0].Kind != KindBool {
			return nil, fail(sel.Path, "modifier exists takes true or false")
		}
		if fn.raw {
			return nil, fail(sel.Path, "modifier exists needs a field")
		}
		return &existsNode{field: fn.field, id: fn.id, want: sel.Values[0].Text == "true"}, nil
	case "fieldref":
		if fn.raw {
			return nil, fail(sel.Path, "modifier fieldref needs a field")
		}
		for i, v := range sel.Values {
			other, ok := cc.mapField(v.Text)
			if v.Kind != KindString || !ok {
				return nil, fail(fmt.Sprintf("%s[%d]", sel.Path, i), "fieldref: unknown field %q with no mapping", v.Text)
			}
			cc.field(other)
			fn.refs = append(fn.refs, other)
		}
		return fn, nil
	}
	for i, v := range sel.Values {
		p := sel.Path
		if len(sel.Values) > 1 {
			p = fmt.Sprintf("%s[%d]", sel.Path, i)
		}
		if v.Kind == KindNull {
			if mods.match != "" || len(mods.transforms) > 0 {
				return nil, fail(p, "null takes no modifier")
			}
			if fn.raw {
				return nil, fail(p, "null is no keyword")
			}
			fn.null = true
			continue
		}
		ms, err := compileValue(v, mods, fn.raw, p)
		if err != nil {
			return nil, err
		}
		if cc.matchers += len(ms); cc.matchers > maxValues {
			return nil, fail(p, "the rule's values and their modifiers make more than %d strings to match", maxValues)
		}
		fn.values = append(fn.values, ms)
	}
	flat := !fn.raw && !fn.all && fn.refs == nil
	for _, ms := range fn.values {
		for _, m := range ms {
			p, ok := m.(*pattern)
			if ok && !p.cased {
				fn.lower = true
				fn.flat = append(fn.flat, p)
			} else {
				flat = false
			}
		}
	}
	if !flat {
		fn.flat = nil
	}
	return fn, nil
}

// compileValue compiles one value under the modifiers: the matchers of
// the strings it stands for, ORed.
func compileValue(v Value, mods modifiers, raw bool, path string) ([]matcher, error) {
	switch {
	case isNumeric(mods.match):
		m, err := compileNumeric(mods.match, v, path)
		if err != nil {
			return nil, err
		}
		return []matcher{m}, nil
	case mods.match == "cidr":
		m, err := compileCIDR(v.Text, path)
		if err != nil {
			return nil, err
		}
		return []matcher{m}, nil
	case v.Kind == KindNumber && mods.match == "" && len(mods.transforms) == 0 && !raw:
		f, _ := strconv.ParseFloat(v.Text, 64)
		return []matcher{numEqual{text: v.Text, num: f}}, nil
	}
	strs, err := transform(v.Text, mods.transforms, path)
	if err != nil {
		return nil, err
	}
	match := mods.match
	if raw && match == "" {
		match = "contains" // keywords are found anywhere in the line
	}
	out := make([]matcher, 0, len(strs))
	for _, s := range strs {
		if match == "re" {
			m, err := compileRegex(s, mods.reFlags, path)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		p, err := compilePattern(s, match, mods.cased)
		if err != nil {
			return nil, fail(path, "%s", err.Error())
		}
		out = append(out, p)
	}
	return out, nil
}

func (cc *compiler) cond(c cond) (node, error) {
	switch c := c.(type) {
	case condOr:
		l, err := cc.cond(c.l)
		if err != nil {
			return nil, err
		}
		r, err := cc.cond(c.r)
		if err != nil {
			return nil, err
		}
		return orOf([]node{l, r}), nil
	case condAnd:
		l, err := cc.cond(c.l)
		if err != nil {
			return nil, err
		}
		r, err := cc.cond(c.r)
		if err != nil {
			return nil, err
		}
		return andOf([]node{l, r}), nil
	case condNot:
		x, err := cc.cond(c.x)
		if err != nil {
			return nil, err
		}
		return notNode{x}, nil
	case condIdent:
		n, ok := cc.searches[c.name]
		if !ok {
			return nil, fmt.Errorf("unknown search identifier %q", c.name)
		}
		return n, nil
	case condOf:
		var ns []node
		for _, name := range cc.order {
			if patternMatch(c.pattern, name) {
				ns = append(ns, cc.searches[name])
			}
		}
		if len(ns) == 0 {
			return nil, fmt.Errorf("%q matches no search identifier", c.pattern)
		}
		switch {
		case c.n == 0:
			return andOf(ns), nil
		case c.n == 1:
			return orOf(ns), nil
		}
		return &atLeast{n: c.n, xs: ns}, nil
	}
	return nil, fmt.Errorf("unknown condition %T", c)
}

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

// AddFilter makes a compiled filter rule an exception of c: an event it
// matches is no match of c.
func (c *Compiled) AddFilter(f *Compiled) { c.filters = append(c.filters, f) }
