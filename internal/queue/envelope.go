package queue

import (
	"encoding/json"
	"unicode/utf8"
	"unsafe"

	"github.com/vigil-soc/vigil/internal/parse"
)

// decodeEnvelope reads a message as json.Unmarshal reads it into an
// envelope, in one pass and without reflection. json.Unmarshal first
// scans the whole message to validate it, then again to decode it, and
// every raw line is a JSON string inside it: for a batch of Windows
// events (JSON documents of about 1,100 bytes, full of escaped quotes
// and backslashes) that was 7 % of a worker's CPU (docs/benchmarks.md).
// The fast path reads what chunk writes: the envelope's members and the
// artifacts' in any order, strings, integers, true and false, and
// metadata kept as the JSON it is (checked with json.Valid). Anything
// else — another member name, a member name in another case (which
// json.Unmarshal matches), null, a number that is no plain integer, a
// syntax error, invalid UTF-8 anywhere — is read by json.Unmarshal
// instead, so that both give the same envelope or the same error.
func decodeEnvelope(data []byte) (envelope, error) {
	if utf8.Valid(data) { // then so is every string decoded from it
		s := envScanner{b: data, arena: make([]byte, 0, len(data))}
		if env, ok := s.envelope(); ok {
			return env, nil
		}
	}
	var env envelope
	err := json.Unmarshal(data, &env)
	return env, err
}

// envScanner is the fast path's position in a message; every method
// returns false at anything it does not read, and the caller then gives
// up.
type envScanner struct {
	b []byte
	i int
	// arena holds the message's strings, decoded, one after the other:
	// made as large as the message, which no decoded string outgrows, it
	// is one allocation for them all and never moves. A string is never
	// written again once read, so each may alias it.
	arena []byte
}

func (s *envScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next consumes c, after blanks, if it is next.
func (s *envScanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// members reads an object whose '{' is next, calling member with each
// member's name, the scanner at its value.
func (s *envScanner) members(member func(name string) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		name, ok := s.str()
		if !ok || !s.next(':') || !member(name) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

func (s *envScanner) envelope() (env envelope, ok bool) {
	ok = s.members(func(name string) bool {
		var ok bool
		switch name {
		case "org":
			env.Org, ok = s.str()
		case "batch":
			env.Batch, ok = s.str()
		case "artifacts":
			env.Artifacts, ok = s.artifacts()
		}
		return ok
	})
	s.ws()
	return env, ok && s.i == len(s.b)
}

func (s *envScanner) artifacts() ([]artifact, bool) {
	if !s.next('[') {
		return nil, false
	}
	out := []artifact{}
	if s.next(']') {
		return out, true
	}
	for {
		var a artifact
		ok := s.members(func(name string) bool {
			var ok bool
			switch name {
			case "id":
				a.ID, ok = s.str()
			case "source":
				a.Source, ok = s.str()
			case "raw":
				a.Raw, ok = s.str()
			case "ts":
				a.Timestamp, ok = s.int()
			case "created":
				a.Created, ok = s.int()
			case "meta":
				a.Metadata, ok = s.value()
			case "tsd":
				a.Defaulted, ok = s.bool()
			}
			return ok
		})
		if !ok {
			return nil, false
		}
		out = append(out, a)
		if s.next(']') {
			return out, true
		}
		if !s.next(',') {
			return nil, false
		}
	}
}

// str reads a string, decoded as encoding/json decodes it
// (parse.AppendJSONString), into the message's arena.
func (s *envScanner) str() (string, bool) {
	s.ws()
	start := len(s.arena)
	var n int
	var ok bool
	if s.arena, n, ok = parse.AppendJSONString(s.arena, s.b[s.i:]); !ok {
		return "", false
	}
	s.i += n
	out := s.arena[start:]
	if len(out) == 0 {
		return "", true
	}
	return unsafe.String(&out[0], len(out)), true
}

// int reads an integer written as digits, with an optional minus sign,
// that fits an int64 (a time in nanoseconds has 19 digits).
func (s *envScanner) int() (int64, bool) {
	s.ws()
	b := s.b
	j := s.i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	start := j
	var v uint64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		if j-start >= 19 {
			return 0, false // out of range: json.Unmarshal says so
		}
		v = v*10 + uint64(b[j]-'0')
		j++
	}
	switch {
	case j == start, b[start] == '0' && j-start > 1:
		return 0, false
	case j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E'):
		return 0, false
	case neg && v > 1<<63, !neg && v > 1<<63-1:
		return 0, false
	}
	s.i = j
	if neg {
		return int64(-v), true
	}
	return int64(v), true
}

func (s *envScanner) bool() (bool, bool) {
	s.ws()
	rest := s.b[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// value reads an object as its JSON text (a copy), for the metadata.
func (s *envScanner) value() (json.RawMessage, bool) {
	s.ws()
	b := s.b
	if s.i >= len(b) || b[s.i] != '{' {
		return nil, false
	}
	start := s.i
	depth := 0
	for j := start; j < len(b); j++ {
		switch b[j] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				v := b[start : j+1]
				if !json.Valid(v) {
					return nil, false
				}
				s.i = j + 1
				return append(json.RawMessage(nil), v...), true
			}
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		}
	}
	return nil, false
}
