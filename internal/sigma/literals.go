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
	// The trie, each state's children by byte.
	type tnode struct {
		kids   map[byte]int32
		guards []int32
	}
	trie := []tnode{{}}
	keys := make([]string, 0, len(lits))
	for k := range lits {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same states for the same literals
	for _, lit := range keys {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			n, ok := trie[s].kids[lit[i]]
			if !ok {
				if trie[s].kids == nil {
					trie[s].kids = map[byte]int32{}
				}
				n = int32(len(trie))
				trie[s].kids[lit[i]] = n
				trie = append(trie, tnode{})
			}
			s = n
		}
		trie[s].guards = lits[lit]
	}

	// Renumber breadth first, so that a state's fail (shorter) is
	// numbered before it, and pack the moves.
	order := make([]int32, 0, len(trie)) // new number → trie state
	newOf := make([]int32, len(trie))
	order = append(order, 0)
	for i := 0; i < len(order); i++ {
		t := &trie[order[i]]
		bs := make([]int, 0, len(t.kids))
		for b := range t.kids {
			bs = append(bs, int(b))
		}
		sort.Ints(bs)
		for _, b := range bs {
			k := t.kids[byte(b)]
			newOf[k] = int32(len(order))
			order = append(order, k)
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
		t := &trie[old]
		x.first[i] = int32(len(x.edges))
		x.out[i] = t.guards
		bs := make([]int, 0, len(t.kids))
		for b := range t.kids {
			bs = append(bs, int(b))
		}
		sort.Ints(bs)
		for _, b := range bs {
			x.edges = append(x.edges, litEdge{byte(b), newOf[t.kids[byte(b)]]})
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
