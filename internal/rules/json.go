package rules

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// JSON helpers. The whole tree was checked by json.Valid before any of them
// runs, so decoding a part of it cannot fail.

type member struct {
	key string
	val json.RawMessage
}

// jsonKind returns the first byte of a JSON value: '{', '[', '"', 't', 'f',
// 'n', '-' or a digit; 0 when raw is empty.
func jsonKind(raw []byte) byte {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return b
	}
	return 0
}

// objectMembers returns the members of a JSON object in document order,
// duplicates included.
func objectMembers(raw json.RawMessage) []member {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, member{key, v})
	}
	return out
}

// arrayElems returns the elements of a JSON array, nil for anything else.
func arrayElems(raw json.RawMessage) []json.RawMessage {
	if jsonKind(raw) != '[' {
		return nil
	}
	var out []json.RawMessage
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if jsonKind(raw) != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func jsonNumber(raw json.RawMessage) (float64, string) {
	k := jsonKind(raw)
	if k != '-' && (k < '0' || k > '9') {
		return 0, "must be a number"
	}
	n, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsInf(n, 0) {
		return 0, "must be a finite number"
	}
	return n, ""
}

// memberPath names key of the object at path, quoting keys that would not
// read as one path segment.
func memberPath(path, key string) string {
	for _, r := range key {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return path + "[" + strconv.Quote(key) + "]"
		}
	}
	if key == "" {
		return path + `[""]`
	}
	return path + "." + key
}
