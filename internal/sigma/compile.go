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
	// guard numbers the rule's guard in set (guard.go), 0 when it has
	// none; guardOn are the fields it tests, their places in
	// set.guardFields.
	guard   int32
	guardOn []int32
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
	if r.Filter == nil {
		c.guard, c.guardOn = set.addGuard(c.cond)
	}
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

// AddFilter makes a compiled filter rule an exception of c: an event it
// matches is no match of c.
func (c *Compiled) AddFilter(f *Compiled) { c.filters = append(c.filters, f) }
