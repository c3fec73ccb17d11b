package evtx

import (
	"errors"
	"fmt"
)

// maxText bounds the text one record may expand to: templates and
// substitutions could otherwise multiply a 64 KiB chunk many times over.
const maxText = 4 << 20

// fill instantiates nodes into el: elements become its children, text and
// values its text. Templates are expanded with their values, binary XML
// values parsed and expanded in place.
func (p *parser) fill(el *Element, nodes []*node, values []value, nested int) error {
	for _, n := range nodes {
		switch n.kind {
		case nodeElement:
			child, keep, err := p.element(n, values, nested)
			if err != nil {
				return err
			}
			if keep {
				el.Children = append(el.Children, child)
			}
		case nodeText:
			p.addText(el, n.text)
		case nodeSubst:
			if err := p.substitute(el, n, values, nested); err != nil {
				return err
			}
		case nodeInstance:
			if err := p.fill(el, n.inst.tmpl.root, n.inst.values, nested); err != nil {
				return err
			}
		}
		if p.text > maxText || p.nodes > maxNodes*4 {
			return errors.New("record expands beyond the size limit")
		}
	}
	return nil
}

func (p *parser) addText(el *Element, s string) {
	p.text += len(s)
	if el.Text == "" {
		el.Text = s
		return
	}
	el.Text += s
}

// element instantiates one element. keep is false for an element whose
// only content is an optional substitution with no value: such an element
// is left out, as Windows does.
func (p *parser) element(n *node, values []value, nested int) (*Element, bool, error) {
	p.nodes++
	if len(n.children) == 1 && n.children[0].kind == nodeSubst && n.children[0].optional {
		if v, ok := lookup(values, n.children[0].sub); !ok || v.typ == typeNull {
			return nil, false, nil
		}
	}
	el := p.newElement(n.name)
	if len(n.attrs) > 0 {
		el.Attrs = p.newAttrs(len(n.attrs))
	}
	for _, a := range n.attrs {
		val, present := "", len(a.parts) == 0
		for _, part := range a.parts {
			s := part.text
			if part.kind == nodeSubst {
				v, ok := lookup(values, part.sub)
				if !ok || v.typ == typeNull {
					continue
				}
				var err error
				if s, err = v.String(); err != nil {
					return nil, false, fmt.Errorf("attribute %s: %w", a.name, err)
				}
			}
			present = true
			p.text += len(s)
			val += s
		}
		if present {
			el.Attrs = append(el.Attrs, Attr{Name: a.name, Value: val})
		}
	}
	kids := 0
	for _, c := range n.children {
		if c.kind == nodeElement {
			kids++
		}
	}
	if kids > 0 {
		el.Children = p.newChildren(kids)
	}
	if err := p.fill(el, n.children, values, nested); err != nil {
		return nil, false, err
	}
	return el, true, nil
}

// substitute adds to el what a substitution stands for: text, or the
// elements of a binary XML value.
func (p *parser) substitute(el *Element, n *node, values []value, nested int) error {
	v, ok := lookup(values, n.sub)
	if !ok || v.typ == typeNull {
		return nil
	}
	if v.typ == typeBinXML {
		if nested >= maxBinXMLNested {
			return errors.New("binary XML values nested too deep")
		}
		nodes, _, err := p.fragment(v.pos, v.pos+len(v.data), true)
		if err != nil {
			return fmt.Errorf("binary XML value %d: %w", n.sub, err)
		}
		return p.fill(el, nodes, nil, nested+1)
	}
	s, err := v.String()
	if err != nil {
		return fmt.Errorf("value %d: %w", n.sub, err)
	}
	p.addText(el, s)
	return nil
}

func lookup(values []value, i uint16) (value, bool) {
	if int(i) >= len(values) {
		return value{}, false
	}
	return values[i], true
}

// newElement takes an element from a slab: a record has tens of them, and
// one allocation per slab instead of per element halves the reader's time.
func (p *parser) newElement(name string) *Element {
	if len(p.elements) == cap(p.elements) {
		p.elements = make([]Element, 0, 64)
	}
	p.elements = append(p.elements, Element{Name: name})
	return &p.elements[len(p.elements)-1]
}

// newChildren takes room for n child elements from a slab.
func (p *parser) newChildren(n int) []*Element {
	if cap(p.children)-len(p.children) < n {
		p.children = make([]*Element, 0, max(128, n))
	}
	start := len(p.children)
	p.children = p.children[:start+n]
	return p.children[start : start : start+n]
}

// newAttrs takes room for n attributes from a slab.
func (p *parser) newAttrs(n int) []Attr {
	if cap(p.attrs)-len(p.attrs) < n {
		p.attrs = make([]Attr, 0, max(64, n))
	}
	start := len(p.attrs)
	p.attrs = p.attrs[:start+n]
	return p.attrs[start : start : start+n]
}
