package sigma

import (
	"strings"
	"sync"
	"sync/atomic"
)

// A rule's guard: field selections of which one at least holds whenever
// its condition does, each of them a plain test of a string that an
// index finds without running the rule — the value equal to a literal or
// an integer (`OriginalFileName: 'CertUtil.exe'`, `EventID: 4688`), a
// path ending in a file name (`Image|endswith: '\certutil.exe'`), or a
// value holding a literal (`CommandLine|contains: 'sekurlsa::'`; a
// prefix, a suffix, the longest literal of a wildcard pattern, all
// read as the value's lower-case form holding the literal's: literals.go
// finds them all in one pass). Most SigmaHQ Windows rules begin so; a
// Windows process creation is read by some 130 of the starter rules, of
// which a handful name its image. A
// Prepared event looks a guarded field up in the set's index once, at
// the first rule whose guard tests it (candidate), and a rule none of
// whose guard selections it can meet is no match, without its condition
// being evaluated. Only MatchPrepared reads guards: the result is
// MatchInScope's for every event (TestWindowsStarterSet, every SigmaHQ
// Windows rule on every real record both ways; TestModifiers).

// fieldGuard indexes, for one field, the guarded rules (by their guard
// numbers) whose guard tests it: by the lower-case value or the integer
// they equal, by the `\name` their value ends with, those that equal an
// integer (which a value that is no plain integer may equal as a
// number: 4688.0), and all of them (a value that is not a string, which
// the index cannot rule out). maxExact and maxBase are the lengths of
// the longest keys: a longer value or name is none of them.
//
// subs indexes the guards by the literals a value's lower-case form
// holds when they may hold (guardLiteral), found by lits, which is made
// at the first event after the set last grew.
type fieldGuard struct {
	id                int
	name              string
	exact, base       map[string][]int32
	numeric, all      []int32
	maxExact, maxBase int
	subs              map[string][]int32
	lits              atomic.Pointer[literals]
	mu                sync.Mutex // held while lits is made
}

// minLiteral is the shortest literal the substring index holds: a
// shorter one (`' -'`, `'/c'`) is in nearly every command line and rules
// nothing out, so a selection of one is left to the rule.
const minLiteral = 3

// guardKind says how the index finds a pattern.
type guardKind int

const (
	guardNone  guardKind = iota
	guardExact           // the value's lower-case form equals lit
	guardBase            // what follows its last backslash does
	guardSub             // its lower-case form holds lit
)

// guardLiteral returns how the index finds the values m matches, and the
// literal it finds them by: for a substring, text in ASCII lower case
// that the lower-case form of every string value m matches holds.
func guardLiteral(m *pattern) (guardKind, string) {
	switch {
	case !m.cased && m.kind == patExact:
		return guardExact, m.lit
	case !m.cased && m.kind == patSuffix && fileSuffix(m.lit):
		return guardBase, m.lit
	}
	var lit string
	switch m.kind {
	case patExact, patPrefix, patSuffix, patContains:
		lit = m.lit
	case patSegments:
		for _, l := range m.segs.lits {
			if len(l) > len(lit) {
				lit = l
			}
		}
	case patGlob:
		lit = m.must
	}
	if len(lit) < minLiteral {
		return guardNone, ""
	}
	return guardSub, lowerASCII(lit)
}

// guardOf returns field selections of which at least one holds whenever
// n does (for the string values of its fields), and whether n has such a
// guard: a selection the index can test is its own guard; an AND, the
// smallest guard of its terms; an OR (and "1 of", "n of"), the guards of
// all its terms together.
func guardOf(n node) ([]*fieldNode, bool) {
	switch n := n.(type) {
	case *fieldNode:
		if n.indexable() {
			return []*fieldNode{n}, true
		}
	case andNode:
		var best []*fieldNode
		found := false
		for _, x := range n {
			if g, ok := guardOf(x); ok && (!found || patterns(g) < patterns(best)) {
				best, found = g, true
			}
		}
		return best, found
	case orNode:
		return guardOfAll(n)
	case *atLeast:
		if n.n >= 1 {
			return guardOfAll(n.xs)
		}
	}
	return nil, false
}

// guardOfAll is the guard of an OR of xs: all of theirs.
func guardOfAll(xs []node) ([]*fieldNode, bool) {
	var out []*fieldNode
	for _, x := range xs {
		g, ok := guardOf(x)
		if !ok {
			return nil, false
		}
		out = append(out, g...)
	}
	return out, len(out) > 0
}

// patterns weighs the values of a guard: an equality or a file name
// one, a substring, which rules out less, four.
func patterns(g []*fieldNode) int {
	n := 0
	for _, f := range g {
		for _, ms := range f.values {
			for _, m := range ms {
				n++
				if p, ok := m.(*pattern); ok {
					if k, _ := guardLiteral(p); k == guardSub {
						n += 3
					}
				}
			}
		}
	}
	return n
}

