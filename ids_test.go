package vigil

import (
	"slices"
	"testing"
)

func TestDedupeAndInIDOrder(t *testing.T) {
	ids := Dedupe([]string{"c", "a", "c", "b", "a"})
	if want := []string{"c", "a", "b"}; !slices.Equal(ids, want) {
		t.Fatalf("Dedupe = %v, want %v", ids, want)
	}
	if got := Dedupe(nil); got == nil || len(got) != 0 {
		t.Errorf("Dedupe(nil) = %#v, want an empty slice", got)
	}
	byID := map[string]int{"a": 1, "b": 2, "x": 9} // "c" not found, "x" not asked for
	if got, want := InIDOrder(ids, byID), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("InIDOrder = %v, want %v", got, want)
	}
}
