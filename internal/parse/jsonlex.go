package parse

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonLexer walks one JSON text in a single pass, without reflection and
// without allocating except for strings that hold escapes. The Suricata
// and Zeek parsers use it instead of encoding/json because a typed
// json.Unmarshal of an EVE line costs more than the whole budget of a
// line at 200k lines/s, and a parser that meets an unknown member only
// needs to step over it.
//
// It validates as it goes: the first syntax error sets bad and moves to
// the end of the input, so every later call is a cheap no-op and callers
// check bad (and end) once when they are done. Invalid UTF-8 inside
// strings is tolerated, as encoding/json tolerates it, and replaced by
// U+FFFD in the strings it returns.
type jsonLexer struct {
	b   []byte
	i   int
	bad bool
	// high reports that the last string stringBytes read holds a byte
	// of 0x80 or more as written (not by an escape): only then can it be
	// invalid UTF-8 (str).
	high bool
}

// jsonMaxDepth bounds nesting, as encoding/json does, so that a hostile
// line of a million brackets costs no more than its length.
const jsonMaxDepth = 10000

func (l *jsonLexer) fail() {
	l.bad = true
	l.i = len(l.b)
}

func (l *jsonLexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// peek returns the next non-blank byte without consuming it, 0 at the end.
func (l *jsonLexer) peek() byte {
	l.ws()
	if l.i < len(l.b) {
		return l.b[l.i]
	}
	return 0
}

// end reports whether the text was valid and nothing but blanks follows.
func (l *jsonLexer) end() bool {
	l.ws()
	return !l.bad && l.i == len(l.b)
}

// object consumes '{' and reports whether the next value is an object. It
// consumes nothing when it is not, so the caller can skip the value.
func (l *jsonLexer) object() bool {
	if l.peek() != '{' {
		return false
	}
	l.i++
	return true
}

// array is object for '['.
func (l *jsonLexer) array() bool {
	if l.peek() != '[' {
		return false
	}
	l.i++
	return true
}

// key returns the next member name of an object opened by object, having
// consumed the ':' after it; ok is false at the closing '}' (which it
// consumes) or on an error. n counts the members read so far; start it at
// zero. The name aliases the input unless it held escapes.
func (l *jsonLexer) key(n *int) (name []byte, ok bool) {
	c := l.peek()
	if c == '}' {
		l.i++
		return nil, false
	}
	if *n > 0 {
		if c != ',' {
			l.fail()
			return nil, false
		}
		l.i++
		c = l.peek()
	}
	if c != '"' {
		l.fail()
		return nil, false
	}
	name, ok = l.stringBytes()
	if !ok {
		return nil, false
	}
	if l.peek() != ':' {
		l.fail()
		return nil, false
	}
	l.i++
	*n++
	return name, true
}

// elem reports whether another element follows in an array opened by
// array, consuming the ',' before it; it consumes the closing ']'.
func (l *jsonLexer) elem(n *int) bool {
	c := l.peek()
	if c == ']' {
		l.i++
		return false
	}
	if *n > 0 {
		if c != ',' {
			l.fail()
			return false
		}
		l.i++
		if l.peek() == ']' { // "[1,]"
			l.fail()
			return false
		}
	}
	if l.bad || l.i >= len(l.b) {
		l.fail()
		return false
	}
	*n++
	return true
}

// stringBytes reads a string whose opening quote is next. The result
// aliases the input when the string holds no escape.
func (l *jsonLexer) stringBytes() ([]byte, bool) {
	l.high = false
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		l.fail()
		return nil, false
	}
	b := l.b
	start := l.i + 1
	for j := start; j < len(b); j++ {
		c := b[j]
		if strPlain[c] {
			continue
		}
		switch {
		case c == '"':
			l.i = j + 1
			return b[start:j], true
		case c == '\\':
			return l.unescape(start, j)
		case c < 0x20:
			l.fail()
			return nil, false
		}
		l.high = true
	}
	l.fail()
	return nil, false
}

// strPlain marks the bytes that a string holds as they are and that are
// ASCII: not a quote, a backslash, a control or a byte of 0x80 or more.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unescape decodes a string from start, whose first escape is at j.
func (l *jsonLexer) unescape(start, j int) ([]byte, bool) {
	out := make([]byte, 0, j-start+16)
	out = append(out, l.b[start:j]...)
	b := l.b
	for j < len(b) {
		c := b[j]
		switch {
		case strPlain[c]:
			out = append(out, c)
			j++
			continue
		case c == '"':
			l.i = j + 1
			return out, true
		case c < 0x20:
			l.fail()
			return nil, false
		case c != '\\':
			l.high = true
			out = append(out, c)
			j++
			continue
		}
		if j+1 < len(b) {
			if e := shortEscape[b[j+1]]; e != 0 {
				out = append(out, e)
				j += 2
				continue
			}
		}
		var ok bool
		var n int
		if out, n, _, ok = AppendJSONEscape(out, b[j:]); !ok {
			l.fail()
			return nil, false
		}
		j += n
	}
	l.fail()
	return nil, false
}

