package enrich

import (
	"encoding/json"
	"fmt"
	"strings"
)

// stixObject holds the fields of a STIX 2.1 object that matter here.
type stixObject struct {
	Type        string `json:"type"`
	Pattern     string `json:"pattern"`
	PatternType string `json:"pattern_type"`
	Revoked     bool   `json:"revoked"`
}

// parseSTIX parses a STIX 2.1 bundle (or a bare array of STIX objects)
// and returns the indicators of its indicator objects whose pattern is a
// disjunction of simple equality comparisons:
//
//	[ipv4-addr:value = '198.51.100.7']
//	[domain-name:value = 'evil.example' OR url:value = 'http://evil.example/x']
//	[file:hashes.'SHA-256' = '…'] OR [file:hashes.MD5 = '…']
//
// Patterns with AND, FOLLOWEDBY, other operators or qualifiers need
// several observations together and are skipped, as are revoked
// indicators and other pattern languages. errNotFormat means the JSON is
// not STIX.
func parseSTIX(data []byte) (inds []Indicator, skipped int, err error) {
	var objs []stixObject
	var bundle struct {
		Type    string       `json:"type"`
		Objects []stixObject `json:"objects"`
	}
	if err := json.Unmarshal(data, &bundle); err == nil {
		if bundle.Type != "bundle" && bundle.Objects == nil {
			return nil, 0, errNotFormat
		}
		objs = bundle.Objects
	} else if err := json.Unmarshal(data, &objs); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); ok {
			return nil, 0, errNotFormat
		}
		return nil, 0, fmt.Errorf("stix: %w", err)
	} else {
		// A bare array counts as STIX only if it holds STIX indicators.
		found := false
		for _, o := range objs {
			if o.Type == "indicator" {
				found = true
				break
			}
		}
		if !found {
			return nil, 0, errNotFormat
		}
	}
	for _, o := range objs {
		if o.Type != "indicator" {
			continue
		}
		if o.Revoked || (o.PatternType != "" && o.PatternType != "stix") {
			skipped++
			continue
		}
		got, ok := stixPattern(o.Pattern)
		if !ok {
			skipped++
			continue
		}
		inds = append(inds, got...)
	}
	return inds, skipped, nil
}

// stixPattern parses a pattern of OR-ed observation expressions, each an
// OR of `object-path = 'string'` comparisons.
func stixPattern(p string) ([]Indicator, bool) {
	s := &stixScanner{s: p}
	var out []Indicator
	for {
		s.space()
		if !s.eat('[') {
			return nil, false
		}
		for {
			s.space()
			path := s.path()
			s.space()
			if path == "" || !s.eat('=') {
				return nil, false
			}
			s.space()
			val, ok := s.str()
			if !ok {
				return nil, false
			}
			if ind, ok := stixIndicator(path, val); ok {
				out = append(out, ind)
			} else {
				return nil, false
			}
			s.space()
			if s.eat(']') {
				break
			}
			if !s.keyword("OR") {
				return nil, false
			}
		}
		s.space()
		if s.done() {
			return out, len(out) > 0
		}
		if !s.keyword("OR") {
			return nil, false
		}
	}
}

// stixIndicator maps an object path and value to an indicator.
func stixIndicator(path, val string) (Indicator, bool) {
	switch path {
	case "ipv4-addr:value", "ipv6-addr:value":
		return normIndicator(hintIP, val)
	case "domain-name:value":
		return normIndicator(hintDomain, val)
	case "url:value":
		return normIndicator(hintURL, val)
	}
	if h, ok := strings.CutPrefix(path, "file:hashes."); ok {
		switch strings.ToUpper(strings.ReplaceAll(h, "-", "")) {
		case "MD5", "SHA1", "SHA256", "SHA512":
			return normIndicator(hintHash, val)
		}
	}
	return Indicator{}, false
}

type stixScanner struct {
	s string
	i int
}

func (s *stixScanner) done() bool { return s.i >= len(s.s) }

func (s *stixScanner) space() {
	for s.i < len(s.s) && (s.s[s.i] == ' ' || s.s[s.i] == '\t' || s.s[s.i] == '\n' || s.s[s.i] == '\r') {
		s.i++
	}
}

func (s *stixScanner) eat(c byte) bool {
	if s.i < len(s.s) && s.s[s.i] == c {
		s.i++
		return true
	}
	return false
}

// keyword consumes kw (case-insensitive) followed by a space or bracket.
func (s *stixScanner) keyword(kw string) bool {
	end := s.i + len(kw)
	if end > len(s.s) || !strings.EqualFold(s.s[s.i:end], kw) {
		return false
	}
	if end < len(s.s) && s.s[end] != ' ' && s.s[end] != '[' && s.s[end] != '\t' {
		return false
	}
	s.i = end
	return true
}

// path reads an object path such as file:hashes.'SHA-256', returning it
// with quotes removed.
func (s *stixScanner) path() string {
	var b strings.Builder
	for s.i < len(s.s) {
		c := s.s[s.i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == ':', c == '.':
			b.WriteByte(c)
			s.i++
		case c == '\'':
			v, ok := s.str()
			if !ok {
				return ""
			}
			b.WriteString(v)
		default:
			return b.String()
		}
	}
	return b.String()
}

// str reads a single-quoted string with \' and \\ escapes.
func (s *stixScanner) str() (string, bool) {
	if !s.eat('\'') {
		return "", false
	}
	var b strings.Builder
	for s.i < len(s.s) {
		c := s.s[s.i]
		s.i++
		switch c {
		case '\\':
			if s.i >= len(s.s) {
				return "", false
			}
			b.WriteByte(s.s[s.i])
			s.i++
		case '\'':
			return b.String(), true
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}
