package detect

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// ThreatIntel turns every threat-intelligence match that enrichment found
// on an event (Event.Intel) into a threat_intel observation, high, one per
// indicator node and burst (default 1 h between matches). The matched
// node is the key; the event's addresses and host are context.
type ThreatIntel struct {
	Span time.Duration
}

// NameThreatIntel is the detector's name.
const NameThreatIntel = "threat_intel"

func (d ThreatIntel) Name() string { return NameThreatIntel }

func (d ThreatIntel) Window() Window {
	return Window{Span: orDur(d.Span, time.Hour), MinCount: 1}
}

func (d ThreatIntel) Signals(ev *Event) []vigil.Signal {
	if len(ev.Intel) == 0 {
		return nil
	}
	// One signal per matched node and event, naming every feed that
	// matched it: the store keeps one signal per (key, artifact).
	type match struct {
		ref   vigil.NodeRef
		feeds []string
	}
	var order []string
	matches := map[string]*match{}
	for _, h := range ev.Intel {
		ref, ok := intelNode(h)
		if !ok {
			continue
		}
		key := ref.Type + ":" + ref.Value
		m := matches[key]
		if m == nil {
			m = &match{ref: ref}
			matches[key] = m
			order = append(order, key)
		}
		feed := h.Feed
		if feed == "" {
			feed = "intel"
		}
		if h.Indicator != "" && h.Indicator != ref.Value {
			feed += " (" + h.Indicator + ")"
		}
		m.feeds = append(m.feeds, feed)
	}
	f := ev.Fields
	var out []vigil.Signal
	for _, key := range order {
		m := matches[key]
		sort.Strings(m.feeds)
		m.feeds = slices.Compact(m.feeds)
		var ctx []vigil.NodeRef
		for _, fld := range []string{"source.ip", "destination.ip"} {
			if ip, ok := validIP(str(f, fld)); ok && !(m.ref.Type == vigil.NodeIP && ip == m.ref.Value) {
				ctx = append(ctx, node(vigil.NodeIP, ip, false)...)
			}
		}
		out = append(out, vigil.Signal{Key: key,
			Member: strings.Join(m.feeds, ", "),
			Nodes:  nodes([]vigil.NodeRef{m.ref}, ctx, node(vigil.NodeHost, str(f, "host.name"), false)),
		})
	}
	return out
}

// intelNode returns the key node a hit names, normalized as the parsers
// normalize node values, or false for a hit of an unknown node type.
func intelNode(h vigil.IntelHit) (vigil.NodeRef, bool) {
	typ := h.NodeType
	for _, t := range []string{vigil.NodeIP, vigil.NodeDomain, vigil.NodeHost, vigil.NodeUser, vigil.NodeHash, vigil.NodeURL} {
		if strings.EqualFold(typ, t) {
			typ = t
		}
	}
	if !vigil.ValidNodeType(typ) {
		return vigil.NodeRef{}, false
	}
	v := strings.TrimSpace(h.NodeValue)
	switch typ {
	case vigil.NodeIP:
		ip, ok := validIP(v)
		if !ok {
			return vigil.NodeRef{}, false
		}
		v = ip
	case vigil.NodeHash:
		v = strings.ToLower(v)
	}
	refs := node(typ, v, true)
	if len(refs) == 0 {
		return vigil.NodeRef{}, false
	}
	return refs[0], true
}

func (d ThreatIntel) Describe(key string, w vigil.WindowState) vigil.Finding {
	typ, value, _ := strings.Cut(key, ":")
	feeds := splitMembers(w.Members)
	title := "Threat intel match: " + typ + " " + value
	if len(feeds) > 0 {
		title += " on " + feeds[0]
	}
	desc := fmt.Sprintf("Threat intel: %s %s matched %s in %s", typ, value, plural(len(feeds), "feed"), plural(w.Count, "event"))
	if len(feeds) > 0 {
		desc = fmt.Sprintf("Threat intel: %s %s matched %s (%s) in %s", typ, value, plural(len(feeds), "feed"),
			strings.Join(feeds, ", "), plural(w.Count, "event"))
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "threat_intel", Severity: vigil.SeverityHigh, Title: title, Description: desc, Specificity: vigil.SpecificityIndicator,
		Rollup: "Threat intelligence match"}
}

// splitMembers returns the distinct feeds named by members ("a, b").
func splitMembers(members []string) []string {
	var out []string
	for _, m := range members {
		out = append(out, strings.Split(m, ", ")...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}
