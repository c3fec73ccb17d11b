package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil"
)

// Values: those of a field in the facts (including an event's, found in
// flat or nested shapes), the scalars a rule gives, and how they compare.

type valueKind uint8

const (
	vString valueKind = iota + 1
	vNumber
	vBool
)

// value is one value of a field in the facts, prepared for every operator.
type value struct {
	kind  valueKind
	str   string     // text form
	low   string     // lower-case text form
	num   float64    // when isNum
	isNum bool       // a number, or a string that reads as one
	b     bool       // when kind is vBool
	sev   int        // severity rank of a severity field, 0 if unknown
	addr  netip.Addr // when the text is an IP address
}

func stringValue(s string) value {
	x := value{kind: vString, str: s, low: strings.ToLower(s)}
	// Numbers and addresses are short; skip parsing descriptions.
	if len(s) > 0 && len(s) <= 64 {
		if n, ok := numericString(s); ok {
			x.num, x.isNum = n, true
		}
		if strings.ContainsAny(s, ".:") {
			if a, err := netip.ParseAddr(s); err == nil {
				x.addr = a.Unmap().WithZone("")
			}
		}
	}
	return x
}

func numberValue(n float64, text string) value {
	return value{kind: vNumber, str: text, low: text, num: n, isNum: true}
}

func boolValue(b bool) value {
	s := strconv.FormatBool(b)
	return value{kind: vBool, str: s, low: s, b: b}
}

// numericString parses s as a decimal number; hex, "Inf", "NaN" and
// underscores are not numbers here.
func numericString(s string) (float64, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '.', c == '-', c == '+', c == 'e', c == 'E':
		default:
			return 0, false
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, false
	}
	return n, true
}

// scalar is one value given in a rule for eq, ne or in.
type scalar struct {
	kind  valueKind
	low   string // strings and booleans
	num   float64
	isNum bool // a number, or a numeric string
	b     bool
}

func scalarString(s string) scalar {
	x := scalar{kind: vString, low: strings.ToLower(s)}
	x.num, x.isNum = numericString(s)
	return x
}

func scalarBool(b bool) scalar {
	return scalar{kind: vBool, low: strconv.FormatBool(b), b: b}
}

// equal is the equality of eq, ne and in (see the semantics in the package comment).
func (s *scalar) equal(x *value) bool {
	switch s.kind {
	case vString:
		if x.kind == vNumber {
			return s.isNum && x.num == s.num
		}
		return x.low == s.low
	case vNumber:
		return x.isNum && x.num == s.num
	case vBool:
		if x.kind == vBool {
			return x.b == s.b
		}
		return x.kind == vString && x.low == s.low
	}
	return false
}

// scalarSet is the values of eq, ne or in. Small sets are scanned; large
// ones are indexed with the same equality as scalar.equal.
type scalarSet struct {
	items   []scalar
	strs    map[string]struct{}  // strings and booleans, lower case: for string and bool values
	nums    map[float64]struct{} // numbers: for numeric values and numeric strings
	strNums map[float64]struct{} // numeric strings: for numeric values
}

const scalarSetScan = 8

func newScalarSet(items []scalar) scalarSet {
	s := scalarSet{items: items}
	if len(items) <= scalarSetScan {
		return s
	}
	s.strs = map[string]struct{}{}
	s.nums = map[float64]struct{}{}
	s.strNums = map[float64]struct{}{}
	for _, it := range items {
		switch it.kind {
		case vString:
			s.strs[it.low] = struct{}{}
			if it.isNum {
				s.strNums[it.num] = struct{}{}
			}
		case vBool:
			s.strs[it.low] = struct{}{}
		case vNumber:
			s.nums[it.num] = struct{}{}
		}
	}
	return s
}

