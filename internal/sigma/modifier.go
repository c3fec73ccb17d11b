package sigma

import (
	"encoding/base64"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
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
