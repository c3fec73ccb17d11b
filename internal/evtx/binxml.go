package evtx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Binary XML tokens ([MS-EVEN6] 3.1.4.7). The 0x40 bit on some says more
// data follows (attributes, another attribute, more text).
const (
	tokEOF          = 0x00
	tokOpenStart    = 0x01
	tokCloseStart   = 0x02
	tokCloseEmpty   = 0x03
	tokEnd          = 0x04
	tokValue        = 0x05
	tokAttribute    = 0x06
	tokCDATA        = 0x07
	tokCharRef      = 0x08
	tokEntityRef    = 0x09
	tokPITarget     = 0x0a
	tokPIData       = 0x0b
	tokTemplate     = 0x0c
	tokSubst        = 0x0d
	tokOptSubst     = 0x0e
	tokFragment     = 0x0f
	tokMoreBit      = 0x40
	maxDepth        = 64
	maxNodes        = 1 << 16
	maxBinXMLNested = 8
)

var errShort = errors.New("data ends inside a token")

// Element is an XML element of an event: its name, attributes, text and
// child elements, in document order.
type Element struct {
	Name     string
	Attrs    []Attr
	Text     string
	Children []*Element
}

// Attr is one attribute of an element.
type Attr struct {
	Name, Value string
}

// Attr returns the value of the attribute called name, or "".
func (e *Element) Attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

