package parse

import (
	"strings"
	"unsafe"
)

// SearchText returns the text of a raw line that the search index takes
// (docs/api.md, query). A Windows event — a JSON object with a "winlog"
// object, as Winlogbeat and vigil import send it — is indexed by its
// values alone, decoded (C:\Windows for "C:\\Windows"), in the
// document's order, each on a line of its own: its member names
// ("winlog", "event_data", "TargetUserName", the same forty-odd words in
// every event) were a third of its words and none of what a search looks
// for, and the escapes' letters (the n of \n) words of their own. Any
// other line, and a document that is not valid JSON, is indexed as it
// is, and returned as it is (not copied).
func SearchText(raw string) string {
	if len(raw) < 2 || raw[0] != '{' || !strings.Contains(raw, `"winlog"`) {
		return raw
	}
	w := searchWalk{jsonLexer: jsonLexer{b: unsafe.Slice(unsafe.StringData(raw), len(raw))}, out: make([]byte, 0, len(raw))}
	if !w.object(0) || !w.end() || !w.winlog {
		return raw
	}
	if len(w.out) == 0 {
		return ""
	}
	return unsafe.String(&w.out[0], len(w.out))
}

// searchMaxDepth bounds the nesting SearchText follows; a deeper document
// is indexed as it is.
const searchMaxDepth = 64

// searchWalk appends the values of a document to out.
type searchWalk struct {
	jsonLexer
	out    []byte
	winlog bool // a "winlog" object at the top
}

// object reads an object whose '{' is next.
func (w *searchWalk) object(depth int) bool {
	if depth > searchMaxDepth || !w.jsonLexer.object() {
		return false
	}
	n := 0
	for {
		name, ok := w.key(&n)
		if !ok {
			return !w.bad
		}
		if depth == 0 && string(name) == "winlog" && w.peek() == '{' {
			w.winlog = true
		}
		if !w.value(depth + 1) {
			return false
		}
	}
}

// value appends one value's text: a string decoded, a number or literal
// as written, each followed by a newline; an object's or array's values.
func (w *searchWalk) value(depth int) bool {
	switch c := w.peek(); {
	case c == '{':
		return w.object(depth)
	case c == '[':
		if depth > searchMaxDepth || !w.array() {
			return false
		}
		n := 0
		for w.elem(&n) {
			if !w.value(depth + 1) {
				return false
			}
		}
		return !w.bad
	case c == '"':
		var n int
		var ok bool
		if w.out, n, ok = AppendJSONString(w.out, w.b[w.i:]); !ok {
			return false
		}
		w.i += n
	case c == '-' || isDigit(c):
		t := w.number()
		if t == nil {
			return false
		}
		w.out = append(w.out, t...)
	default:
		lit := literalAt(w.b[w.i:])
		if lit == "" {
			return false
		}
		w.out = append(w.out, lit...)
		w.i += len(lit)
	}
	w.out = append(w.out, '\n')
	return true
}

// literalAt returns the literal b starts with: true, false or null.
func literalAt(b []byte) string {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b) >= len(lit) && string(b[:len(lit)]) == lit {
			return lit
		}
	}
	return ""
}

// strAsIs marks the bytes a JSON string holds as they are: not a quote,
// a backslash or a control character.
var strAsIs = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// shortEscape is the byte each escape of one letter stands for (\n: a
// newline), 0 for the others (\u) and for no escape.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// AppendJSONString decodes the JSON string that in starts with (in[0] is
// its opening quote) onto out, as encoding/json decodes it but keeping
// invalid UTF-8 as it is, and returns the extended out and how many bytes
// of in the string took; ok is false when in does not start with a valid
// string.
func AppendJSONString(out, in []byte) (res []byte, n int, ok bool) {
	if len(in) == 0 || in[0] != '"' {
		return out, 0, false
	}
	j := 1
	for j < len(in) {
		k := j // a run of plain bytes at once
		for k < len(in) && strAsIs[in[k]] {
			k++
		}
		out = append(out, in[j:k]...)
		switch {
		case k == len(in) || in[k] < 0x20:
			return out, 0, false
		case in[k] == '"':
			return out, k + 1, true
		}
		// A backslash: the escapes of one letter without a call (a
		// Windows event inside a JSON string has one at every quote).
		if k+1 < len(in) {
			if c := shortEscape[in[k+1]]; c != 0 {
				out = append(out, c)
				j = k + 2
				continue
			}
		}
		var e int
		if out, e, _, ok = AppendJSONEscape(out, in[k:]); !ok {
			return out, 0, false
		}
		j = k + e
	}
	return out, 0, false
}
