package correlate

import (
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// maxBurstScan bounds the recorded signals one burst search reads.
const maxBurstScan = 20000

// maxGrowScan bounds the signals read to describe a growing burst: its
// newest ones. A burst that goes on for minutes at live rates holds tens
// of thousands of signals, and rereading them on every growth was half of
// detection's cost; its count stays exact (a running total), the distinct
// members are those of the newest maxGrowScan, and its severity never
// drops as it grows.
const maxGrowScan = 1000

// summarize describes a window from its signals (their times, weights and
// members): what they count (the sum of their weights), distinct
// non-empty members (the first 20 in order in Members), and the times of
// the first and last.
func summarize(sigs []vigil.Signal) vigil.WindowState {
	var st vigil.WindowState
	if len(sigs) == 0 {
		return st
	}
	first, last := sigs[0].At, sigs[0].At
	seen := map[string]bool{}
	for _, s := range sigs {
		st.Count += s.Weight()
		first, last = minTime(first, s.At), maxTime(last, s.At)
		if s.Member != "" && !seen[s.Member] {
			seen[s.Member] = true
			st.Members = append(st.Members, s.Member)
		}
	}
	st.Distinct = len(st.Members)
	slices.Sort(st.Members)
	if len(st.Members) > 20 {
		st.Members = st.Members[:20]
	}
	st.First, st.Last = first.UTC(), last.UTC()
	return st
}

// findBurst finds, among the recorded signals of one (detector, key)
// sorted by time, the first window of span that ends at or after oldest
// (the oldest signal just recorded) while it can still hold a signal up to
// newest, and meets the thresholds: met(count, distinct), count the sum
// of the window's weights, distinct its distinct members. Signals recorded by another worker or an earlier late batch
// may lie on either side of the new ones, so windows ending at them count
// too. The burst runs from that window's first signal through the signals
// after its last that follow each other within span; from and to are Unix
// nanoseconds. With an order, a window also needs its members in that
// order (vigil.OrderChain).
func findBurst(sigs []vigil.Signal, span time.Duration, met func(count, distinct int) bool, order []string, oldest, newest time.Time) (from, to int64, ok bool) {
	return burstIn(signalList(sigs), span, met, order, oldest, newest)
}

// burstSignals are signals sorted by time as findBurst reads them: M is
// what tells their members apart, name gives a member's text (for an
// order).
type burstSignals[M comparable] interface {
	len() int
	at(i int) int64 // Unix nanoseconds
	weight(i int) int
	member(i int) (M, bool) // false: no member
	name(i int) string
}

type signalList []vigil.Signal

func (s signalList) len() int                    { return len(s) }
func (s signalList) at(i int) int64              { return nanos(s[i].At) }
func (s signalList) weight(i int) int            { return s[i].Weight() }
func (s signalList) member(i int) (string, bool) { return s[i].Member, s[i].Member != "" }
func (s signalList) name(i int) string           { return s[i].Member }

// burstIn is findBurst over any burstSignals.
func burstIn[M comparable, S burstSignals[M]](sigs S, span time.Duration, met func(count, distinct int) bool, order []string, oldest, newest time.Time) (from, to int64, ok bool) {
	sp := int64(span)
	chain := vigil.NewOrderChain(order)
	lo, hi := nanos(oldest), nanos(newest)
	members := map[M]int{}
	count := 0 // the weights of sigs[i..j]
	end := -1
	n := sigs.len()
	for i, j := 0, 0; j < n; j++ {
		at := sigs.at(j)
		if at > hi+sp {
			break // no later window holds a new signal
		}
		count += sigs.weight(j)
		if m, ok := sigs.member(j); ok {
			members[m]++
		}
		for sigs.at(i) < at-sp {
			count -= sigs.weight(i)
			if m, ok := sigs.member(i); ok {
				if members[m]--; members[m] == 0 {
					delete(members, m)
				}
			}
			i++
		}
		inOrder := chain == nil || chain.Add(sigs.name(j), at, sp)
		if at >= lo && inOrder && met(count, len(members)) {
			from, end = sigs.at(i), j
			break
		}
	}
	if end < 0 {
		return 0, 0, false
	}
	to = sigs.at(end)
	for k := end + 1; k < n; k++ {
		if sigs.at(k)-to > sp {
			break
		}
		to = sigs.at(k)
	}
	return from, to, true
}

// mergeSignals returns the distinct nodes of signals (a node is a key if
// any signal names it as one) and their distinct artifact ids, in
// first-seen order.
func mergeSignals(signals []vigil.Signal) ([]vigil.NodeRef, []string) {
	var refs []vigil.NodeRef
	idx := map[[2]string]int{}
	var ids []string
	seen := map[string]bool{}
	for _, sg := range signals {
		if !seen[sg.ArtifactID] {
			seen[sg.ArtifactID] = true
			ids = append(ids, sg.ArtifactID)
		}
		for _, n := range sg.Nodes {
			k := [2]string{n.Type, n.Value}
			if i, ok := idx[k]; ok {
				refs[i].Key = refs[i].Key || n.Key
				continue
			}
			idx[k] = len(refs)
			refs = append(refs, n)
		}
	}
	return refs, ids
}
