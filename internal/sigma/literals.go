package sigma

import "sort"

// literals finds, in one pass over a value, every one of a set of
// literals it holds, and the guards each names (Aho–Corasick): the index
// of the substrings rules' guards test on one field (guard.go), so that
// an event's command line is read once for all the `contains` of the
// rules, not once per rule.
//
// States are numbered breadth first, the root 0. The root's moves are a
// table of 256; every other state's are edges[first[s]:first[s+1]],
// sorted by byte, followed by fail[s] when none is of the byte. out[s]
// holds the guards of the literals that end at s, and next[s] the
// nearest state on the fail chain with some (0: none).
type literals struct {
	root  [256]int32
	first []int32
	edges []litEdge
	fail  []int32
	next  []int32
	out   [][]int32
}

type litEdge struct {
	b  byte
	to int32
}

// newLiterals builds the index of lits: each literal (ASCII lower case,
// not empty) with the guards it names.
func newLiterals(lits map[string][]int32) *literals {
	// The trie. The literals are added in sorted order, so that a
	// state's children are made in the order of their bytes: a byte is
	// the last child's or a new one.
	type tnode struct {
		kids   []litEdge
		guards []int32
	}
	trie := []tnode{{}}
	keys := make([]string, 0, len(lits))
	for k := range lits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, lit := range keys {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			if kids := trie[s].kids; len(kids) > 0 && kids[len(kids)-1].b == lit[i] {
				s = kids[len(kids)-1].to
				continue
			}
			n := int32(len(trie))
			trie[s].kids = append(trie[s].kids, litEdge{lit[i], n})
			trie = append(trie, tnode{})
			s = n
		}
		trie[s].guards = lits[lit]
	}

	// Renumber breadth first, so that a state's fail (shorter) is
	// numbered before it, and pack the moves.
	order := make([]int32, 1, len(trie)) // new number → trie state; the root first
	newOf := make([]int32, len(trie))
	for i := 0; i < len(order); i++ {
		for _, e := range trie[order[i]].kids {
			newOf[e.to] = int32(len(order))
			order = append(order, e.to)
		}
	}
	n := len(order)
	x := &literals{
		first: make([]int32, n+1),
		fail:  make([]int32, n),
		next:  make([]int32, n),
		out:   make([][]int32, n),
	}
	for i, old := range order {
		x.first[i] = int32(len(x.edges))
		x.out[i] = trie[old].guards
		for _, e := range trie[old].kids {
			x.edges = append(x.edges, litEdge{e.b, newOf[e.to]})
		}
	}
	x.first[n] = int32(len(x.edges))
	for _, e := range x.edges[x.first[0]:x.first[1]] {
		x.root[e.b] = e.to
	}

	// Fail links, breadth first: a child's is where its parent's fail
	// goes on the same byte.
	for s := int32(0); s < int32(n); s++ {
		for _, e := range x.edges[x.first[s]:x.first[s+1]] {
			if s == 0 {
				x.fail[e.to] = 0
			} else {
				x.fail[e.to] = x.step(x.fail[s], e.b)
			}
			f := x.fail[e.to]
			if len(x.out[f]) > 0 {
				x.next[e.to] = f
			} else {
				x.next[e.to] = x.next[f]
			}
		}
	}
	return x
}

// step returns the state after s on byte b.
func (x *literals) step(s int32, b byte) int32 {
	for s != 0 {
		for _, e := range x.edges[x.first[s]:x.first[s+1]] {
			if e.b == b {
				return e.to
			}
			if e.b > b {
				break
			}
		}
		s = x.fail[s]
	}
	return x.root[b]
}

// each calls fn with the guards of every literal s holds, once for each
// place one ends at.
func (x *literals) each(s string, fn func(guards []int32)) {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		if st == 0 {
			st = x.root[s[i]]
		} else {
			st = x.step(st, s[i])
		}
		if st == 0 {
			continue
		}
		for o := st; o != 0; o = x.next[o] {
			if len(x.out[o]) > 0 {
				fn(x.out[o])
			}
		}
	}
}
