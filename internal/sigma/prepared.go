package sigma

import (
	"strconv"
	"strings"
	"unsafe"
)

// FieldSet numbers the fields a set of rules reads, so that the rules
// compiled into it (CompileIn) share what they read of one event: a
// Prepared event looks each field up once for all of them, and makes its
// lower-case form once. A set is filled while its rules compile and only
// read after; it is not safe to compile into it while rules match.
type FieldSet struct {
	ids   map[string]int
	names []string
	// nodes are the field selections compiled into the set, by what
	// they test (share); memos counts those several rules share.
	nodes map[string]*fieldNode
	memos int
	// guards counts the rules with a guard (guard.go), guardBy and
	// guardFields index them by the fields their guards test.
	guards      int32
	guardBy     map[int]int32
	guardFields []*fieldGuard
}

// NewFieldSet returns an empty set.
func NewFieldSet() *FieldSet {
	return &FieldSet{ids: map[string]int{}, nodes: map[string]*fieldNode{}}
}

// share returns the node of the set that tests what fn tests (the same
// field, modifiers and values, as sel writes them), fn itself the first
// time: a selection several rules make is one node, which a Prepared
// event evaluates once for all of them.
func (s *FieldSet) share(fn *fieldNode, sel *Selection) *fieldNode {
	var b strings.Builder
	b.WriteString(fn.field)
	for _, m := range sel.Modifiers {
		b.WriteString("|" + m)
	}
	for _, v := range sel.Values {
		b.WriteString("\x00" + strconv.Itoa(int(v.Kind)) + v.Text)
	}
	key := b.String()
	have, ok := s.nodes[key]
	if !ok {
		s.nodes[key] = fn
		return fn
	}
	if have.memo == 0 {
		s.memos++
		have.memo = s.memos
	}
	return have
}

func (s *FieldSet) id(name string) int {
	if i, ok := s.ids[name]; ok {
		return i
	}
	s.ids[name] = len(s.names)
	s.names = append(s.names, name)
	return len(s.names) - 1
}

// Prepared is one event as the rules of a FieldSet read it: each field's
// value looked up in the event at the first rule that reads it, its ASCII
// lower-case form made at the first uncased match, the raw line's grams
// and lower-case form likewise. Reset binds it to the next event; it is
// used by one goroutine at a time.
type Prepared struct {
	set *FieldSet
	ev  Event
	gen uint32
	// slots[id] holds field id's value once its gen is gen.
	slots []slot
	// The raw line's lower-case form and grams, once their gens are gen.
	rawLower    string
	rawLowerGen uint32
	grams       Grams
	gramsGen    uint32
	// memo[i] holds the result of shared node i once its gen is gen.
	memo []memoSlot
	// cand[g] is gen when the event may meet guard g, as far as the
	// guard fields whose fieldGen is gen tell (guard.go).
	cand     []uint32
	fieldGen []uint32
	marked   []int32 // the guards cand marks, in the order marked
}

type memoSlot struct {
	gen uint32
	v   bool
}

type slot struct {
	gen      uint32
	lowerGen uint32
	gramsGen uint32
	ok       bool
	v        any
	lower    string
	grams    Grams // of lower, once gramsGen is gen
}

// NewPrepared returns a Prepared for the rules of set.
func NewPrepared(set *FieldSet) *Prepared { return &Prepared{set: set} }

// Reset binds p to ev, forgetting what it read of the previous event.
// When ev.Grams is set (with ev.GramsSet), the line's grams are read from
// and written there.
func (p *Prepared) Reset(ev Event) {
	p.ev = ev
	p.gen++
	p.marked = p.marked[:0]
	if p.gen == 0 {
		// Wrapped: a slot of gen 0 would pass for read.
		clear(p.slots)
		clear(p.memo)
		clear(p.cand)
		clear(p.fieldGen)
		p.rawLowerGen, p.gramsGen = 0, 0
		p.gen = 1
	}
	if n := len(p.set.names); len(p.slots) < n {
		p.slots = append(p.slots, make([]slot, n-len(p.slots))...)
	}
	if n := p.set.memos + 1; len(p.memo) < n {
		p.memo = append(p.memo, make([]memoSlot, n-len(p.memo))...)
	}
	if n := int(p.set.guards) + 1; len(p.cand) < n {
		p.cand = append(p.cand, make([]uint32, n-len(p.cand))...)
	}
	if n := len(p.set.guardFields); len(p.fieldGen) < n {
		p.fieldGen = append(p.fieldGen, make([]uint32, n-len(p.fieldGen))...)
	}
}

