package evtx

import (
	"errors"
	"fmt"
	"strings"
)

// maxText bounds the text one record may expand to: templates and
// substitutions could otherwise multiply a 64 KiB chunk many times over.
const maxText = 4 << 20

// instantiate turns parsed nodes into elements, substituting values; the
// result may hold text-only pseudo elements (Name "") at the top.
func (p *parser) instantiate(nodes []*node, values []value, nested int) ([]*Element, error) {
	var out []*Element
	for _, n := range nodes {
		switch n.kind {
		case nodeElement:
			el, keep, err := p.element(n, values, nested)
			if err != nil {
				return nil, err
			}
			if keep {
				out = append(out, el)
			}
		case nodeText:
			out = append(out, &Element{Text: n.text})
		case nodeSubst:
			els, err := p.substitute(n, values, nested)
			if err != nil {
				return nil, err
			}
			out = append(out, els...)
		case nodeInstance:
			els, err := p.instantiate(n.inst.tmpl.root, n.inst.values, nested)
			if err != nil {
				return nil, err
			}
			out = append(out, els...)
		}
	}
	return out, nil
}

// element instantiates one element. keep is false for an element whose
// only content is an optional substitution with no value: such an element
// is left out, as Windows does.
func (p *parser) element(n *node, values []value, nested int) (*Element, bool, error) {
	el := &Element{Name: n.name}
	for _, a := range n.attrs {
		var sb strings.Builder
		present := len(a.parts) == 0
		for _, part := range a.parts {
			switch part.kind {
			case nodeText:
				sb.WriteString(part.text)
				present = true
			case nodeSubst:
				v, ok := lookup(values, part.sub)
				if !ok || v.typ == typeNull {
					continue
				}
				s, err := v.String()
				if err != nil {
					return nil, false, fmt.Errorf("attribute %s: %w", a.name, err)
				}
				sb.WriteString(s)
				present = true
			}
		}
		if present {
			el.Attrs = append(el.Attrs, Attr{Name: a.name, Value: sb.String()})
		}
	}
	if len(n.children) == 1 && n.children[0].kind == nodeSubst && n.children[0].optional {
		if v, ok := lookup(values, n.children[0].sub); !ok || v.typ == typeNull {
			return el, false, nil
		}
	}
	kids, err := p.instantiate(n.children, values, nested)
	if err != nil {
		return nil, false, err
	}
	var text strings.Builder
	for _, k := range kids {
		if k.Name == "" {
			text.WriteString(k.Text)
			continue
		}
		el.Children = append(el.Children, k)
	}
	el.Text = text.String()
	p.nodes += len(el.Text) / 64
	if len(el.Text) > maxText || p.nodes > maxNodes*4 {
		return nil, false, errors.New("record expands beyond the size limit")
	}
	return el, true, nil
}

// substitute gives the elements or text a substitution stands for.
func (p *parser) substitute(n *node, values []value, nested int) ([]*Element, error) {
	v, ok := lookup(values, n.sub)
	if !ok || v.typ == typeNull {
		return nil, nil
	}
	if v.typ == typeBinXML {
		if nested >= maxBinXMLNested {
			return nil, errors.New("binary XML values nested too deep")
		}
		nodes, _, err := p.fragment(v.pos, v.pos+len(v.data), true)
		if err != nil {
			return nil, fmt.Errorf("binary XML value %d: %w", n.sub, err)
		}
		return p.instantiate(nodes, nil, nested+1)
	}
	s, err := v.String()
	if err != nil {
		return nil, fmt.Errorf("value %d: %w", n.sub, err)
	}
	return []*Element{{Text: s}}, nil
}

func lookup(values []value, i uint16) (value, bool) {
	if int(i) >= len(values) {
		return value{}, false
	}
	return values[i], true
}
