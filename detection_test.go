package vigil_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func TestSummarizeWindow(t *testing.T) {
	at := func(s int) int64 { return time.Date(2026, 11, 1, 10, 0, s, 0, time.UTC).UnixNano() }
	var many []vigil.SignalPoint
	for i := 30; i > 0; i-- {
		many = append(many, vigil.SignalPoint{At: at(i), Member: fmt.Sprintf("p%02d", i)})
	}
	tests := []struct {
		name           string
		points         []vigil.SignalPoint
		count, dist    int
		members        []string
		first, lastSec int
	}{
		{"empty", nil, 0, 0, nil, -1, -1},
		{"newest first, repeats and empty members", []vigil.SignalPoint{
			{At: at(9), Member: "22"}, {At: at(5), Member: ""}, {At: at(7), Member: "22"}, {At: at(3), Member: "443"},
		}, 4, 2, []string{"22", "443"}, 3, 9},
		{"more than 20 distinct: the first 20 in order", many, 30, 30,
			[]string{"p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10",
				"p11", "p12", "p13", "p14", "p15", "p16", "p17", "p18", "p19", "p20"}, 1, 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := vigil.SummarizeWindow(tc.points)
			if st.Count != tc.count || st.Distinct != tc.dist || !slices.Equal(st.Members, tc.members) {
				t.Errorf("count %d distinct %d members %v; want %d %d %v", st.Count, st.Distinct, st.Members, tc.count, tc.dist, tc.members)
			}
			if tc.first >= 0 && (st.First.UnixNano() != at(tc.first) || st.Last.UnixNano() != at(tc.lastSec)) {
				t.Errorf("first %v last %v; want seconds %d and %d", st.First, st.Last, tc.first, tc.lastSec)
			}
		})
	}
}
