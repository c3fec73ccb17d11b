package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// Request bodies are read strictly. encoding/json matches a member name to
// a field without regard to case ("RAW" fills raw) and keeps the last of a
// name given twice, so one body could mean different things to Vigil and
// to whatever checked it on the way (a proxy, a WAF, the sender's own
// validation). Before a body is decoded, checkKeys walks it once: a member
// name given twice in one object, anywhere (metadata and rule conditions
// included), and a name that is not exactly one of a struct's fields are
// refused with 400 naming the field. So is a NUL character (\u0000) in
// any string or member name, unless its field is tagged nul:"kept":
// PostgreSQL's text and jsonb cannot hold it, and SQLite can, so the API
// refuses it for both stores alike. (An artifact batch is opaque here:
// artifacts keep NUL.) The walk copies nothing and skips string contents
// with bytes.IndexByte; a body it cannot read is left to encoding/json to
// describe.

// shape is what checkKeys knows of the JSON a Go type decodes: the exact
// member names of a struct, the elements of a slice, or nothing (nil:
// free-form JSON, whose names may be anything, each once per object).
type shape struct {
	fields  map[string]*shape // a struct: its JSON member names
	elem    *shape            // a slice or array
	opaque  bool              // checked where it is decoded (batchItem)
	nulKept bool              // a string that may hold NUL (tag nul:"kept")
}

// nulIssue is why a string holding NUL is refused.
const nulIssue = "must not contain NUL characters (U+0000)"

var shapes sync.Map // reflect.Type → *shape

// shapeOf returns the shape of what t decodes.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := buildShape(t, map[reflect.Type]bool{})
	shapes.Store(t, s)
	return s
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	batchItemType  = reflect.TypeFor[batchItem]()
)

func buildShape(t reflect.Type, seen map[reflect.Type]bool) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == batchItemType:
		return &shape{opaque: true}
	case t == rawMessageType || seen[t]:
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		seen[t] = true
		s := &shape{fields: map[string]*shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				// encoding/json lifts an embedded struct's fields.
				if e := buildShape(f.Type, seen); e != nil {
					maps.Copy(s.fields, e.fields)
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if f.Tag.Get("nul") == "kept" {
				s.fields[name] = &shape{nulKept: true}
				continue
			}
			s.fields[name] = buildShape(f.Type, seen)
		}
		delete(seen, t)
		return s
	case reflect.Slice, reflect.Array:
		if e := buildShape(t.Elem(), seen); e != nil {
			return &shape{elem: e}
		}
	}
	return nil
}

// batchItem is one item of an artifact batch, kept as its JSON text and
// checked by parseArtifact, so that a bad item is refused alone.
type batchItem []byte

// UnmarshalJSON keeps a copy of the item's text, as json.RawMessage does.
func (b *batchItem) UnmarshalJSON(data []byte) error {
	*b = append((*b)[:0], data...)
	return nil
}

// batchBody is the body of POST /v1/artifacts.
type batchBody struct {
	Artifacts *[]batchItem `json:"artifacts"`
}

// fastDecoder is a body decode reads without encoding/json when it can.
type fastDecoder interface {
	// decodeFast reads body, valid JSON whose member names checkKeys
	// passed, as json.Decoder reads it; false leaves it to json.Decoder.
	decodeFast(body []byte) bool
}

// decodeFast reads a batch whose "artifacts" is an array (or null, or
// absent), each item aliasing body: json.Decoder scanned the body twice
// and copied each item, a tenth of the CPU of a batch of Windows events
// (1,100-byte documents) from the request to the queue. Anything else
// (another value, or not an object) is left to json.Decoder's error.
func (b *batchBody) decodeFast(body []byte) bool {
	w := walker{b: body}
	next := func(c byte) bool {
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == c {
			w.i++
			return true
		}
		return false
	}
	if !next('{') {
		return false
	}
	if next('}') {
		return true
	}
	w.ws()
	if lit, ok := w.str(); !ok || string(lit) != `"artifacts"` || !next(':') {
		return false
	}
	w.ws()
	if bytes.HasPrefix(body[w.i:], []byte("null")) {
		w.i += len("null")
		return next('}')
	}
	if !next('[') {
		return false
	}
	items := []batchItem{}
	for first := true; !next(']'); first = false {
		if !first && !next(',') {
			return false
		}
		w.ws()
		start := w.i
		if !w.value(nil, false) {
			return false
		}
		items = append(items, batchItem(body[start:w.i:w.i]))
	}
	if !next('}') {
		return false
	}
	b.Artifacts = &items
	return true
}

