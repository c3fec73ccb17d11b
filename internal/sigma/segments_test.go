package sigma

import (
	"regexp"
	"strings"
	"testing"
)

// globRegexp is the regular expression a * pattern means: what
// segments must agree with.
func globRegexp(v string, cased bool) *regexp.Regexp {
	var b strings.Builder
	if !cased {
		b.WriteString("(?i)")
	}
	b.WriteString("(?s)^")
	for i, part := range strings.Split(v, "*") {
		if i > 0 {
			b.WriteString(".*")
		}
		b.WriteString(regexp.QuoteMeta(part))
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// TestSegments: patterns of literals joined by * match as the regular
// expression they mean, cased or not, anchored or not.
func TestSegments(t *testing.T) {
	for _, c := range []struct {
		pattern string
		values  []string
	}{
		{"wget * - http* | perl", []string{"wget x - http://a | perl", "WGET x - HTTP://a | PERL", "wget - http | perl", "wget x - http://a | perl5", "x wget a - http | perl"}},
		{"*wget *; chmod +x*", []string{"sh -c wget a; chmod +x b", "wget a;chmod +x", "wget ; chmod +x", "chmod +x; wget "}},
		{"Trojan*FOUND", []string{"Trojan.X FOUND", "trojan found", "TrojanFOUND", "Trojan FOUN", "xTrojan FOUND"}},
		{"a*a", []string{"a", "aa", "aba", "ab"}},
		{"*ab*ab*", []string{"ab", "abab", "aabb", "xabyabz"}},
		{"ab*ab*", []string{"abab", "ab", "abxab"}},
	} {
		for _, cased := range []bool{false, true} {
			p, err := compilePattern(c.pattern, "", cased)
			if err != nil {
				t.Fatal(err)
			}
			if p.kind != patSegments {
				t.Fatalf("%q: kind %d, want segments", c.pattern, p.kind)
			}
			re := globRegexp(c.pattern, cased)
			for _, v := range c.values {
				if got, want := p.matchString(v), re.MatchString(v); got != want {
					t.Errorf("%q (cased %v) on %q: %v, want %v", c.pattern, cased, v, got, want)
				}
			}
		}
	}
}

// FuzzSegments: for any ASCII pattern of literals and * and any value,
// segments agree with the regular expression.
func FuzzSegments(f *testing.F) {
	f.Add("wget * - http* | perl", "wget x - http://a | perl", false)
	f.Add("a*a", "a", true)
	f.Add("*ab*ab*", "xabyabz", false)
	f.Fuzz(func(t *testing.T, pattern, value string, cased bool) {
		if !isASCII(pattern) || strings.ContainsAny(pattern, "?\\\\") || len(pattern) > 64 {
			return
		}
		if !cased && !isASCII(value) {
			return // ASCII folding, as every uncased match of the engine (docs/sigma.md)
		}
		p, err := compilePattern(pattern, "", cased)
		if err != nil || p.kind != patSegments {
			return
		}
		if got, want := p.matchString(value), globRegexp(pattern, cased).MatchString(value); got != want {
			t.Errorf("%q (cased %v) on %q: %v, want %v", pattern, cased, value, got, want)
		}
	})
}
