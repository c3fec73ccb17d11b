package sigma

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A matcher tests one field value.
type matcher interface {
	matchString(s string) bool
	// matchLower is matchString given s's ASCII lower-case form too
	// (lowerASCII), made once for all the rules that read the field.
	matchLower(s, lower string) bool
}

// pattern is a Sigma string value compiled: equality with the value's
// wildcards, or a prefix, suffix or substring, case-insensitive unless
// cased.
type pattern struct {
	kind  patternKind
	lit   string // the literal, lower-cased when not cased (kinds but glob)
	cased bool
	re    *regexp.Regexp // glob
	segs  *segments      // literals joined by * only (segments.go)
	// must, for a glob, is text every value it matches holds (in lower
	// case unless cased): a value without it is no match, found without
	// running the regular expression (globMust).
	must string
	// anchor is the offset in lit of the byte an uncased contains
	// searches for first (anchorOf).
	anchor int
	// need holds the bytes (letters folded) every value the pattern
	// matches holds, when needs: a raw line without one of them is no
	// match (Grams). Not set for regular expressions, whose (?i)
	// folds some letters to non-ASCII ones (k, K and the Kelvin sign).
	need  Grams
	needs bool
}

type patternKind int

const (
	patExact patternKind = iota
	patPrefix
	patSuffix
	patContains
	patAny // "*": any value
	patGlob
	patSegments
)

// compilePattern compiles a Sigma string (wildcards * and ?, escapes
// \* \? \\) with the match modifier's implied wildcards.
func compilePattern(v string, match string, cased bool) (*pattern, error) {
	// Split into literal runs and wildcards. Escapes are read in the
	// value as written, before the modifier's wildcards are added: the
	// '\' of contains '\' is a backslash, not an escape of the '*'
	// that contains puts after it.
	type piece struct {
		lit  string
		wild byte // '*' or '?' or 0
	}
	var pieces []piece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			pieces = append(pieces, piece{lit: lit.String()})
			lit.Reset()
		}
	}
	addStar := func() {
		if len(pieces) == 0 || pieces[len(pieces)-1].wild != '*' {
			pieces = append(pieces, piece{wild: '*'})
		}
	}
	if match == "contains" || match == "endswith" {
		addStar()
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v) && (v[i+1] == '*' || v[i+1] == '?' || v[i+1] == '\\'):
			lit.WriteByte(v[i+1])
			i++
		case c == '*' || c == '?':
			flush()
			if c == '*' {
				addStar() // ** is *
				continue
			}
			pieces = append(pieces, piece{wild: c})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	if match == "contains" || match == "startswith" {
		addStar()
	}
	p := &pattern{cased: cased}
	defer p.setNeed()
	ascii := isASCII(v)
	fold := func(s string) string {
		if cased {
			return s
		}
		return strings.ToLower(s)
	}
	star := func(i int) bool { return i >= 0 && i < len(pieces) && pieces[i].wild == '*' }
	isLit := func(i int) bool { return i >= 0 && i < len(pieces) && pieces[i].wild == 0 }
	if ascii || cased {
		switch {
		case len(pieces) == 0:
			p.kind, p.lit = patExact, ""
			return p, nil
		case len(pieces) == 1 && star(0):
			p.kind = patAny
			return p, nil
		case len(pieces) == 1 && isLit(0):
			p.kind, p.lit = patExact, fold(pieces[0].lit)
			return p, nil
		case len(pieces) == 2 && isLit(0) && star(1):
			p.kind, p.lit = patPrefix, fold(pieces[0].lit)
			return p, nil
		case len(pieces) == 2 && star(0) && isLit(1):
			p.kind, p.lit = patSuffix, fold(pieces[1].lit)
			return p, nil
		case len(pieces) == 3 && star(0) && isLit(1) && star(2):
			p.kind, p.lit = patContains, fold(pieces[1].lit)
			p.anchor = anchorOf(p.lit)
			return p, nil
		}
		if sg := newSegments(len(pieces), func(i int) (string, byte) { return fold(pieces[i].lit), pieces[i].wild }); sg != nil {
			p.kind, p.segs = patSegments, sg
			return p, nil
		}
	}
	var re strings.Builder
	if !cased {
		re.WriteString("(?i)")
	}
	re.WriteString("(?s)^")
	for _, pc := range pieces {
		switch pc.wild {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(pc.lit))
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, err
	}
	p.kind, p.re = patGlob, rx
	for _, pc := range pieces {
		if m := globMust(pc.lit, cased); len(m) > len(p.must) {
			p.must = m
		}
	}
	return p, nil
}