// FieldSet returns the set p reads the fields of.
func (p *Prepared) FieldSet() *FieldSet { return p.set }

// Event returns the event p is bound to.
func (p *Prepared) Event() *Event { return &p.ev }

// value returns field id's value, looked up once per event.
func (p *Prepared) value(id int, name string) (any, bool) {
	s := &p.slots[id]
	if s.gen != p.gen {
		s.v, s.ok = p.ev.Fields[name]
		s.gen = p.gen
	}
	return s.v, s.ok
}

// lower returns the ASCII lower-case form of v, field id's string value,
// made once per event.
func (p *Prepared) lower(id int, v string) string {
	s := &p.slots[id]
	if s.lowerGen != p.gen {
		s.lower = lowerASCII(v)
		s.lowerGen = p.gen
	}
	return s.lower
}

// gramsMin is the length from which a value's grams are worth making
// before searching it for substrings: one pass over the value, then a
// substring whose bytes it lacks is ruled out without a search.
const gramsMin = 48

// gramsOf returns the grams of lower, field id's lower-case form, made
// once per event.
func (p *Prepared) gramsOf(id int, lower string) *Grams {
	s := &p.slots[id]
	if s.gramsGen != p.gen {
		s.grams = Grams{}
		s.grams.Add(lower)
		s.gramsGen = p.gen
	}
	return &s.grams
}

// line returns the raw line with its grams, read once per event.
func (p *Prepared) line() line {
	if p.ev.Grams != nil && (p.ev.GramsSet == nil || *p.ev.GramsSet) {
		return line{p.ev.Raw, p.ev.Grams}
	}
	g := &p.grams
	if p.ev.Grams != nil {
		g = p.ev.Grams
	}
	if p.gramsGen != p.gen {
		*g = Grams{}
		g.Add(p.ev.Raw)
		p.gramsGen = p.gen
		if p.ev.GramsSet != nil {
			*p.ev.GramsSet = true
		}
	}
	return line{p.ev.Raw, g}
}

// rawLowerOf returns the raw line's ASCII lower-case form, made once per
// event.
func (p *Prepared) rawLowerOf() string {
	if p.rawLowerGen != p.gen {
		p.rawLower = lowerASCII(p.ev.Raw)
		p.rawLowerGen = p.gen
	}
	return p.rawLower
}

// lowerASCII returns s with its ASCII capitals in lower case (and every
// other byte as it is): s itself when it has none.
func lowerASCII(s string) string {
	i := 0
	for i < len(s) && !('A' <= s[i] && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	// One pass byte by byte: a Windows path or command line has a
	// capital every few bytes, and writing the runs between them one
	// call each took three times as long.
	b := make([]byte, len(s))
	copy(b, s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return unsafe.String(&b[0], len(b))
}

// FieldSet returns the set the rule's fields are numbered in.
func (c *Compiled) FieldSet() *FieldSet { return c.set }

// InScopePrepared is InScope for the event p is bound to, its fields read
// through p when the rule was compiled into p's FieldSet.
func (c *Compiled) InScopePrepared(p *Prepared) bool {
	if c.set != p.set {
		return c.InScope(&p.ev)
	}
	req, ok := c.target.sources[p.ev.Source]
	if !ok || req == nil {
		return ok
	}
	v, _ := p.value(req.id, req.field)
	return req.holdsValue(v)
}

// MatchPrepared is MatchInScope for the event p is bound to, reading it
// through p: the rule must have been compiled into p's FieldSet (else it
// reads the event as MatchInScope does).
func (c *Compiled) MatchPrepared(p *Prepared) bool {
	if c.set != p.set {
		return c.matchCond(&p.ev)
	}
	if c.guard != 0 && !p.candidate(c) {
		return false // none of its guard's selections holds
	}
	in := input{f: p.ev.Fields, p: p}
	if !c.cond.eval(in) {
		return false
	}
	for _, f := range c.filters {
		fin := in
		if f.set != p.set {
			fin = input{f: p.ev.Fields, raw: p.line()}
		}
		if f.cond.eval(fin) {
			return false
		}
	}
	return true
}