// Child returns the first child element called name, or nil.
func (e *Element) Child(name string) *Element {
	if e == nil {
		return nil
	}
	for _, c := range e.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// node is binary XML parsed but not yet instantiated: template
// definitions keep their substitutions as nodes, resolved for each record
// that uses the template.
type node struct {
	kind     uint8 // nodeElement, nodeText, nodeSubst
	name     string
	text     string
	sub      uint16
	optional bool
	attrs    []nodeAttr
	children []*node
	// inst is a template instance met inside content (kind nodeInstance).
	inst *instance
}

type nodeAttr struct {
	name  string
	parts []*node // nodeText and nodeSubst
}

const (
	nodeElement = iota
	nodeText
	nodeSubst
	nodeInstance
)

// template is a parsed template definition, cached per chunk by offset.
type template struct {
	root []*node
}

// instance is a template and its substitution values.
type instance struct {
	tmpl   *template
	values []value
}

// value is one substitution value: its type and bytes, and where the bytes
// begin in the chunk (binary XML values name strings by chunk offset).
type value struct {
	typ  byte
	data []byte
	pos  int
}

// parser reads the binary XML of one record from its chunk.
type parser struct {
	c     *chunk
	end   int // the record's binary XML ends here
	nodes int // elements and nodes made, against maxNodes
	text  int // bytes of text made, against maxText
	// Slabs the record's elements and attributes are taken from.
	elements []Element
	attrs    []Attr
	values   []value
	children []*Element
}

// newValues takes room for n substitution values from a slab.
func (p *parser) newValues(n int) []value {
	if cap(p.values)-len(p.values) < n {
		p.values = make([]value, 0, max(128, n))
	}
	start := len(p.values)
	p.values = p.values[:start+n]
	return p.values[start : start+n : start+n]
}

// document parses the record's binary XML from pos and instantiates it.
func (p *parser) document(pos int) (*Element, error) {
	nodes, _, err := p.fragment(pos, p.end, false)
	if err != nil {
		return nil, err
	}
	var root Element
	if err := p.fill(&root, nodes, nil, 0); err != nil {
		return nil, err
	}
	if len(root.Children) == 0 {
		return nil, errors.New("no event element")
	}
	return root.Children[0], nil
}

// fragment parses tokens from pos to end (or an EOF token) into nodes.
// noDep says element starts carry no dependency identifier, as in a
// binary XML substitution value.
func (p *parser) fragment(pos, end int, noDep bool) ([]*node, int, error) {
	d := p.c.data
	if end > len(d) {
		end = len(d)
	}
	var (
		root  []*node
		stack []*node
		attr  *nodeAttr // the attribute whose value is being read
	)
	add := func(n *node) error {
		p.nodes++
		if p.nodes > maxNodes {
			return errors.New("too many nodes")
		}
		if attr != nil && (n.kind == nodeText || n.kind == nodeSubst) {
			attr.parts = append(attr.parts, n)
			return nil
		}
		if len(stack) == 0 {
			root = append(root, n)
		} else {
			top := stack[len(stack)-1]
			top.children = append(top.children, n)
		}
		return nil
	}
	for pos < end {
		tok := d[pos]
		switch tok &^ tokMoreBit {
		case tokEOF:
			return root, pos + 1, nil
		case tokFragment:
			pos += 4
		case tokOpenStart:
			pos++
			if !noDep {
				pos += 2
			}
			if pos+8 > end {
				return nil, 0, errShort
			}
			pos += 4 // data size
			name, next, err := p.name(pos, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
			if tok&tokMoreBit != 0 {
				pos += 4 // attribute list size
			}
			if len(stack) >= maxDepth {
				return nil, 0, errors.New("elements nested too deep")
			}
			el := &node{kind: nodeElement, name: name}
			attr = nil
			if err := add(el); err != nil {
				return nil, 0, err
			}
			stack = append(stack, el)
		case tokAttribute:
			if len(stack) == 0 {
				return nil, 0, fmt.Errorf("attribute outside an element at %d", pos)
			}
			name, next, err := p.name(pos+1, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
			top := stack[len(stack)-1]
			top.attrs = append(top.attrs, nodeAttr{name: name})
			attr = &top.attrs[len(top.attrs)-1]
		case tokCloseStart:
			attr = nil
			pos++
		case tokCloseEmpty, tokEnd:
			attr = nil
			if len(stack) == 0 {
				return nil, 0, fmt.Errorf("end of element without a start at %d", pos)
			}
			stack = stack[:len(stack)-1]
			pos++
		case tokValue:
			if pos+4 > end {
				return nil, 0, errShort
			}
			s, next, err := p.utf16String(pos+2, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
			if err := add(&node{kind: nodeText, text: s}); err != nil {
				return nil, 0, err
			}
		case tokCDATA:
			s, next, err := p.utf16String(pos+1, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
			if err := add(&node{kind: nodeText, text: s}); err != nil {
				return nil, 0, err
			}
		case tokCharRef:
			if pos+3 > end {
				return nil, 0, errShort
			}
			r := rune(binary.LittleEndian.Uint16(d[pos+1:]))
			pos += 3
			if err := add(&node{kind: nodeText, text: string(r)}); err != nil {
				return nil, 0, err
			}
		case tokEntityRef:
			name, next, err := p.name(pos+1, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
			if err := add(&node{kind: nodeText, text: entity(name)}); err != nil {
				return nil, 0, err
			}
		case tokPITarget:
			_, next, err := p.name(pos+1, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
		case tokPIData:
			_, next, err := p.utf16String(pos+1, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
		case tokTemplate:
			inst, next, err := p.instance(pos, end)
			if err != nil {
				return nil, 0, err
			}
			pos = next
			if err := add(&node{kind: nodeInstance, inst: inst}); err != nil {
				return nil, 0, err
			}
		case tokSubst, tokOptSubst:
			if pos+4 > end {
				return nil, 0, errShort
			}
			n := &node{kind: nodeSubst, sub: binary.LittleEndian.Uint16(d[pos+1:]), optional: tok == tokOptSubst}
			pos += 4
			if err := add(n); err != nil {
				return nil, 0, err
			}
		default:
			return nil, 0, fmt.Errorf("unknown binary XML token 0x%02x at chunk offset %d", tok, pos)
		}
	}
	if pos > end {
		return nil, 0, errShort
	}
	return root, pos, nil
}

// name reads a name reference at pos: a chunk offset, and the name itself
// when it is stored right there.
func (p *parser) name(pos, end int) (string, int, error) {
	d := p.c.data
	if pos+4 > end {
		return "", 0, errShort
	}
	off := binary.LittleEndian.Uint32(d[pos:])
	pos += 4
	s, n, err := p.c.name(off)
	if err != nil {
		return "", 0, err
	}
	if int(off) == pos {
		pos += n
	}
	return s, pos, nil
}

// name reads the name stored at off in the chunk, and its size there.
func (c *chunk) name(off uint32) (string, int, error) {
	if int(off)+8 > len(c.data) || off < chunkHeaderSize/4 {
		return "", 0, fmt.Errorf("name offset %d out of the chunk", off)
	}
	count := int(binary.LittleEndian.Uint16(c.data[off+6:]))
	size := 8 + 2*count + 2
	if int(off)+size > len(c.data) {
		return "", 0, fmt.Errorf("name at %d runs past the chunk", off)
	}
	if s, ok := c.names[off]; ok {
		return s, size, nil
	}
	s := decodeUTF16(c.data[int(off)+8 : int(off)+8+2*count])
	c.names[off] = s
	return s, size, nil
}

// utf16String reads a character count and that many UTF-16 characters.
func (p *parser) utf16String(pos, end int) (string, int, error) {
	if pos+2 > end {
		return "", 0, errShort
	}
	n := int(binary.LittleEndian.Uint16(p.c.data[pos:]))
	pos += 2
	if pos+2*n > end {
		return "", 0, errShort
	}
	return decodeUTF16(p.c.data[pos : pos+2*n]), pos + 2*n, nil
}

// instance reads a template instance token at pos: the template (its
// definition inline or elsewhere in the chunk) and its values.
func (p *parser) instance(pos, end int) (*instance, int, error) {
	d := p.c.data
	le := binary.LittleEndian
	if pos+10 > end {
		return nil, 0, errShort
	}
	defOff := int(le.Uint32(d[pos+6:]))
	pos += 10
	tmpl, err := p.template(defOff)
	if err != nil {
		return nil, 0, err
	}
	if defOff == pos {
		// Stored inline: skip the definition.
		size := int(le.Uint32(d[pos+20:]))
		pos += 24 + size
	}
	if pos+4 > end {
		return nil, 0, errShort
	}
	count := int(le.Uint32(d[pos:]))
	pos += 4
	if count > (end-pos)/4 {
		return nil, 0, fmt.Errorf("template instance: %d values do not fit", count)
	}
	values := p.newValues(count)
	dataPos := pos + 4*count
	for i := range values {
		size := int(le.Uint16(d[pos+4*i:]))
		typ := d[pos+4*i+2]
		if dataPos+size > end {
			return nil, 0, fmt.Errorf("template instance: value %d runs past the record", i)
		}
		values[i] = value{typ: typ, data: d[dataPos : dataPos+size], pos: dataPos}
		dataPos += size
	}
	return &instance{tmpl: tmpl, values: values}, dataPos, nil
}

// template returns the template defined at off in the chunk, parsing it on
// first use.
func (p *parser) template(off int) (*template, error) {
	c := p.c
	if t, ok := c.templates[uint32(off)]; ok {
		if t == nil {
			return nil, fmt.Errorf("template at %d refers to itself", off)
		}
		return t, nil
	}
	if off < chunkHeaderSize || off+24 > len(c.data) {
		return nil, fmt.Errorf("template offset %d out of the chunk", off)
	}
	size := int(binary.LittleEndian.Uint32(c.data[off+20:]))
	start := off + 24
	if size > len(c.data)-start {
		return nil, fmt.Errorf("template at %d runs past the chunk", off)
	}
	c.templates[uint32(off)] = nil // a definition that uses itself fails
	nodes, _, err := p.fragment(start, start+size, false)
	if err != nil {
		delete(c.templates, uint32(off))
		return nil, fmt.Errorf("template at %d: %w", off, err)
	}
	t := &template{root: nodes}
	c.templates[uint32(off)] = t
	return t, nil
}

func entity(name string) string {
	switch name {
	case "lt":
		return "<"
	case "gt":
		return ">"
	case "amp":
		return "&"
	case "quot":
		return `"`
	case "apos":
		return "'"
	}
	return "&" + name + ";"
}

func decodeUTF16(b []byte) string {
	n := len(b) / 2
	for n > 0 && b[2*n-2] == 0 && b[2*n-1] == 0 {
		n--
	}
	b = b[:2*n]
	// Plain ASCII, the usual case, straight into the string.
	ascii := true
	for i := 0; i < len(b); i += 2 {
		if b[i+1] != 0 || b[i] >= 0x80 || b[i] == 0 {
			ascii = false
			break
		}
	}
	if ascii {
		var sb strings.Builder
		sb.Grow(n)
		for i := 0; i < n; i++ {
			sb.WriteByte(b[2*i])
		}
		return sb.String()
	}
	u := make([]uint16, n)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return strings.ReplaceAll(string(utf16.Decode(u)), "\x00", "")
}
