package enrich

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// mispBool reads MISP's booleans, which older exports write as "0"/"1".
type mispBool struct{ set, v bool }

func (b *mispBool) UnmarshalJSON(data []byte) error {
	b.set = true
	switch strings.Trim(string(data), `"`) {
	case "true", "1":
		b.v = true
	case "false", "0", "null", "":
		b.v = false
	default:
		b.set = false
	}
	return nil
}

type mispAttribute struct {
	Type    string   `json:"type"`
	Value   string   `json:"value"`
	ToIDS   mispBool `json:"to_ids"`
	Deleted mispBool `json:"deleted"`
}

type mispEvent struct {
	Attribute []mispAttribute `json:"Attribute"`
	Object    []struct {
		Attribute []mispAttribute `json:"Attribute"`
		Deleted   mispBool        `json:"deleted"`
	} `json:"Object"`
}

type mispWrapper struct {
	Event *mispEvent `json:"Event"`
}

// parseMISP parses MISP event JSON: {"Event": …} as exported or served by
// a MISP feed, a list of those, a REST search answer {"response": [...]}
// or an attribute search answer {"response": {"Attribute": [...]}}. The
// attributes of the event and of its objects are read; attributes marked
// to_ids false (context, not for detection) or deleted are skipped.
// errNotFormat means the JSON is not MISP.
func parseMISP(data []byte) (inds []Indicator, skipped int, err error) {
	var events []*mispEvent
	var attrs []mispAttribute
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []mispWrapper
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, 0, mispErr(err)
		}
		for _, w := range list {
			if w.Event != nil {
				events = append(events, w.Event)
			}
		}
		if len(events) == 0 {
			return nil, 0, errNotFormat
		}
	} else {
		var doc struct {
			Event     *mispEvent      `json:"Event"`
			Attribute []mispAttribute `json:"Attribute"`
			Response  json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(trimmed, &doc); err != nil {
			return nil, 0, mispErr(err)
		}
		switch {
		case doc.Event != nil:
			events = append(events, doc.Event)
		case doc.Attribute != nil:
			attrs = doc.Attribute
		case len(doc.Response) > 0:
			var list []mispWrapper
			var one struct {
				Attribute []mispAttribute `json:"Attribute"`
			}
			if json.Unmarshal(doc.Response, &list) == nil {
				for _, w := range list {
					if w.Event != nil {
						events = append(events, w.Event)
					}
				}
			} else if json.Unmarshal(doc.Response, &one) == nil {
				attrs = one.Attribute
			} else {
				return nil, 0, errNotFormat
			}
		default:
			return nil, 0, errNotFormat
		}
	}
	for _, ev := range events {
		attrs = append(attrs, ev.Attribute...)
		for _, o := range ev.Object {
			if o.Deleted.v {
				continue
			}
			attrs = append(attrs, o.Attribute...)
		}
	}
	for _, a := range attrs {
		if a.Deleted.v || (a.ToIDS.set && !a.ToIDS.v) {
			skipped++
			continue
		}
		got, known := mispIndicators(a.Type, a.Value)
		if !known {
			continue // a type that is not an indicator we match (filename, email, …)
		}
		if len(got) == 0 {
			skipped++
		}
		inds = append(inds, got...)
	}
	return inds, skipped, nil
}

func mispErr(err error) error {
	if _, ok := err.(*json.UnmarshalTypeError); ok {
		return errNotFormat
	}
	return fmt.Errorf("misp: %w", err)
}

// mispIndicators maps one attribute to indicators; known is false for
// attribute types that are not matched at all.
func mispIndicators(typ, value string) (out []Indicator, known bool) {
	add := func(h hint, v string) {
		if ind, ok := normIndicator(h, v); ok {
			out = append(out, ind)
		}
	}
	first, second, composite := strings.Cut(value, "|")
	switch typ {
	case "ip-src", "ip-dst":
		add(hintIP, value)
	case "ip-src|port", "ip-dst|port":
		add(hintIP, first)
	case "domain", "hostname":
		add(hintDomain, value)
	case "hostname|port":
		add(hintDomain, first)
	case "domain|ip":
		add(hintDomain, first)
		if composite {
			add(hintIP, second)
		}
	case "url":
		add(hintURL, value)
	case "md5", "sha1", "sha256", "sha512", "ja3-fingerprint-md5":
		add(hintHash, value)
	case "filename|md5", "filename|sha1", "filename|sha256", "filename|sha512":
		if composite {
			add(hintHash, second)
		}
	default:
		// Not matched: "link" is a reference to a report, and filenames,
		// e-mail addresses and the like name no node.
		return nil, false
	}
	return out, true
}
