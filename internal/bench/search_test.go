package bench

import (
	"testing"
	"time"
)

// TestSearchClasses: the search phase times the queries analysts type
// most besides single terms: a term within a source and a time window,
// and the second and tenth page of a frequent term.
func TestSearchClasses(t *testing.T) {
	b := &bench{}
	var sourceWindow bool
	pages := map[int]bool{}
	names := map[string]bool{}
	for _, q := range b.searchQueries() {
		if names[q.name] {
			t.Errorf("class %q twice", q.name)
		}
		names[q.name] = true
		if q.source != "" && q.query != "" && q.window == 24*time.Hour {
			sourceWindow = true
		}
		if q.offset > 0 {
			pages[q.offset] = true
		}
	}
	if !sourceWindow || !pages[50] || !pages[450] {
		t.Errorf("a term within a source and a day: %v; pages at offsets 50 and 450: %v", sourceWindow, pages)
	}
}

// TestEstimateHeld: estimated totals of identical requests that moved by
// at most 1 % (a sample beside enrichment's writes) hold; more does not.
func TestEstimateHeld(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int64
		want   bool
	}{
		{9917861, 9917861, true},
		{9917861, 9918900, true},
		{9917861, 10017039, true},
		{9917861, 10017041, false},
		{10001, 12000, false},
		{0, 0, true},
		{0, 1, false},
	} {
		if got := estimateHeld(tc.lo, tc.hi); got != tc.want {
			t.Errorf("estimateHeld(%d, %d) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}