// setNeed sets the bytes every value p matches holds: those of its
// literals, matched byte for byte or with ASCII letters folded.
func (p *pattern) setNeed() {
	switch p.kind {
	case patExact, patPrefix, patSuffix, patContains:
		p.need.Add(p.lit)
	case patSegments:
		for _, l := range p.segs.lits {
			p.need.Add(l)
		}
	default:
		return
	}
	p.needs = p.need != Grams{}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (p *pattern) matchString(s string) bool {
	switch p.kind {
	case patAny:
		return true
	case patExact:
		if p.cased {
			return s == p.lit
		}
		return len(s) == len(p.lit) && equalFoldASCII(s, p.lit)
	case patPrefix:
		if p.cased {
			return strings.HasPrefix(s, p.lit)
		}
		return len(s) >= len(p.lit) && equalFoldASCII(s[:len(p.lit)], p.lit)
	case patSuffix:
		if p.cased {
			return strings.HasSuffix(s, p.lit)
		}
		return len(s) >= len(p.lit) && equalFoldASCII(s[len(s)-len(p.lit):], p.lit)
	case patContains:
		if p.cased {
			return strings.Contains(s, p.lit)
		}
		return indexFoldAnchored(s, p.lit, p.anchor) >= 0
	case patSegments:
		return p.segs.match(s, p.cased)
	}
	if p.must != "" {
		if p.cased && !strings.Contains(s, p.must) || !p.cased && indexFoldASCII(s, p.must) < 0 {
			return false
		}
	}
	return p.re.MatchString(s)
}

// matchLower is matchString on lower, s's ASCII lower-case form, where
// folding ASCII letters is all the pattern does: the literal, in lower
// case, compared byte for byte.
func (p *pattern) matchLower(s, lower string) bool {
	if p.cased {
		return p.matchString(s)
	}
	switch p.kind {
	case patAny:
		return true
	case patExact:
		return lower == p.lit
	case patPrefix:
		return strings.HasPrefix(lower, p.lit)
	case patSuffix:
		return strings.HasSuffix(lower, p.lit)
	case patContains:
		return strings.Contains(lower, p.lit)
	case patSegments:
		return p.segs.match(lower, true)
	}
	if p.must != "" && !strings.Contains(lower, p.must) {
		return false
	}
	return p.re.MatchString(s)
}

// globMust returns the longest run of lit that every value holds where a
// glob matches lit: all of it when cased (valid UTF-8: the expression
// reads invalid bytes as U+FFFD); uncased, the characters that (?i)
// matches only as themselves or as an ASCII letter of either case,
// those in lower case (not k and s, which (?i) also matches as the
// Kelvin sign and the long s).
func globMust(lit string, cased bool) string {
	if cased {
		if utf8.ValidString(lit) {
			return lit
		}
		return ""
	}
	var best, run strings.Builder
	flush := func() {
		if run.Len() > best.Len() {
			best.Reset()
			best.WriteString(run.String())
		}
		run.Reset()
	}
	for _, r := range lit {
		if !plainFold(r) {
			flush()
			continue
		}
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		run.WriteRune(r)
	}
	flush()
	return best.String()
}

// plainFold reports whether (?i) matches r only as itself, or as itself
// and one other ASCII letter (its other case).
func plainFold(r rune) bool {
	if r == utf8.RuneError {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf || r >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// equalFoldASCII compares s with lower, an ASCII string in lower case,
// folding ASCII letters of s; len(s) == len(lower).
func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// indexFoldASCII finds lower (ASCII, lower case) in s, folding ASCII
// letters of s: indexFoldAnchored on lower's first byte.
func indexFoldASCII(s, lower string) int { return indexFoldAnchored(s, lower, 0) }
