package sigma

import "strings"

// segments is a wildcard pattern whose only wildcard is * (literal runs
// joined by any text), matched by finding each run after the previous
// one, leftmost first: linear in the value, where the regular expression
// it would otherwise be backtracks (SigmaHQ's keyword lists are full of
// them: 'wget * - http* | perl', 'Trojan*FOUND').
type segments struct {
	lits       []string // lower-cased unless the pattern is cased
	start, end bool     // the first run starts the value, the last ends it
}

// newSegments returns the segments of n pieces (piece(i): a literal, or
// a wildcard '*' or '?'), or nil when a piece is '?' or there are fewer
// than two literal runs (the simpler kinds cover those).
func newSegments(n int, piece func(i int) (lit string, wild byte)) *segments {
	sg := &segments{start: true, end: true}
	for i := 0; i < n; i++ {
		lit, wild := piece(i)
		switch wild {
		case '?':
			return nil
		case '*':
			if i == 0 {
				sg.start = false
			}
			if i == n-1 {
				sg.end = false
			}
		default:
			sg.lits = append(sg.lits, lit)
		}
	}
	if len(sg.lits) < 2 {
		return nil
	}
	return sg
}

func (sg *segments) match(s string, cased bool) bool {
	index := indexFoldASCII
	if cased {
		index = strings.Index
	}
	lits := sg.lits
	if sg.start {
		l := lits[0]
		if len(s) < len(l) || !sg.equal(s[:len(l)], l, cased) {
			return false
		}
		s, lits = s[len(l):], lits[1:]
	}
	last := len(lits) - 1
	for i, l := range lits {
		if i == last && sg.end {
			return len(s) >= len(l) && sg.equal(s[len(s)-len(l):], l, cased)
		}
		j := index(s, l)
		if j < 0 {
			return false
		}
		s = s[j+len(l):]
	}
	return true
}

func (sg *segments) equal(s, lit string, cased bool) bool {
	if cased {
		return s == lit
	}
	return equalFoldASCII(s, lit)
}