func (s *scalarSet) has(x *value) bool {
	if s.strs == nil {
		for i := range s.items {
			if s.items[i].equal(x) {
				return true
			}
		}
		return false
	}
	switch x.kind {
	case vString, vBool:
		if _, ok := s.strs[x.low]; ok {
			// A rule boolean equals a string "true" but a rule string
			// "true" equals a boolean too, so both kinds may meet here.
			return true
		}
	case vNumber:
		if _, ok := s.strNums[x.num]; ok {
			return true
		}
	}
	if x.isNum {
		if _, ok := s.nums[x.num]; ok {
			return true
		}
	}
	return false
}

func severityValue(s string) value {
	x := stringValue(s)
	x.sev = vigil.SeverityRank(x.low)
	return x
}

// eventLookupBudget bounds the map look-ups spent finding one field in one
// event, whose keys may come from an attacker's log line.
const eventLookupBudget = 256

// eventValues appends the values of the ECS field key in the event m. The
// event may be flat ("source.ip"), nested ({"source": {"ip": …}}), a mix of
// both, or hold arrays of objects, each of whose values count. It reports
// whether the field is present.
func eventValues(out []value, m map[string]any, key string, budget *int) ([]value, bool) {
	*budget--
	if *budget < 0 {
		return out, false
	}
	if x, ok := m[key]; ok {
		return appendValues(out, x, 0)
	}
	present := false
	for i := 0; i < len(key); i++ {
		if key[i] != '.' {
			continue
		}
		*budget--
		if *budget < 0 {
			break
		}
		switch sub := m[key[:i]].(type) {
		case map[string]any:
			var p bool
			out, p = eventValues(out, sub, key[i+1:], budget)
			present = present || p
		case []any:
			for _, e := range sub {
				if em, ok := e.(map[string]any); ok {
					var p bool
					out, p = eventValues(out, em, key[i+1:], budget)
					present = present || p
				}
			}
		}
		if present {
			break
		}
	}
	return out, present
}

// appendValues appends the scalar values of x (one, or several for arrays)
// and reports whether x is present: not null and not empty.
func appendValues(out []value, x any, depth int) ([]value, bool) {
	switch t := x.(type) {
	case nil:
		return out, false
	case string:
		return append(out, stringValue(t)), true
	case bool:
		return append(out, boolValue(t)), true
	case float64:
		return append(out, numberValue(t, strconv.FormatFloat(t, 'f', -1, 64))), true
	case float32:
		return append(out, numberValue(float64(t), strconv.FormatFloat(float64(t), 'f', -1, 32))), true
	case int:
		return append(out, numberValue(float64(t), strconv.Itoa(t))), true
	case int64:
		return append(out, numberValue(float64(t), strconv.FormatInt(t, 10))), true
	case int32:
		return append(out, numberValue(float64(t), strconv.FormatInt(int64(t), 10))), true
	case int16:
		return append(out, numberValue(float64(t), strconv.FormatInt(int64(t), 10))), true
	case int8:
		return append(out, numberValue(float64(t), strconv.FormatInt(int64(t), 10))), true
	case uint:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case uint64:
		return append(out, numberValue(float64(t), strconv.FormatUint(t, 10))), true
	case uint32:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case uint16:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case uint8:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case json.Number:
		if n, err := t.Float64(); err == nil && !math.IsInf(n, 0) {
			return append(out, numberValue(n, string(t))), true
		}
		return append(out, stringValue(string(t))), true
	case []string:
		for _, s := range t {
			out = append(out, stringValue(s))
		}
		return out, len(t) > 0
	case []any:
		if depth >= 4 {
			return out, len(t) > 0
		}
		present := false
		for _, e := range t {
			var p bool
			out, p = appendValues(out, e, depth+1)
			present = present || p
		}
		return out, present
	case map[string]any:
		// An object has no value of its own; it is present when it holds
		// something, as an ECS object field is.
		return out, len(t) > 0
	case fmt.Stringer:
		return append(out, stringValue(t.String())), true
	}
	// Another type is present but offers no value to compare.
	return out, true
}
