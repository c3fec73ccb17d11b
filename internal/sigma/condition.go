package sigma

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A condition's syntax tree. Precedence, least binding first: or, and,
// not, "x of", parentheses.
type cond interface{ isCond() }

type (
	condOr    struct{ l, r cond }
	condAnd   struct{ l, r cond }
	condNot   struct{ x cond }
	condIdent struct{ name string }
	// condOf is "1 of pattern", "all of them"…: N is 0 for all.
	condOf struct {
		n       int
		pattern string // "them" for every identifier not starting with _
	}
)

func (condOr) isCond()    {}
func (condAnd) isCond()   {}
func (condNot) isCond()   {}
func (condIdent) isCond() {}
func (condOf) isCond()    {}

// maxConditionDepth bounds nesting (parentheses and nots), so that a
// hostile condition cannot exhaust the stack.
const maxConditionDepth = 64

type condParser struct {
	toks  []string
	pos   int
	depth int
}

// parseCondition parses a condition of the Sigma grammar.
func parseCondition(s string) (cond, error) {
	if len(s) > maxConditionLen {
		return nil, fmt.Errorf("at most %d characters", maxConditionLen)
	}
	if strings.Contains(s, "|") {
		return nil, errors.New("aggregations (| count() …) are Sigma 1 and not supported: write a correlation rule")
	}
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errors.New("empty condition")
	}
	p := &condParser{toks: toks}
	c, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	return c, nil
}

func tokenize(s string) ([]string, error) {
	var out []string
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')':
			out = append(out, s[i:i+1])
			i++
		case isIdentByte(c):
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q", rune(c))
		}
	}
	return out, nil
}

// isIdentByte: identifiers are letters, digits and _, patterns add *.
func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '*'
}

func (p *condParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *condParser) or() (cond, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for strings.EqualFold(p.peek(), "or") {
		p.pos++
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = condOr{l, r}
	}
	return l, nil
}

func (p *condParser) and() (cond, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for strings.EqualFold(p.peek(), "and") {
		p.pos++
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = condAnd{l, r}
	}
	return l, nil
}

func (p *condParser) not() (cond, error) {
	if strings.EqualFold(p.peek(), "not") {
		p.pos++
		if p.depth++; p.depth > maxConditionDepth {
			return nil, fmt.Errorf("nested more than %d deep", maxConditionDepth)
		}
		x, err := p.not()
		p.depth--
		if err != nil {
			return nil, err
		}
		return condNot{x}, nil
	}
	return p.primary()
}

func (p *condParser) primary() (cond, error) {
	t := p.peek()
	switch {
	case t == "":
		return nil, errors.New("ends where a search identifier is expected")
	case t == "(":
		p.pos++
		if p.depth++; p.depth > maxConditionDepth {
			return nil, fmt.Errorf("nested more than %d deep", maxConditionDepth)
		}
		c, err := p.or()
		p.depth--
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, errors.New("missing )")
		}
		p.pos++
		return c, nil
	case t == ")":
		return nil, errors.New("unexpected )")
	case isKeyword(t):
		return nil, fmt.Errorf("unexpected %q", t)
	}
	p.pos++
	if p.pos < len(p.toks) && strings.EqualFold(p.toks[p.pos], "of") {
		n := 0
		if !strings.EqualFold(t, "all") {
			var err error
			if n, err = strconv.Atoi(t); err != nil || n < 1 {
				return nil, fmt.Errorf("%q of: a quantifier is 1 (or another positive number) or all", t)
			}
		}
		p.pos++
		pat := p.peek()
		if pat == "" || pat == "(" || pat == ")" || isKeyword(pat) {
			return nil, fmt.Errorf("%s of: a search identifier pattern or them expected", t)
		}
		p.pos++
		return condOf{n: n, pattern: pat}, nil
	}
	if strings.Contains(t, "*") {
		return nil, fmt.Errorf("%q: a pattern goes after 1 of or all of", t)
	}
	return condIdent{t}, nil
}

func isKeyword(t string) bool {
	for _, k := range []string{"and", "or", "not", "of"} {
		if strings.EqualFold(t, k) {
			return true
		}
	}
	return false
}

// patternMatch reports whether identifier name matches pattern (a
// search identifier pattern whose * matches any run of characters).
func patternMatch(pattern, name string) bool {
	if pattern == "them" {
		return !strings.HasPrefix(name, "_")
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for i, part := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(name, part)
		}
		j := strings.Index(name, part)
		if j < 0 {
			return false
		}
		name = name[j+len(part):]
	}
	return true
}
