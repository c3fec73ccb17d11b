package correlate

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// sec returns a fixed instant plus s seconds.
func sec(s int) time.Time { return time.Date(2026, 11, 1, 10, 0, s, 0, time.UTC) }

func TestSummarize(t *testing.T) {
	var many []vigil.Signal
	for i := 30; i > 0; i-- {
		many = append(many, vigil.Signal{At: sec(i), Member: fmt.Sprintf("p%02d", i)})
	}
	tests := []struct {
		name           string
		sigs           []vigil.Signal
		count, dist    int
		members        []string
		first, lastSec int
	}{
		{"empty", nil, 0, 0, nil, -1, -1},
		{"newest first, repeats and empty members", []vigil.Signal{
			{At: sec(9), Member: "22"}, {At: sec(5), Member: ""}, {At: sec(7), Member: "22"}, {At: sec(3), Member: "443"},
		}, 4, 2, []string{"22", "443"}, 3, 9},
		{"more than 20 distinct: the first 20 in order", many, 30, 30,
			[]string{"p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10",
				"p11", "p12", "p13", "p14", "p15", "p16", "p17", "p18", "p19", "p20"}, 1, 30},
		{"weights: a line of 3 attempts, evidence counts nothing", []vigil.Signal{
			{At: sec(1), Member: "root", Count: 3}, {At: sec(2), Member: "root", Evidence: true}, {At: sec(3), Member: "bob"},
		}, 4, 2, []string{"bob", "root"}, 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := summarize(tc.sigs)
			if st.Count != tc.count || st.Distinct != tc.dist || !slices.Equal(st.Members, tc.members) {
				t.Errorf("count %d distinct %d members %v; want %d %d %v", st.Count, st.Distinct, st.Members, tc.count, tc.dist, tc.members)
			}
			if tc.first >= 0 && (!st.First.Equal(sec(tc.first)) || !st.Last.Equal(sec(tc.lastSec))) {
				t.Errorf("first %v last %v; want seconds %d and %d", st.First, st.Last, tc.first, tc.lastSec)
			}
		})
	}
}

func TestFindBurst(t *testing.T) {
	at := func(secs ...int) []vigil.Signal {
		out := make([]vigil.Signal, len(secs))
		for i, s := range secs {
			out[i] = vigil.Signal{At: sec(s), Member: fmt.Sprintf("m%d", i%2)}
		}
		return out
	}
	// evidence marks the signals at indexes as evidence.
	evidence := func(sigs []vigil.Signal, idx ...int) []vigil.Signal {
		for _, i := range idx {
			sigs[i].Evidence = true
		}
		return sigs
	}
	// members gives each signal a member of its own.
	members := func(sigs []vigil.Signal) []vigil.Signal {
		for i := range sigs {
			sigs[i].Member = fmt.Sprintf("u%d", i)
		}
		return sigs
	}
	tests := []struct {
		name                  string
		sigs                  []vigil.Signal
		minCount, minDistinct int
		orDistinct            int
		oldest, newest        int
		ok                    bool
		from, to              int
	}{
		{"below the count", at(0, 1, 2), 4, 0, 0, 2, 2, false, 0, 0},
		{"a window of span 10 s", at(0, 3, 6, 9), 4, 0, 0, 9, 9, true, 0, 9},
		{"the burst runs on while signals follow within span", at(0, 3, 6, 9, 15, 30), 4, 0, 0, 9, 9, true, 0, 15},
		{"too spread out", at(0, 11, 22, 33), 2, 0, 0, 33, 33, false, 0, 0},
		{"a window ending before the new signals does not fire", at(0, 1, 2, 3, 40), 4, 0, 0, 40, 40, false, 0, 0},
		{"an older recorded signal completes the window", at(0, 1, 2, 3), 4, 0, 0, 0, 0, true, 0, 3},
		{"distinct members", at(0, 2, 4, 6), 2, 3, 0, 6, 6, false, 0, 0},
		{"evidence counts nothing", evidence(at(0, 1, 2, 3, 4), 1, 3), 4, 0, 0, 4, 4, false, 0, 0},
		{"evidence in the window, the count from the others", evidence(at(0, 1, 2, 3, 4, 5, 6), 1, 3), 4, 0, 0, 6, 6, true, 0, 6},
		{"a heavy signal fires alone", []vigil.Signal{{At: sec(5), Count: 5}}, 5, 0, 0, 5, 5, true, 5, 5},
		{"or distinct: many members whatever the count", members(evidence(at(0, 1, 2, 3, 4), 0, 1, 2, 3, 4)), 5, 0, 5, 4, 4, true, 0, 4},
		{"or distinct: too few members", members(evidence(at(0, 1, 2, 3), 0, 1, 2, 3)), 5, 0, 5, 3, 3, false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			met := func(count, distinct int) bool {
				return vigil.ThresholdMet(tc.minCount, tc.minDistinct, tc.orDistinct, count, distinct)
			}
			from, to, ok := findBurst(tc.sigs, 10*time.Second, met, nil, sec(tc.oldest), sec(tc.newest))
			if ok != tc.ok || ok && (from != nanos(sec(tc.from)) || to != nanos(sec(tc.to))) {
				t.Errorf("findBurst = %v..%v %v; want seconds %d..%d %v", fromNanos(from), fromNanos(to), ok, tc.from, tc.to, tc.ok)
			}
		})
	}
}

