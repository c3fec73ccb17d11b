package sqlite

import (
	"encoding/hex"
	"strings"
)

// The full-text entry of each artifact ends with one word naming its org
// and source (migration 0034), so that a search within a source is one
// full-text query: FTS5 intersects the term's doclist with the source's,
// newest first, and stops at what the page and the count need. The word
// is the letter sourceMark, then the hex of the org id, "x", and the hex
// of the source: letters and digits only, which the index's tokenizer
// keeps as one token (case folded). No line can forge it: a line's text
// is indexed with sourceMark replaced by a space (indexText), and so is a
// query's (sourceFree).

// sourceMark begins every source word: a letter (U+A66E, Cyrillic
// multiocular O) no log writes.
const sourceMark = 'ꙮ'

// sourceWord is the word of org's artifacts of source.
func sourceWord(org, source string) string {
	return string(sourceMark) + hex.EncodeToString([]byte(org)) + "x" + hex.EncodeToString([]byte(source))
}

// indexText is the text artifacts_fts indexes for an artifact whose line
// is raw and whose org and source have the word word (sourceWord): the
// line, sourceMark replaced by a space, and the word on a line of its own
// (so that no phrase spans both).
func indexText(raw, word string) string {
	return sourceFree(raw) + "\n" + word
}

// sourceWords are the source words of org's artifacts, each computed once
// (a batch holds a few sources).
type sourceWords struct {
	org   string
	words map[string]string
}

// of returns the word of source.
func (w *sourceWords) of(source string) string {
	if v, ok := w.words[source]; ok {
		return v
	}
	if w.words == nil {
		w.words = map[string]string{}
	}
	v := sourceWord(w.org, source)
	w.words[source] = v
	return v
}

// sourceFree returns s with sourceMark replaced by a space: the line as
// indexed, or an FTS5 expression of a query's terms (inside a quoted
// string it splits a token as the line's was split).
func sourceFree(s string) string {
	if !strings.ContainsRune(s, sourceMark) {
		return s
	}
	return strings.ReplaceAll(s, string(sourceMark), " ")
}
