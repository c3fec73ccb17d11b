package correlate

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil"
)

// heldSignal is a signal the Tally holds, in 48 bytes and without a
// pointer, so that a million of them neither take hundreds of megabytes
// nor give the garbage collector anything to follow: its strings are
// numbers of a heldCodec's tables, its artifact id the 16 bytes of its
// UUID, and its nodes one shared list whose values that repeat the key
// are read from the key. The vigil.Signal it stands for comes back
// whole when its key moves to the store.
type heldSignal struct {
	at     int64 // Unix nanoseconds
	id     heldID
	member uint32 // codec strings; 0 is ""
	unit   uint32
	key    uint32 // the signal's Key when not its detection's (0: the same)
	nodes  uint32 // codec lists; 0 is none
	count  int32
	flags  uint8
}

const (
	heldEvidence uint8 = 1 << iota
	heldEngineEvent
	heldIDString // id holds a codec string's number: the id is no canonical UUID
	// heldMany marks a cold key's entry whose signals are elsewhere
	// (coldKeys.many): it holds the time of their newest only.
	heldMany
)

// heldID is an artifact id: the bytes of a canonical UUID, or the number
// of a codec string for any other id.
type heldID [16]byte

func (h heldSignal) weight() int {
	if h.flags&heldEvidence != 0 {
		return 0
	}
	return max(int(h.count), 1)
}

// heldCodec turns signals into heldSignals and back. Its tables only grow
// (a number in use must keep its meaning); rebuild renumbers them for
// the signals still held once most entries serve none.
type heldCodec struct {
	strs  map[string]uint32
	names []string // by number; names[0] is ""
	lists map[string]uint32
	tmpls [][]nodeTemplate // by number; tmpls[0] is none
	buf   []byte
}

// nodeTemplate is a node of a shared list: its value is Value, or when
// part > 0 the key's part-th field ('|' separated), or the whole key when
// part is wholeKey.
type nodeTemplate struct {
	Type, Value string
	Key         bool
	part        uint8
}

const wholeKey = math.MaxUint8

func newHeldCodec() *heldCodec {
	return &heldCodec{strs: map[string]uint32{"": 0}, names: []string{""}, lists: map[string]uint32{"": 0}, tmpls: [][]nodeTemplate{nil}}
}

// size is how many entries the codec's tables hold.
func (c *heldCodec) size() int { return len(c.names) + len(c.tmpls) }

func (c *heldCodec) str(s string) uint32 {
	if n, ok := c.strs[s]; ok {
		return n
	}
	n := uint32(len(c.names))
	c.strs[s] = n
	c.names = append(c.names, s)
	return n
}

// encode returns sg as held under its detection's key.
func (c *heldCodec) encode(key string, sg vigil.Signal) heldSignal {
	h := heldSignal{at: nanos(sg.At), member: c.str(sg.Member), unit: c.str(sg.Unit),
		count: int32(min(max(sg.Count, math.MinInt32), math.MaxInt32))}
	if sg.Key != key {
		h.key = c.str(sg.Key)
	}
	if sg.Evidence {
		h.flags |= heldEvidence
	}
	if sg.EngineEvent {
		h.flags |= heldEngineEvent
	}
	if id, ok := CanonicalUUID(sg.ArtifactID); ok {
		h.id = id
	} else {
		h.flags |= heldIDString
		h.id = stringID(c.str(sg.ArtifactID))
	}
	h.nodes = c.list(key, sg.Nodes)
	return h
}

// idOf returns the held form of artifact id, false when no held signal
// can have it.
func (c *heldCodec) idOf(id string) (heldIdent, bool) {
	if b, ok := CanonicalUUID(id); ok {
		return heldIdent{id: b}, true
	}
	n, ok := c.strs[id]
	return heldIdent{id: stringID(n), named: true}, ok
}