// indexable reports whether the index can tell every string value that f
// holds for: a plain selection (not negated, no null, no fieldref) whose
// values are all uncased equalities, uncased suffixes `\name` holding no
// other backslash — such a suffix is what follows the value's last
// backslash, itself included — patterns with a literal of minLiteral
// bytes or more that every value they match holds (guardLiteral), or
// integers written plainly (`EventID: 4688`, which a value equals only
// when written alike, unless it is no plain integer itself: numEqual).
// For a string value, f then holds only when its lower-case form equals
// one of the literals or integers, what follows its last backslash
// equals one of the suffixes, its lower-case form holds one of the
// substrings, or, with integers, it is no plain integer (evalOnce:
// matchFlat, or anyMatch through matchLower). Under all, every value
// must hold, so one of them does.
func (f *fieldNode) indexable() bool {
	if f.raw || f.neq || f.null || f.refs != nil || len(f.values) == 0 {
		return false
	}
	for _, ms := range f.values {
		for _, m := range ms {
			switch m := m.(type) {
			case *pattern:
				if k, _ := guardLiteral(m); k == guardNone {
					return false
				}
			case numEqual:
				if !plainInt(m.text) {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

// fileSuffix reports whether lit is `\` and a name without a backslash.
func fileSuffix(lit string) bool {
	return len(lit) > 1 && lit[0] == '\\' && strings.IndexByte(lit[1:], '\\') < 0
}

// addGuard indexes the guard of cond, if it has one, and returns its
// number (0: none) and the fields it tests (their places in
// s.guardFields).
func (s *FieldSet) addGuard(cond node) (int32, []int32) {
	g, ok := guardOf(cond)
	if !ok {
		return 0, nil
	}
	s.guards++
	num := s.guards
	if s.guardBy == nil {
		s.guardBy = map[int]int32{}
	}
	var on []int32
	for _, f := range g {
		i, ok := s.guardBy[f.id]
		if !ok {
			i = int32(len(s.guardFields))
			s.guardBy[f.id] = i
			s.guardFields = append(s.guardFields, &fieldGuard{id: f.id, name: f.field, exact: map[string][]int32{}, base: map[string][]int32{}})
		}
		on = appendOnce(on, i)
		fg := s.guardFields[i]
		fg.all = appendOnce(fg.all, num)
		for _, ms := range f.values {
			for _, m := range ms {
				switch m := m.(type) {
				case numEqual:
					fg.exact[m.text] = appendOnce(fg.exact[m.text], num)
					fg.maxExact = max(fg.maxExact, len(m.text))
					fg.numeric = appendOnce(fg.numeric, num)
				case *pattern:
					switch k, lit := guardLiteral(m); k {
					case guardExact:
						fg.exact[lit] = appendOnce(fg.exact[lit], num)
						fg.maxExact = max(fg.maxExact, len(lit))
					case guardBase:
						fg.base[lit] = appendOnce(fg.base[lit], num)
						fg.maxBase = max(fg.maxBase, len(lit))
					case guardSub:
						if fg.subs == nil {
							fg.subs = map[string][]int32{}
						}
						fg.subs[lit] = appendOnce(fg.subs[lit], num)
						fg.lits.Store(nil) // made again at the next event
					}
				}
			}
		}
	}
	return num, on
}

func appendOnce(list []int32, n int32) []int32 {
	for _, x := range list {
		if x == n {
			return list
		}
	}
	return append(list, n)
}

// candidate reports whether the event p is bound to may meet c's guard:
// whether one of its selections holds for it, as the index tells. The
// fields of the guard are looked up in the index once per event, at the
// first rule whose guard tests them.
func (p *Prepared) candidate(c *Compiled) bool {
	for _, i := range c.guardOn {
		if p.fieldGen[i] != p.gen {
			p.markField(i)
		}
	}
	return p.cand[c.guard] == p.gen
}

// markField marks the guards that the event's value of guard field i
// may meet.
func (p *Prepared) markField(i int32) {
	p.fieldGen[i] = p.gen
	fg := p.set.guardFields[i]
	v, ok := p.value(fg.id, fg.name)
	if !ok || v == nil {
		return // no selection of it holds (none is of null: indexable)
	}
	s, isString := v.(string)
	if !isString {
		p.mark(fg.all)
		return
	}
	if len(s) <= fg.maxExact {
		p.mark(lookupLower(fg.exact, s))
	}
	if len(fg.numeric) > 0 && !plainInt(s) {
		p.mark(fg.numeric)
	}
	if j := strings.LastIndexByte(s, '\\'); j >= 0 && len(s)-j <= fg.maxBase {
		// The last backslash of s is its lower-case form's.
		p.mark(lookupLower(fg.base, s[j:]))
	}
	if fg.subs != nil {
		fg.literals().each(p.lower(fg.id, s), p.mark)
	}
}

// literals returns the index of fg's substrings, made at the first call
// since the set last grew: rules compile before events are matched, and
// then the workers of one org share it.
func (fg *fieldGuard) literals() *literals {
	if x := fg.lits.Load(); x != nil {
		return x
	}
	fg.mu.Lock()
	defer fg.mu.Unlock()
	if x := fg.lits.Load(); x != nil {
		return x
	}
	x := newLiterals(fg.subs)
	fg.lits.Store(x)
	return x
}

func (p *Prepared) mark(guards []int32) {
	for _, g := range guards {
		if p.cand[g] != p.gen {
			p.cand[g] = p.gen
			p.marked = append(p.marked, g)
		}
	}
}

// Guard returns the number of the rule's guard in its FieldSet (0: it
// has none, and every event of its log source is a candidate) and the
// guard fields it tests.
func (c *Compiled) Guard() (int32, []int32) { return c.guard, c.guardOn }

// Candidates looks the guard fields up in the index, those not looked up
// yet for the event p is bound to, and returns the guards the event may
// meet as far as all the fields looked up so far tell: a rule of the set
// whose guard is not among them, and whose guard fields are all among
// those looked up, is no match (MatchPrepared). The list is p's, valid
// until the next Reset.
func (p *Prepared) Candidates(fields []int32) []int32 {
	for _, i := range fields {
		if p.fieldGen[i] != p.gen {
			p.markField(i)
		}
	}
	return p.marked
}

// lookupLower returns m's entry for the ASCII lower-case form of s,
// without making it a string.
func lookupLower(m map[string][]int32, s string) []int32 {
	var buf [128]byte
	if len(s) > len(buf) {
		return m[lowerASCII(s)]
	}
	b := buf[:len(s)]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return m[string(b)]
}
