package correlate

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/vigil-soc/vigil"
)

// A store keeps the nodes of each signal it records. As JSON they were
// most of the row: 140 bytes for a firewall block's three nodes, two of
// which repeat the signal's key and member. AppendStoredNodes writes them
// as the Tally holds them, nodeTemplates whose values that repeat the key
// (or one of its '|' fields) or the member are left to be read from
// those: about 25 bytes for the same three.

// storedNodesForm is the first byte of the stored form; JSON, the form
// stores wrote before, starts with '['.
const storedNodesForm = 1

// memberPart is the part of a stored node whose value is its signal's
// member.
const memberPart = wholeKey - 1

// AppendStoredNodes appends to b the stored form of nodes, those of a
// signal of key with member.
func AppendStoredNodes(b []byte, key, member string, nodes []vigil.NodeRef) []byte {
	b = append(b, storedNodesForm)
	for _, n := range nodes {
		t := templateOf(key, n)
		if t.part == 0 && member != "" && n.Value == member {
			t.part, t.Value = memberPart, ""
		}
		b = appendTemplate(b, t)
	}
	return b
}

// IsStoredNodes reports whether b is in the stored form (and not JSON).
func IsStoredNodes(b []byte) bool { return len(b) > 0 && b[0] == storedNodesForm }

var errStoredNodes = errors.New("stored nodes: malformed")

// StoredNodes reads back the nodes AppendStoredNodes wrote of a signal of
// key with member.
func StoredNodes(key, member string, b []byte) ([]vigil.NodeRef, error) {
	if !IsStoredNodes(b) {
		return nil, errStoredNodes
	}
	b = b[1:]
	str := func() (string, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return "", false
		}
		s := string(b[w : w+int(n)])
		b = b[w+int(n):]
		return s, true
	}
	var out []vigil.NodeRef
	var parts []string
	for len(b) > 0 {
		typ, ok1 := str()
		value, ok2 := str()
		if !ok1 || !ok2 || len(b) < 2 || b[1] > 1 {
			return nil, errStoredNodes
		}
		t := nodeTemplate{Type: typ, Value: value, part: b[0], Key: b[1] == 1}
		b = b[2:]
		v, ok := t.value(key, member, &parts)
		if !ok {
			return nil, errStoredNodes
		}
		out = append(out, vigil.NodeRef{Type: t.Type, Value: v, Key: t.Key})
	}
	return out, nil
}

// value is t's value in a signal of key with member; parts holds key's
// '|' fields once split. It is false when t names a field key lacks.
func (t nodeTemplate) value(key, member string, parts *[]string) (string, bool) {
	switch {
	case t.part == 0:
		return t.Value, true
	case t.part == wholeKey:
		return key, true
	case t.part == memberPart:
		return member, true
	}
	if *parts == nil {
		*parts = strings.Split(key, "|")
	}
	if int(t.part) > len(*parts) {
		return "", false
	}
	return (*parts)[t.part-1], true
}
