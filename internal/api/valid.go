package api

// validJSON reports what json.Valid reports, in one pass without
// encoding/json's state machine (a call per byte): json.Valid was 3 % of
// the CPU of the Windows mix end to end, whose bodies hold 1,500 bytes of
// escaped JSON documents per artifact (docs/benchmarks.md). Like
// json.Valid it checks the grammar, not the UTF-8 of strings, and refuses
// nesting deeper than 10,000.
func validJSON(b []byte) bool {
	v := jsonValidator{b: b}
	v.ws()
	if !v.value(0) {
		return false
	}
	v.ws()
	return v.i == len(b)
}

type jsonValidator struct {
	b []byte
	i int
}

// plainByte marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (v *jsonValidator) ws() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

// next consumes c, after blanks, if it is next.
func (v *jsonValidator) next(c byte) bool {
	v.ws()
	if v.i < len(v.b) && v.b[v.i] == c {
		v.i++
		return true
	}
	return false
}

func (v *jsonValidator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		if depth >= maxWalkDepth {
			return false
		}
		v.i++
		if v.next('}') {
			return true
		}
		for {
			v.ws()
			if !v.str() || !v.next(':') {
				return false
			}
			v.ws()
			if !v.value(depth + 1) {
				return false
			}
			if v.next('}') {
				return true
			}
			if !v.next(',') {
				return false
			}
		}
	case c == '[':
		if depth >= maxWalkDepth {
			return false
		}
		v.i++
		if v.next(']') {
			return true
		}
		for {
			v.ws()
			if !v.value(depth + 1) {
				return false
			}
			if v.next(']') {
				return true
			}
			if !v.next(',') {
				return false
			}
		}
	case c == '"':
		return v.str()
	case c == '-' || c >= '0' && c <= '9':
		return v.number()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	}
	return false
}

func (v *jsonValidator) literal(lit string) bool {
	if len(v.b)-v.i < len(lit) || string(v.b[v.i:v.i+len(lit)]) != lit {
		return false
	}
	v.i += len(lit)
	return true
}

// str steps over the string whose quote is next.
func (v *jsonValidator) str() bool {
	b := v.b
	if v.i >= len(b) || b[v.i] != '"' {
		return false
	}
	for j := v.i + 1; j < len(b); {
		if plainByte[b[j]] {
			j++
			continue
		}
		switch b[j] {
		case '"':
			v.i = j + 1
			return true
		case '\\':
			if j+1 >= len(b) {
				return false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if len(b)-j < 6 || !hexDigits(b[j+2:j+6]) {
					return false
				}
				j += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
	return false
}

func hexDigits(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// number steps over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *jsonValidator) number() bool {
	b := v.b
	j := v.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		j = digits(b, j)
	default:
		return false
	}
	if j < len(b) && b[j] == '.' {
		k := digits(b, j+1)
		if k == j+1 {
			return false
		}
		j = k
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(b, j)
		if k == j {
			return false
		}
		j = k
	}
	v.i = j
	return true
}

// digits returns the index after the run of digits at j.
func digits(b []byte, j int) int {
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return j
}
