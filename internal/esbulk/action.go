package esbulk

import (
	"encoding/json"
	"errors"
	"fmt"
)

// action is an action line's metadata.
type action struct {
	Index string `json:"_index"`
	ID    string `json:"_id"`
}

// hasDocument reports whether an action is followed by a document line.
func hasDocument(action string) bool { return action != "delete" }

var errMalformedAction = errors.New(`malformed action line: must be a JSON object such as {"create":{}}`)

// parseAction reads an action line: an object with one member, the action,
// whose value is an object of metadata. The line is walked, not decoded
// into a map: a request has up to 100,000 of them.
func parseAction(l []byte) (string, action, error) {
	if len(l) == 0 || l[0] != '{' || !json.Valid(l) {
		return "", action{}, errMalformedAction
	}
	i := skipSpace(l, 1)
	if l[i] == '}' {
		return "", action{}, fmt.Errorf("malformed action line: must name exactly one action")
	}
	end := valueEnd(l, i) // the name, a string in a valid object
	name, _ := jsonString(l[i:end])
	i = skipSpace(l, skipSpace(l, end)+1) // past ':'
	end = valueEnd(l, i)
	meta := l[i:end]
	if l[skipSpace(l, end)] == ',' {
		return "", action{}, fmt.Errorf("malformed action line: must name exactly one action")
	}
	switch name {
	case "index", "create", "update", "delete":
	default:
		return "", action{}, fmt.Errorf("unknown action %.32q: want index, create, update or delete", name)
	}
	a, ok := parseMeta(meta)
	if !ok {
		return "", action{}, fmt.Errorf("malformed %s action: its metadata must be an object with string _index and _id", name)
	}
	return name, a, nil
}

// parseMeta reads an action's metadata, a valid JSON value: null, or an
// object whose _index and _id, when present, are strings or null (the
// last of a repeated member counts; other members, such as routing or
// pipeline, are ignored).
func parseMeta(m []byte) (action, bool) {
	var a action
	if string(m) == "null" {
		return a, true
	}
	if m[0] != '{' {
		return a, false
	}
	var index, id []byte
	for i := skipSpace(m, 1); m[i] == '"'; {
		end := valueEnd(m, i)
		key, _ := jsonString(m[i:end])
		i = skipSpace(m, skipSpace(m, end)+1) // past ':'
		end = valueEnd(m, i)
		switch key {
		case "_index":
			index = m[i:end]
		case "_id":
			id = m[i:end]
		}
		if i = skipSpace(m, end); m[i] == ',' {
			i = skipSpace(m, i+1)
		}
	}
	for _, f := range []struct {
		v   []byte
		dst *string
	}{{index, &a.Index}, {id, &a.ID}} {
		if f.v == nil || string(f.v) == "null" {
			continue
		}
		s, ok := jsonString(f.v)
		if !ok {
			return a, false
		}
		*f.dst = s
	}
	return a, true
}

// skipSpace returns the index of the first byte of l from i that is not
// JSON white space.
func skipSpace(l []byte, i int) int {
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '\n' || l[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the JSON value that starts at i of
// l, which is valid JSON.
func valueEnd(l []byte, i int) int {
	depth := 0
	for ; i < len(l); i++ {
		switch l[i] {
		case '"':
			for i++; l[i] != '"'; i++ {
				if l[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // the end of the enclosing object: a literal ended
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