// AppendJSONEscape decodes the JSON escape sequence that in starts with
// (in[0] is the backslash) onto out, as encoding/json does: a \u escape
// of a UTF-16 surrogate takes the escape after it when the two make a
// pair, and is U+FFFD otherwise (lone reports that). It returns the
// extended out and how many bytes of in the escape took; ok is false when
// in does not start with a valid escape.
func AppendJSONEscape(out, in []byte) (res []byte, n int, lone, ok bool) {
	if len(in) < 2 || in[0] != '\\' {
		return out, 0, false, false
	}
	switch e := in[1]; e {
	case '"', '\\', '/':
		return append(out, e), 2, false, true
	case 'b':
		return append(out, '\b'), 2, false, true
	case 'f':
		return append(out, '\f'), 2, false, true
	case 'n':
		return append(out, '\n'), 2, false, true
	case 'r':
		return append(out, '\r'), 2, false, true
	case 't':
		return append(out, '\t'), 2, false, true
	case 'u':
		r, ok := hex4(in[2:])
		if !ok {
			return out, 0, false, false
		}
		if !utf16.IsSurrogate(r) {
			return utf8.AppendRune(out, r), 6, false, true
		}
		if len(in) >= 12 && in[6] == '\\' && in[7] == 'u' {
			if r2, ok := hex4(in[8:]); ok {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					return utf8.AppendRune(out, d), 12, false, true
				}
			}
		}
		return utf8.AppendRune(out, utf8.RuneError), 6, true, true
	}
	return out, 0, false, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// raw reads a string value and returns its bytes (aliasing the input when
// unescaped); for any other kind of value it skips it and returns nil.
func (l *jsonLexer) raw() []byte {
	if l.peek() != '"' {
		l.high = false
		l.skip()
		return nil
	}
	b, _ := l.stringBytes()
	return b
}

// str is raw as a string, valid UTF-8.
func (l *jsonLexer) str() string {
	b := l.raw()
	if !l.high {
		return string(b) // ASCII, or UTF-8 by escapes: valid
	}
	return jsonString(b)
}

// jsonString converts decoded string bytes, replacing invalid UTF-8.
func jsonString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if !utf8.Valid(b) {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(b)
}

// number reads a number whose first byte is next and returns its text.
func (l *jsonLexer) number() []byte {
	b := l.b
	start := l.i
	j := start
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && isDigit(b[j]) {
			j++
		}
	default:
		l.fail()
		return nil
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if j == k {
			l.fail()
			return nil
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if j == k {
			l.fail()
			return nil
		}
	}
	l.i = j
	return b[start:j]
}

// num reads a number value and returns its text; any other value is
// skipped and nil returned.
func (l *jsonLexer) num() []byte {
	c := l.peek()
	if c != '-' && !isDigit(c) {
		l.skip()
		return nil
	}
	return l.number()
}

// int reads an integer value. A number with a fraction or exponent is
// truncated when it fits; anything else is skipped and ok is false.
func (l *jsonLexer) int() (int64, bool) {
	return jsonInt(l.num())
}