func TestMergeSignals(t *testing.T) {
	ip := vigil.NodeRef{Type: vigil.NodeIP, Value: "203.0.113.7"}
	host := vigil.NodeRef{Type: vigil.NodeHost, Value: "web-01"}
	keyIP := ip
	keyIP.Key = true
	refs, ids := mergeSignals([]vigil.Signal{
		{ArtifactID: "a", Nodes: []vigil.NodeRef{ip, host}},
		{ArtifactID: "b", Nodes: []vigil.NodeRef{keyIP}},
		{ArtifactID: "a", Nodes: []vigil.NodeRef{host}},
	})
	if !slices.Equal(ids, []string{"a", "b"}) || !slices.Equal(refs, []vigil.NodeRef{keyIP, host}) {
		t.Errorf("mergeSignals = %v %v; want [a b] and the address as a key, then the host", refs, ids)
	}
}

// TestFindBurstOrdered: with an order, a window fires only when its
// members follow it (a temporal_ordered correlation), and the burst is
// found wherever the new signals fall.
func TestFindBurstOrdered(t *testing.T) {
	sig := func(m string, s int) vigil.Signal { return vigil.Signal{At: sec(s), Member: m} }
	met := func(count, distinct int) bool { return vigil.ThresholdMet(1, 2, 0, count, distinct) }
	tests := []struct {
		name           string
		sigs           []vigil.Signal
		oldest, newest int
		ok             bool
		from, to       int
	}{
		{"in order", []vigil.Signal{sig("a", 0), sig("b", 4)}, 4, 4, true, 0, 4},
		{"out of order", []vigil.Signal{sig("b", 0), sig("a", 4)}, 4, 4, false, 0, 0},
		{"across the span", []vigil.Signal{sig("a", 0), sig("b", 11)}, 11, 11, false, 0, 0},
		{"a late first link recorded after the second", []vigil.Signal{sig("a", 0), sig("b", 4)}, 0, 0, true, 0, 4},
		{"then b, a, b: the window of the second b", []vigil.Signal{sig("b", 0), sig("a", 2), sig("b", 5), sig("b", 9)}, 9, 9, true, 0, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			from, to, ok := findBurst(tc.sigs, 10*time.Second, met, []string{"a", "b"}, sec(tc.oldest), sec(tc.newest))
			if ok != tc.ok || ok && (from != nanos(sec(tc.from)) || to != nanos(sec(tc.to))) {
				t.Errorf("findBurst = %v..%v %v; want seconds %d..%d %v", fromNanos(from), fromNanos(to), ok, tc.from, tc.to, tc.ok)
			}
		})
	}
}