// maxWalkDepth matches encoding/json's nesting limit: deeper bodies are
// left to it to refuse.
const maxWalkDepth = 10000

// walker reads JSON text without decoding it. A syntax error stops it
// (ok false); it is then encoding/json's to report.
type walker struct {
	b     []byte
	i     int
	depth int
	path  []pathElem // of the value being walked, formatted only for an issue
	issue *vigil.FieldIssue
	// refuseNUL: a string or member name holding NUL is an issue (not
	// in an artifact, whose raw and metadata keep it).
	refuseNUL bool
}

type pathElem struct {
	name  string
	index int // of an array element when name == ""
}

// checkKeys returns the first member of body named twice in its object,
// or not exactly as s names it, as a field issue; nil when there is none
// or body is not JSON.
func checkKeys(body []byte, s *shape) *vigil.FieldIssue {
	w := walker{b: body, refuseNUL: true}
	w.value(s, true)
	return w.issue
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// fail records issue at the current path (plus name) and stops the walk.
func (w *walker) fail(name, issue string) bool {
	field := formatPath(w.path)
	if name != "" {
		if field != "" {
			field += "."
		}
		field += name
	}
	if field == "" {
		field = "body"
	}
	w.issue = &vigil.FieldIssue{Field: field, Issue: issue}
	return false
}

func formatPath(p []pathElem) string {
	var b strings.Builder
	for _, e := range p {
		if e.name == "" {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.name)
	}
	return b.String()
}

// str steps over the string literal at w.i and returns it, quotes
// included.
func (w *walker) str() ([]byte, bool) {
	b := w.b
	start := w.i
	j := start + 1
	k := bytes.IndexByte(b[j:], '"')
	if k < 0 {
		return nil, false
	}
	if bytes.IndexByte(b[j:j+k], '\\') < 0 {
		// No escape before the first quote: it ends the string.
		w.i = j + k + 1
		return b[start:w.i], true
	}
	// Escapes (a JSON document as a string has one at each of its
	// quotes): byte by byte, each backslash taking the byte after it.
	for ; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			w.i = j + 1
			return b[start:w.i], true
		}
	}
	return nil, false
}

// value walks one value of shape s; check is false inside an opaque value,
// which is only stepped over.
func (w *walker) value(s *shape, check bool) bool {
	w.ws()
	if w.i >= len(w.b) {
		return false
	}
	switch w.b[w.i] {
	case '{':
		return w.object(s, check)
	case '[':
		w.depth++
		if w.depth > maxWalkDepth {
			return false
		}
		w.i++
		var elem *shape
		if s != nil {
			elem = s.elem
		}
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == ']' {
			w.i++
			w.depth--
			return true
		}
		for n := 0; ; n++ {
			w.path = append(w.path, pathElem{index: n})
			if !w.value(elem, check) {
				return false
			}
			w.path = w.path[:len(w.path)-1]
			w.ws()
			if w.i >= len(w.b) {
				return false
			}
			switch w.b[w.i] {
			case ',':
				w.i++
			case ']':
				w.i++
				w.depth--
				return true
			default:
				return false
			}
		}
	case '"':
		lit, ok := w.str()
		if ok && check && w.refuseNUL && (s == nil || !s.nulKept && !s.opaque) && hasNUL(lit) {
			return w.fail("", nulIssue)
		}
		return ok
	}
	// A number, true, false or null: up to the next delimiter.
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return true
		}
		w.i++
	}
	return true
}

