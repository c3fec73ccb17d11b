// Package search parses the artifact full-text query language into a small
// tree that each store renders in its own engine's syntax (FTS5 MATCH,
// PostgreSQL tsquery), so both engines accept exactly the same queries.
//
// Syntax: words are ANDed; "quoted phrases" match consecutive words;
// prefix* matches words starting with prefix; OR between two terms makes
// alternatives (AND binds tighter: `a b OR c` = `(a AND b) OR c`); -word or
// -"phrase" excludes artifacts containing it, whichever alternative matched.
//
// Text is split into tokens at every character that is neither a letter
// nor a digit, the same way the indexes split raw lines, so an IP address
// or a domain written as one term ("203.0.113.7", "evil.example.com")
// becomes a phrase of its parts and matches exactly where it appears.
package search

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// Limits on a query, so that one request cannot build an unbounded match
// expression, nor one that costs seconds of database time. Each token is
// a look-up in the full-text index (and, in a phrase, a comparison of
// positions), so the work grows with the number of tokens: on 91,000
// artifacts a phrase of 500 one-letter tokens took 6 s, one term 22 ms.
// A prefix reads every indexed word it begins, the more the shorter it is
// (measured: a 1-character prefix costs about as much as 20 tokens).
const (
	MaxQueryLen = 1024
	MaxTerms    = 32
	// MaxPhraseTokens bounds the tokens of one term: a full IPv6 address
	// has 8, a URL or a signature name rarely more than 16.
	MaxPhraseTokens = 16
	// MaxQueryCost bounds the sum of the terms' costs (Cost), excluded
	// terms included.
	MaxQueryCost = 64
)

// Cost is what a term costs in index look-ups: one per token, and for a
// prefix 16, 8 or 4 for its last token when it has 1, 2, or more
// characters.
func (t Term) Cost() int {
	n := len(t.Tokens)
	if t.Prefix && n > 0 {
		n--
		switch utf8.RuneCountInString(t.Tokens[len(t.Tokens)-1]) {
		case 1:
			n += 16
		case 2:
			n += 8
		default:
			n += 4
		}
	}
	return n
}

// Term is one word, phrase or prefix, as its tokens.
type Term struct {
	Tokens []string
	Prefix bool // the last token is a prefix
}

// Query is an OR of AND-groups of terms, minus the excluded terms.
type Query struct {
	Any [][]Term
	Not []Term
}

// Empty reports whether q selects everything (no positive or negative terms).
func (q *Query) Empty() bool { return len(q.Any) == 0 && len(q.Not) == 0 }

// Parse parses s. An empty or blank query parses to an empty Query. A query
// that names only punctuation, an unterminated quote, too many terms, a
// term of too many tokens or a query costing more than MaxQueryCost is
// EINVALID naming the field "query".
func Parse(s string) (*Query, error) {
	if len(s) > MaxQueryLen {
		return nil, vigil.InvalidField("query", "must be at most 1024 bytes")
	}
	q := &Query{}
	var group []Term
	pendingOr := false
	n, cost := 0, 0
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		neg := false
		if c == '-' && i+1 < len(s) && s[i+1] != ' ' {
			neg = true
			i++
		}
		var text string
		quoted := false
		if i < len(s) && s[i] == '"' {
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				return nil, vigil.InvalidField("query", "unterminated quoted phrase")
			}
			text = s[i+1 : i+1+end]
			i += end + 2
			quoted = true
		} else {
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' && s[j] != '\r' {
				j++
			}
			text = s[i:j]
			i = j
		}
		if !quoted && !neg && text == "OR" {
			if len(group) == 0 || pendingOr {
				return nil, vigil.InvalidField("query", "OR must stand between two terms")
			}
			pendingOr = true
			continue
		}
		prefix := false
		if !quoted && strings.HasSuffix(text, "*") {
			prefix = true
			text = strings.TrimRight(text, "*")
		}
		toks := Tokens(text)
		if len(toks) == 0 {
			if quoted || prefix || neg {
				return nil, vigil.InvalidField("query", "term has no letters or digits")
			}
			continue // lone punctuation between terms is ignored
		}
		n++
		if n > MaxTerms {
			return nil, vigil.InvalidField("query", "must have at most 32 terms")
		}
		if len(toks) > MaxPhraseTokens {
			return nil, vigil.InvalidField("query", fmt.Sprintf(
				"a term may have at most %d words (an address, a domain or a quoted phrase counts each of its parts): %q has %d",
				MaxPhraseTokens, clip(text), len(toks)))
		}
		t := Term{Tokens: toks, Prefix: prefix}
		if cost += t.Cost(); cost > MaxQueryCost {
			return nil, vigil.InvalidField("query", fmt.Sprintf(
				"is too expensive: at most %d index look-ups (one per word of each term; a prefix* 4, or 8 and 16 with 2 and 1 characters)",
				MaxQueryCost))
		}
		if neg {
			q.Not = append(q.Not, t)
			continue
		}
		if pendingOr {
			q.Any = append(q.Any, group)
			group = nil
			pendingOr = false
		}
		group = append(group, t)
	}
	if pendingOr {
		return nil, vigil.InvalidField("query", "OR must stand between two terms")
	}
	if len(group) == 0 && len(q.Any) == 0 && len(q.Not) == 0 && strings.TrimSpace(s) != "" {
		// Nothing but punctuation: it would match every artifact.
		return nil, vigil.InvalidField("query", "must hold a term with letters or digits")
	}
	if len(group) > 0 {
		q.Any = append(q.Any, group)
	}
	return q, nil
}

// clip shortens text quoted back in an error message.
func clip(text string) string {
	if len(text) <= 40 {
		return text
	}
	cut := 40
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

// Tokens splits text the way the full-text indexes do: lower-cased runs of
// letters and digits.
func Tokens(text string) []string {
	var out []string
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(text[start:]))
	}
	return out
}
