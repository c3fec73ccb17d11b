package vigil

import (
	"strings"
	"testing"
	"time"
)

// TestOrderChain: a window holds a chain when its members name the order
// one after the other (at the same time counting as after) within span.
func TestOrderChain(t *testing.T) {
	// Each signal "member@second"; want: whether the window of 10 s
	// ending at the last signal holds the chain a, b, c.
	tests := []struct {
		name string
		sigs string
		want bool
	}{
		{"in order", "a@0 b@3 c@6", true},
		{"out of order", "b@0 a@3 c@6", false},
		{"last two swapped", "a@0 c@3 b@6", false},
		{"a missing", "b@0 c@6", false},
		{"in order across the span", "a@0 b@5 c@11", false},
		{"a later a starts a chain within the span", "a@0 b@1 a@4 b@5 c@11", true},
		{"noise between links", "c@0 a@1 x@2 a@3 c@4 b@5 b@6 c@7", true},
		{"the same time counts as after, whatever their order", "c@2 b@2 a@2", true},
		{"the same time after an earlier link", "a@0 c@4 b@4", true},
		{"only the last link at the same time as the first", "b@1 a@2 c@2", false},
		{"repeats of each rule", "a@0 a@1 b@2 b@3 c@4 c@5", true},
	}
	span := int64(10 * time.Second)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewOrderChain([]string{"a", "b", "c"})
			var got bool
			for _, s := range strings.Fields(tc.sigs) {
				m, at, _ := strings.Cut(s, "@")
				d, err := time.ParseDuration(at + "s")
				if err != nil {
					t.Fatal(err)
				}
				got = c.Add(m, int64(d), span)
			}
			if got != tc.want {
				t.Errorf("%s: %v, want %v", tc.sigs, got, tc.want)
			}
		})
	}
	if NewOrderChain(nil) != nil {
		t.Error("an empty order keeps no chain")
	}
}