func (w *walker) object(s *shape, check bool) bool {
	w.depth++
	if w.depth > maxWalkDepth {
		return false
	}
	w.i++
	if s != nil && s.opaque {
		check = false
	}
	var names []string // of this object, to find a repeated one
	var set map[string]bool
	w.ws()
	if w.i < len(w.b) && w.b[w.i] == '}' {
		w.i++
		w.depth--
		return true
	}
	for {
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] != '"' {
			return false
		}
		lit, ok := w.str()
		if !ok {
			return false
		}
		var child *shape
		if check {
			name, ok := memberName(lit)
			if !ok {
				return false
			}
			if w.refuseNUL && strings.IndexByte(name, 0) >= 0 {
				return w.fail("", "a member name "+nulIssue)
			}
			switch {
			case set != nil:
				if set[name] {
					return w.fail(name, "duplicate key")
				}
				set[name] = true
			default:
				for _, n := range names {
					if n == name {
						return w.fail(name, "duplicate key")
					}
				}
				names = append(names, name)
				if len(names) > 16 {
					set = make(map[string]bool, 32)
					for _, n := range names {
						set[n] = true
					}
				}
			}
			if s != nil && s.fields != nil {
				c, known := s.fields[name]
				if !known {
					// A name in another case is refused here; any other
					// unknown name is encoding/json's to refuse.
					if issue := unknownField(name, s.fields); issue != "unknown field" {
						return w.fail(name, issue)
					}
				}
				child = c
			}
			w.path = append(w.path, pathElem{name: name})
		}
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] != ':' {
			return false
		}
		w.i++
		if !w.value(child, check) {
			return false
		}
		if check {
			w.path = w.path[:len(w.path)-1]
		}
		w.ws()
		if w.i >= len(w.b) {
			return false
		}
		switch w.b[w.i] {
		case ',':
			w.i++
		case '}':
			w.i++
			w.depth--
			return true
		default:
			return false
		}
	}
}

// hasNUL reports whether a string literal (quotes included) decodes to
// text holding NUL. JSON writes NUL only as an escape, \u0000; the text
// is decoded only when that sequence is there, since it may be an escaped
// backslash followed by "u0000".
func hasNUL(lit []byte) bool {
	if !bytes.Contains(lit, []byte(`\u0000`)) {
		return false
	}
	s, _, ok := jsonText(lit)
	return ok && strings.IndexByte(s, 0) >= 0
}

// memberName decodes a member name's literal (quotes included).
func memberName(lit []byte) (string, bool) {
	s, _, ok := jsonText(lit)
	return s, ok
}

// unknownField says why name is not a field, pointing at the field it
// names in another case.
func unknownField(name string, fields map[string]*shape) string {
	for f := range fields {
		if strings.EqualFold(f, name) {
			return fmt.Sprintf("unknown field (names are case-sensitive: %q)", f)
		}
	}
	return "unknown field"
}

// jsonText decodes a string literal (quotes included), as encoding/json
// does, and reports whether the text had to be altered: invalid UTF-8 and
// unpaired UTF-16 surrogate escapes are replaced by U+FFFD. ok is false
// for an invalid escape.
func jsonText(lit []byte) (s string, altered, ok bool) {
	in := lit[1 : len(lit)-1]
	valid := utf8.Valid(in)
	if bytes.IndexByte(in, '\\') < 0 {
		if valid {
			return string(in), false, true
		}
		return string(validUTF8(in)), true, true
	}
	out := make([]byte, 0, len(in))
	altered = !valid
	for len(in) > 0 {
		k := bytes.IndexByte(in, '\\')
		if k < 0 {
			k = len(in)
		}
		// A backslash is never part of a multi-byte sequence: each run
		// between escapes is whole.
		if valid {
			out = append(out, in[:k]...)
		} else {
			out = append(out, validUTF8(in[:k])...)
		}
		if in = in[k:]; len(in) == 0 {
			break
		}
		var n int
		var lone, ok bool
		if out, n, lone, ok = parse.AppendJSONEscape(out, in); !ok {
			return "", false, false
		}
		altered = altered || lone
		in = in[n:]
	}
	return string(out), altered, true
}

// plainLiteral reports whether a string literal (quotes included) of
// valid JSON decodes to its text unaltered — valid UTF-8 and no unpaired
// UTF-16 surrogate escape, which jsonText would replace — and returns the
// length of that text.
func plainLiteral(lit []byte) (int, bool) {
	in := lit[1 : len(lit)-1]
	if !utf8.Valid(in) {
		return 0, false
	}
	k := bytes.IndexByte(in, '\\')
	if k < 0 {
		return len(in), true
	}
	// Escapes (a JSON document as a string has one at each of its quotes
	// and backslashes): byte by byte from the first.
	var scratch [8]byte
	n := len(in)
	for ; k < len(in); k++ {
		if in[k] != '\\' {
			continue
		}
		if k+1 < len(in) {
			switch in[k+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				// \n, \" and the like: one byte, never altered.
				n--
				k++
				continue
			}
		}
		out, e, lone, ok := parse.AppendJSONEscape(scratch[:0], in[k:])
		if !ok || lone {
			return 0, false
		}
		n -= e - len(out)
		k += e - 1
	}
	return n, true
}

// validUTF8 returns b with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json replaces them in strings.
func validUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}
