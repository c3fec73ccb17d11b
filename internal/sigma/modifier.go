package sigma

import (
	"encoding/base64"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A Sigma selection's modifiers, in the order they apply: transforms
// (windash, utf16*, base64*) turn each value into one or more strings;
// one match type says how each string meets the field (contains,
// startswith, endswith, re, cidr, lt…, exists, fieldref; the default
// is equality with wildcards); all, cased and neq change how.
type modifiers struct {
	transforms []string
	match      string // "" for equality
	reFlags    string // i, m, s of re
	all        bool
	cased      bool
	neq        bool
}

// Modifiers this engine knows, with the reason of those it refuses.
var refusedModifiers = map[string]string{
	"minute": "time modifiers need a date field; Vigil's events keep the time outside the fields",
	"hour":   "time modifiers need a date field; Vigil's events keep the time outside the fields",
	"day":    "time modifiers need a date field; Vigil's events keep the time outside the fields",
	"week":   "time modifiers need a date field; Vigil's events keep the time outside the fields",
	"month":  "time modifiers need a date field; Vigil's events keep the time outside the fields",
	"year":   "time modifiers need a date field; Vigil's events keep the time outside the fields",
}

func parseModifiers(mods []string, path string) (modifiers, error) {
	var m modifiers
	setMatch := func(name string) error {
		if m.match != "" {
			return fail(path, "modifiers %s and %s do not combine", m.match, name)
		}
		m.match = name
		return nil
	}
	for _, name := range mods {
		switch name {
		case "contains", "startswith", "endswith", "re", "cidr", "lt", "lte", "gt", "gte", "exists", "fieldref":
			if err := setMatch(name); err != nil {
				return m, err
			}
		case "i", "m", "s":
			if m.match != "re" {
				return m, fail(path, "modifier %s is a flag of re and follows it", name)
			}
			if !strings.Contains(m.reFlags, name) {
				m.reFlags += name
			}
		case "all":
			m.all = true
		case "cased":
			m.cased = true
		case "neq":
			m.neq = true
		case "windash", "base64", "base64offset", "utf16le", "utf16be", "utf16", "wide":
			// windash only swaps the dashes of the value, which contains,
			// startswith and endswith leave as they are: it may follow
			// them, as SigmaHQ's rules write it (CommandLine|contains|windash).
			if m.match != "" && !(name == "windash" && (m.match == "contains" || m.match == "startswith" || m.match == "endswith")) {
				return m, fail(path, "modifier %s transforms the value and comes before %s", name, m.match)
			}
			m.transforms = append(m.transforms, name)
		case "expand":
			m.transforms = append(m.transforms, name)
		default:
			if why, ok := refusedModifiers[name]; ok {
				return m, fail(path, "modifier %s is not supported: %s", name, why)
			}
			return m, fail(path, "unknown modifier %q", name)
		}
	}
	if m.cased && (m.match == "re" || m.match == "cidr" || isNumeric(m.match) || m.match == "exists") {
		return m, fail(path, "modifier cased applies to string matches, not %s", m.match)
	}
	if (isNumeric(m.match) || m.match == "cidr" || m.match == "exists") && len(m.transforms) > 0 {
		return m, fail(path, "modifier %s does not take transformed values (%s)", m.match, m.transforms[0])
	}
	if m.neq && m.all {
		return m, fail(path, "modifiers neq and all do not combine")
	}
	return m, nil
}

func isNumeric(match string) bool {
	return match == "lt" || match == "lte" || match == "gt" || match == "gte"
}

// windashChars are the characters windash makes interchangeable.
var windashChars = []string{"-", "/", "\u2013", "\u2014", "\u2015"}

// maxWindashFlags bounds the dashes of one value windash permutes (5ⁿ
// strings).
const maxWindashFlags = 4

// transform applies the transform modifiers to a value, giving the
// strings it stands for (ORed).
func transform(v string, ts []string, path string) ([]string, error) {
	out := []string{v}
	for _, t := range ts {
		var next []string
		for _, s := range out {
			switch t {
			case "windash":
				vs, err := windash(s, path)
				if err != nil {
					return nil, err
				}
				next = append(next, vs...)
			case "utf16le", "wide":
				next = append(next, utf16Bytes(s, false, false))
			case "utf16be":
				next = append(next, utf16Bytes(s, true, false))
			case "utf16":
				next = append(next, utf16Bytes(s, false, true))
			case "base64":
				next = append(next, base64.StdEncoding.EncodeToString([]byte(s)))
			case "base64offset":
				next = append(next, base64Offsets(s)...)
			case "expand":
				if ph := placeholderRE.FindString(strings.ReplaceAll(s, `\%`, "")); ph != "" {
					return nil, fail(path, "modifier expand: placeholder %s has no value in Vigil (placeholders are not supported)", ph)
				}
				next = append(next, strings.ReplaceAll(s, `\%`, "%"))
			}
		}
		out = next
	}
	if len(out) > maxValues {
		return nil, fail(path, "the modifiers make more than %d values", maxValues)
	}
	return out, nil
}

// placeholderRE finds a placeholder (%name%) once escaped percent signs
// are dropped.
var placeholderRE = regexp.MustCompile(`%[^%\s]+%`)

// windash returns s with each dash that starts a command-line flag (at
// the start of s or after a non-word character, before a word
// character) replaced by each of windashChars in turn: all
// permutations.
func windash(s, path string) ([]string, error) {
	var at []int // byte offsets of the flag dashes
	var width []int
	prevWord := false
	for i, r := range s {
		w := utf8.RuneLen(r)
		if r == '-' || r == '/' {
			next, _ := utf8.DecodeRuneInString(s[i+w:])
			if !prevWord && i+w < len(s) && isWordRune(next) {
				at = append(at, i)
				width = append(width, w)
			}
		}
		prevWord = isWordRune(r)
	}
	if len(at) > maxWindashFlags {
		return nil, fail(path, "modifier windash: %q has %d flags, at most %d", s, len(at), maxWindashFlags)
	}
	out := []string{""}
	prev := 0
	for k, i := range at {
		var next []string
		for _, o := range out {
			for _, c := range windashChars {
				next = append(next, o+s[prev:i]+c)
			}
		}
		out, prev = next, i+width[k]
	}
	for j := range out {
		out[j] += s[prev:]
	}
	return out, nil
}

func isWordRune(r rune) bool {
	return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127 && r != utf8.RuneError
}

func utf16Bytes(s string, bigEndian, bom bool) string {
	units := utf16.Encode([]rune(s))
	b := make([]byte, 0, 2*len(units)+2)
	if bom {
		b = append(b, 0xFF, 0xFE)
	}
	for _, u := range units {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return string(b)
}

// base64Offsets returns the three base64 forms of s as it appears at
// offsets 0, 1 and 2 of an encoded text, without the characters that
// depend on the bytes around it.
func base64Offsets(s string) []string {
	starts := [3]int{0, 2, 3}
	out := make([]string, 0, 3)
	for i := 0; i < 3; i++ {
		enc := base64.StdEncoding.EncodeToString(append([]byte(strings.Repeat(" ", i)), s...))
		end := len(enc)
		switch (len(s) + i) % 3 {
		case 1:
			end -= 3
		case 2:
			end -= 2
		}
		if starts[i] < end {
			out = append(out, enc[starts[i]:end])
		}
	}
	return out
}

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

// regexMatcher is a value of re: case-sensitive unless flag i, found
// anywhere in the field.
type regexMatcher struct{ re *regexp.Regexp }

func (m regexMatcher) matchString(s string) bool   { return m.re.MatchString(s) }
func (m regexMatcher) matchLower(s, _ string) bool { return m.re.MatchString(s) }

func compileRegex(v, flags, path string) (matcher, error) {
	prefix := ""
	if flags != "" {
		prefix = "(?" + flags + ")"
	}
	re, err := regexp.Compile(prefix + v)
	if err != nil {
		return nil, fail(path, "modifier re: %s (Vigil runs RE2: no look-around or back-references)", reReason(err))
	}
	return regexMatcher{re}, nil
}

func reReason(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

// cidrMatcher matches an address field inside a prefix.
type cidrMatcher struct{ prefix netip.Prefix }

func (m cidrMatcher) matchString(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return false
	}
	return m.prefix.Contains(a.Unmap().WithZone(""))
}

func (m cidrMatcher) matchLower(s, _ string) bool { return m.matchString(s) }

func compileCIDR(v, path string) (matcher, error) {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		a, aerr := netip.ParseAddr(v)
		if aerr != nil {
			return nil, fail(path, "modifier cidr: %q is no network (10.0.0.0/8, 2001:db8::/32)", v)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return cidrMatcher{p.Masked()}, nil
}

// numMatcher compares a numeric field (or a field holding a number as
// text) with a bound.
type numMatcher struct {
	op    string
	bound float64
}

func (m numMatcher) matchString(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	return m.matchNum(f)
}

func (m numMatcher) matchLower(s, _ string) bool { return m.matchString(s) }

func (m numMatcher) matchNum(f float64) bool {
	switch m.op {
	case "lt":
		return f < m.bound
	case "lte":
		return f <= m.bound
	case "gt":
		return f > m.bound
	}
	return f >= m.bound
}

func compileNumeric(op string, v Value, path string) (matcher, error) {
	f, err := strconv.ParseFloat(v.Text, 64)
	if err != nil || v.Kind == KindBool || v.Kind == KindNull {
		return nil, fail(path, "modifier %s compares with a number, not %q", op, v.Text)
	}
	return numMatcher{op: op, bound: f}, nil
}

// numEqual matches a numeric value written as a number in the rule: the
// field's number or text equal to it.
type numEqual struct {
	text string
	num  float64
}

func (m numEqual) matchString(s string) bool {
	if s == m.text {
		return true
	}
	if plainInt(s) && plainInt(m.text) {
		return false // two integers written alike are equal only as text
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && f == m.num
}

// plainInt reports whether s is an integer written as ParseFloat reads it
// exactly and only one way: 1 to 15 digits, no sign, no leading zero.
func plainInt(s string) bool {
	if len(s) == 0 || len(s) > 15 || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (m numEqual) matchLower(s, _ string) bool { return m.matchString(s) }
