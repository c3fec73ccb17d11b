package sigma

import (
	"strings"
	"testing"
)

// lowerASCII lowers exactly the ASCII capitals, every other byte (UTF-8 or
// not) kept, and returns s itself when it has none.
func TestLowerASCII(t *testing.T) {
	ref := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	for _, s := range []string{"", "a", "A", `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, "ÉCOLE Kelvin\u212a ſ", "\xffA\xfe", "already lower", "ZZZ"} {
		if got := lowerASCII(s); got != ref(s) {
			t.Errorf("lowerASCII(%q) = %q, want %q", s, got, ref(s))
		}
	}
	s := strings.Repeat("x", 10)
	if got := lowerASCII(s); got != s {
		t.Fatal(got)
	}
}
