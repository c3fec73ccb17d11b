package rules

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// Compiling the value of a leaf against its operator and field.

// leafValue validates the value of l (raw is nil when absent) against its
// operator and field, and stores it compiled in l.
func (c *compiler) leafValue(l *leaf, raw json.RawMessage, path string) bool {
	kind := jsonKind(raw)
	if raw == nil && l.op != opExists {
		c.fail(path, "required")
		return false
	}
	switch l.op {
	case opExists:
		// null is taken as absent: serializers write optional fields so.
		switch kind {
		case 0, 'n', 't':
			l.exists = true
		case 'f':
			l.exists = false
		default:
			c.fail(path, "must be a boolean (true: the field is present, false: it is absent)")
			return false
		}
	case opEq, opNe:
		s, ok := c.scalar(raw, path, l.field)
		if !ok {
			return false
		}
		l.set = newScalarSet([]scalar{s})
	case opIn:
		elems := arrayElems(raw)
		switch {
		case kind != '[' || len(elems) == 0:
			c.fail(path, "must be a non-empty array of strings, numbers or booleans")
			return false
		case len(elems) > MaxConditionValues:
			c.fail(path, fmt.Sprintf("must hold at most %d values", MaxConditionValues))
			return false
		}
		items := make([]scalar, 0, len(elems))
		for i, e := range elems {
			if s, ok := c.scalar(e, fmt.Sprintf("%s[%d]", path, i), l.field); ok {
				items = append(items, s)
			}
		}
		if len(items) != len(elems) {
			return false
		}
		l.set = newScalarSet(items)
	case opContains, opPrefix, opSuffix:
		s, ok := jsonString(raw)
		if !ok {
			c.fail(path, "must be a string")
			return false
		}
		l.str = strings.ToLower(s)
	case opRegex:
		s, ok := jsonString(raw)
		if !ok {
			c.fail(path, "must be a string (an RE2 regular expression)")
			return false
		}
		if utf8.RuneCountInString(s) > MaxRegexLen {
			c.fail(path, fmt.Sprintf("must be at most %d characters", MaxRegexLen))
			return false
		}
		re, err := regexp.Compile(s)
		if err != nil {
			c.fail(path, "invalid regular expression: "+err.Error())
			return false
		}
		l.re = re
	case opCIDR:
		var elems []json.RawMessage
		var paths []string
		switch kind {
		case '"':
			elems, paths = []json.RawMessage{raw}, []string{path}
		case '[':
			elems = arrayElems(raw)
			switch {
			case len(elems) == 0:
				c.fail(path, "must be a CIDR, an IP address or a non-empty array of them")
				return false
			case len(elems) > MaxConditionValues:
				c.fail(path, fmt.Sprintf("must hold at most %d prefixes", MaxConditionValues))
				return false
			}
			for i := range elems {
				paths = append(paths, fmt.Sprintf("%s[%d]", path, i))
			}
		default:
			c.fail(path, "must be a CIDR, an IP address or a non-empty array of them")
			return false
		}
		ok := true
		for i, e := range elems {
			p, issue := parsePrefix(e)
			if issue != "" {
				c.fail(paths[i], issue)
				ok = false
				continue
			}
			l.prefixes = append(l.prefixes, p)
		}
		return ok
	case opGt, opGte, opLt, opLte:
		if l.field.kind.severity() {
			l.byRank = true
			if s, ok := jsonString(raw); ok {
				if !vigil.ValidSeverity(s) {
					c.fail(path, fmt.Sprintf("unknown severity %q; want a rank number or one of %s", s, severityNames))
					return false
				}
				l.num = float64(vigil.SeverityRank(s))
				return true
			}
		}
		n, issue := jsonNumber(raw)
		if issue != "" {
			if l.field.kind.severity() && issue == "must be a number" {
				issue = "must be a number or a severity name (" + severityNames + ")"
			}
			c.fail(path, issue)
			return false
		}
		l.num = n
	}
	return true
}

// scalar validates one value of eq, ne or in for field f.
func (c *compiler) scalar(raw json.RawMessage, path string, f field) (scalar, bool) {
	var s scalar
	switch jsonKind(raw) {
	case '"':
		str, _ := jsonString(raw)
		s = scalarString(str)
	case 't', 'f':
		s = scalarBool(jsonKind(raw) == 't')
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, issue := jsonNumber(raw)
		if issue != "" {
			c.fail(path, issue)
			return s, false
		}
		s = scalar{kind: vNumber, num: n, isNum: true}
	default:
		c.fail(path, "must be a string, number or boolean")
		return s, false
	}
	switch {
	case f.kind.severity():
		// Severity names are stored lower case; a rule naming one
		// otherwise is a mistake worth reporting.
		str, ok := jsonString(raw)
		if !ok {
			c.fail(path, "must be a severity name ("+severityNames+")")
			return s, false
		}
		if !vigil.ValidSeverity(str) {
			c.fail(path, fmt.Sprintf("unknown severity %q; want one of %s", str, severityNames))
			return s, false
		}
	case f.kind.number():
		if s.kind != vNumber {
			c.fail(path, "must be a number")
			return s, false
		}
	}
	return s, true
}

func parsePrefix(raw json.RawMessage) (netip.Prefix, string) {
	s, ok := jsonString(raw)
	if !ok {
		return netip.Prefix{}, "must be a string (a CIDR or an IP address)"
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Sprintf("invalid CIDR %q", s)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p.Masked(), ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Sprintf("invalid CIDR or IP address %q", s)
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), ""
}