// jsonInt converts number text to int64.
func jsonInt(t []byte) (int64, bool) {
	if len(t) == 0 {
		return 0, false
	}
	neg := t[0] == '-'
	d := t
	if neg {
		d = d[1:]
	}
	if len(d) > 0 && len(d) <= 18 {
		var n int64
		whole := true
		for _, c := range d {
			if !isDigit(c) {
				whole = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if whole {
			if neg {
				n = -n
			}
			return n, true
		}
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// float reads a number value as float64.
func (l *jsonLexer) float() (float64, bool) {
	t := l.num()
	if t == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(t), 64)
	return f, err == nil
}

// bool reads true or false; anything else is skipped and ok is false.
func (l *jsonLexer) bool() (v, ok bool) {
	switch l.peek() {
	case 't':
		return true, l.literal("true")
	case 'f':
		return false, l.literal("false")
	}
	l.skip()
	return false, false
}

func (l *jsonLexer) literal(w string) bool {
	if len(l.b)-l.i < len(w) || string(l.b[l.i:l.i+len(w)]) != w {
		l.fail()
		return false
	}
	l.i += len(w)
	return true
}

// skip steps over one value of any kind, validating it. It keeps its own
// stack instead of recursing so that deep nesting costs no Go stack.
func (l *jsonLexer) skip() {
	var buf [32]byte
	st := buf[:0] // closing byte of each open container
	for !l.bad {
		switch c := l.peek(); c {
		case '{':
			l.i++
			if len(st) >= jsonMaxDepth {
				l.fail()
				return
			}
			if l.peek() == '}' {
				l.i++
				break
			}
			st = append(st, '}')
			if !l.memberName() {
				return
			}
			continue
		case '[':
			l.i++
			if len(st) >= jsonMaxDepth {
				l.fail()
				return
			}
			if l.peek() == ']' {
				l.i++
				break
			}
			st = append(st, ']')
			continue
		case '"':
			l.stringBytesSkip()
		case 't':
			l.literal("true")
		case 'f':
			l.literal("false")
		case 'n':
			l.literal("null")
		default:
			l.number()
		}
		// After a value: close finished containers, or step to the next
		// element or member.
		for {
			if l.bad || len(st) == 0 {
				return
			}
			c := l.peek()
			top := st[len(st)-1]
			if c == top {
				l.i++
				st = st[:len(st)-1]
				continue
			}
			if c != ',' {
				l.fail()
				return
			}
			l.i++
			if top == '}' && !l.memberName() {
				return
			}
			break
		}
	}
}

// memberName reads `"name":` inside an object being skipped.
func (l *jsonLexer) memberName() bool {
	if l.peek() != '"' {
		l.fail()
		return false
	}
	l.stringBytesSkip()
	if l.peek() != ':' {
		l.fail()
		return false
	}
	l.i++
	return !l.bad
}

// stringBytesSkip validates and steps over a string without decoding it.
func (l *jsonLexer) stringBytesSkip() {
	b := l.b
	for j := l.i + 1; j < len(b); j++ {
		c := b[j]
		if strAsIs[c] {
			continue
		}
		switch {
		case c == '"':
			l.i = j + 1
			return
		case c == '\\':
			if j+1 >= len(b) {
				l.fail()
				return
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := hex4(b[j+2:]); !ok {
					l.fail()
					return
				}
				j += 5
			default:
				l.fail()
				return
			}
		case c < 0x20:
			l.fail()
			return
		}
	}
	l.fail()
}

// Limits of flatten, so that one odd line cannot blow up an event.
const (
	flattenMaxDepth  = 4  // levels of nesting below the prefix
	flattenMaxFields = 64 // fields added by one flatten call
	flattenMaxList   = 32 // elements kept of an array
	flattenMaxKey    = 64 // bytes of one member name
)

// flatten reads an object value and stores its scalar members in ev as
// prefix.name (nested objects as prefix.a.b): strings as string, integers
// as int64, other numbers as float64, booleans as bool, arrays of scalars
// as []string. Nulls, arrays of objects, members past the limits and
// names holding dots or blanks are skipped. Anything but an object is
// skipped.
func (l *jsonLexer) flatten(ev Event, prefix string) {
	budget := flattenMaxFields
	l.flattenObj(ev, prefix, 0, &budget)
}

func (l *jsonLexer) flattenObj(ev Event, prefix string, depth int, budget *int) {
	if !l.object() {
		l.skip()
		return
	}
	for n := 0; ; {
		k, ok := l.key(&n)
		if !ok {
			return
		}
		if *budget <= 0 || !flatKeyOK(k) {
			l.skip()
			continue
		}
		name := prefix + "." + string(k)
		switch c := l.peek(); {
		case c == '{':
			if depth+1 >= flattenMaxDepth {
				l.skip()
				continue
			}
			l.flattenObj(ev, name, depth+1, budget)
		case c == '[':
			l.array()
			var list []string
			for m := 0; l.elem(&m); {
				if v, ok := l.scalarText(); ok && len(list) < flattenMaxList {
					list = append(list, v)
				}
			}
			if len(list) > 0 {
				ev[name] = list
				*budget--
			}
		case c == '"':
			if s := l.str(); s != "" {
				ev[name] = s
				*budget--
			}
		case c == 't' || c == 'f':
			if v, ok := l.bool(); ok {
				ev[name] = v
				*budget--
			}
		case c == 'n':
			l.skip()
		default:
			t := l.number()
			if t == nil {
				return
			}
			if v, ok := jsonIntExact(t); ok {
				ev[name] = v
			} else if f, err := strconv.ParseFloat(string(t), 64); err == nil {
				ev[name] = f
			} else {
				continue
			}
			*budget--
		}
	}
}

// scalarText reads a string, number or boolean as text; other values are
// skipped and ok is false.
func (l *jsonLexer) scalarText() (string, bool) {
	switch c := l.peek(); {
	case c == '"':
		s := l.str()
		return s, s != ""
	case c == '-' || isDigit(c):
		t := l.number()
		return string(t), t != nil
	case c == 't' || c == 'f':
		v, ok := l.bool()
		return strconv.FormatBool(v), ok
	}
	l.skip()
	return "", false
}

// jsonIntExact converts number text that is a plain integer.
func jsonIntExact(t []byte) (int64, bool) {
	d := t
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	for _, c := range d {
		if !isDigit(c) {
			return 0, false
		}
	}
	return jsonInt(t)
}

func flatKeyOK(k []byte) bool {
	if len(k) == 0 || len(k) > flattenMaxKey {
		return false
	}
	for _, c := range k {
		if c <= ' ' || c == '.' || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(k)
}

// ValidJSON reports what json.Valid reports, in the lexer's one pass
// without encoding/json's state machine (a call per byte): json.Valid was
// 3 % of the CPU of the Windows mix end to end (docs/benchmarks.md). Like
// json.Valid it checks the grammar, not the UTF-8 of strings, and refuses
// nesting deeper than 10,000.
func ValidJSON(b []byte) bool {
	l := jsonLexer{b: b}
	l.skip()
	return l.end()
}