func stringID(n uint32) heldID {
	var id heldID
	id[0], id[1], id[2], id[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return id
}

func (id heldID) number() uint32 {
	return uint32(id[0]) | uint32(id[1])<<8 | uint32(id[2])<<16 | uint32(id[3])<<24
}

// list returns the number of the shared list of nodes, the values that
// repeat the key (or one of its '|' fields) left to be read from it.
func (c *heldCodec) list(key string, nodes []vigil.NodeRef) uint32 {
	if len(nodes) == 0 {
		return 0
	}
	b := c.buf[:0]
	for _, n := range nodes {
		b = appendTemplate(b, templateOf(key, n))
	}
	c.buf = b
	if id, ok := c.lists[string(b)]; ok {
		return id
	}
	t := make([]nodeTemplate, len(nodes))
	for i, n := range nodes {
		t[i] = templateOf(key, n)
	}
	return c.addList(string(b), t)
}

func (c *heldCodec) addList(enc string, t []nodeTemplate) uint32 {
	id := uint32(len(c.tmpls))
	c.lists[enc] = id
	c.tmpls = append(c.tmpls, t)
	return id
}

func templateOf(key string, n vigil.NodeRef) nodeTemplate {
	t := nodeTemplate{Type: n.Type, Key: n.Key, part: keyPart(key, n.Value)}
	if t.part == 0 {
		t.Value = n.Value
	}
	return t
}

// appendTemplate appends the encoding of t that the codec's lists are
// found by: lengths before strings, so that no two lists share one.
func appendTemplate(b []byte, t nodeTemplate) []byte {
	b = binary.AppendUvarint(b, uint64(len(t.Type)))
	b = append(b, t.Type...)
	b = binary.AppendUvarint(b, uint64(len(t.Value)))
	b = append(b, t.Value...)
	k := byte(0)
	if t.Key {
		k = 1
	}
	return append(b, t.part, k)
}

// keyPart is where value lies in key: wholeKey, the number (from 1) of
// the '|' field it equals (below memberPart), or 0 for neither.
func keyPart(key, value string) uint8 {
	if value == "" {
		return 0
	}
	if value == key {
		return wholeKey
	}
	i := uint8(1)
	for f := range strings.SplitSeq(key, "|") {
		if f == value {
			return i
		}
		if i++; i == memberPart {
			break
		}
	}
	return 0
}

// decode returns the signal h stands for, held under key.
func (c *heldCodec) decode(key string, h heldSignal) vigil.Signal {
	sg := vigil.Signal{Key: key, At: fromNanos(h.at), Member: c.names[h.member], Unit: c.names[h.unit], Count: int(h.count),
		Evidence: h.flags&heldEvidence != 0, EngineEvent: h.flags&heldEngineEvent != 0}
	if h.key != 0 {
		sg.Key = c.names[h.key]
	}
	if h.flags&heldIDString != 0 {
		sg.ArtifactID = c.names[h.id.number()]
	} else {
		sg.ArtifactID = uuidString(h.id)
	}
	if t := c.tmpls[h.nodes]; len(t) > 0 {
		sg.Nodes = make([]vigil.NodeRef, len(t))
		var parts []string
		for i, n := range t {
			v, _ := n.value(key, "", &parts) // the codec's templates name fields of key
			sg.Nodes[i] = vigil.NodeRef{Type: n.Type, Value: v, Key: n.Key}
		}
	}
	return sg
}

func (c *heldCodec) decodeAll(key string, hs []heldSignal) []vigil.Signal {
	out := make([]vigil.Signal, len(hs))
	for i, h := range hs {
		out[i] = c.decode(key, h)
	}
	return out
}

// rebuild returns a codec holding only what the signals each yields use,
// and renumbers those signals for it.
func (c *heldCodec) rebuild(each func(yield func(hs []heldSignal))) *heldCodec {
	n := newHeldCodec()
	strs := map[uint32]uint32{0: 0}
	str := func(old uint32) uint32 {
		if v, ok := strs[old]; ok {
			return v
		}
		v := n.str(c.names[old])
		strs[old] = v
		return v
	}
	lists := map[uint32]uint32{0: 0}
	each(func(hs []heldSignal) {
		for i := range hs {
			h := &hs[i]
			h.member, h.unit, h.key = str(h.member), str(h.unit), str(h.key)
			if h.flags&heldIDString != 0 {
				h.id = stringID(str(h.id.number()))
			}
			v, ok := lists[h.nodes]
			if !ok {
				t := c.tmpls[h.nodes]
				var enc []byte
				for _, x := range t {
					enc = appendTemplate(enc, x)
				}
				if v, ok = n.lists[string(enc)]; !ok {
					v = n.addList(string(enc), t)
				}
				lists[h.nodes] = v
			}
			h.nodes = v
		}
	})
	return n
}

// CanonicalUUID returns the bytes of id when it is a UUID in its
// canonical form (36 characters, lower case, as vigil.NewID writes it):
// the only form uuidString gives back unchanged, and one whose byte
// order is its text's.
func CanonicalUUID(id string) ([16]byte, bool) {
	if len(id) != 36 || strings.ToLower(id) != id {
		return [16]byte{}, false
	}
	u, err := uuid.Parse(id)
	return u, err == nil
}

func uuidString(b heldID) string { return uuid.UUID(b).String() }
