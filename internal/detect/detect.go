// Package detect turns parsed events into detections: one file per
// detector. A detector maps an event to signals keyed by the entity it
// tracks (an attacking address, an account); the store evaluates each
// (detector, key) window atomically (vigil.Detection), so detections stay
// correct with several workers and after a redelivery.
package detect

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// Event is one parsed artifact as detectors see it.
type Event struct {
	ArtifactID string
	Source     string
	At         time.Time
	Fields     parse.Event
	// Intel lists threat-intelligence matches found by enrichment.
	Intel []IntelHit
}

// IntelHit is one match of a node value against a threat-intel feed.
type IntelHit struct {
	Feed      string
	Indicator string
	NodeType  string
	Value     string
}

// Window says when a detector's signals make a finding.
type Window struct {
	Span        time.Duration
	MinCount    int
	MinDistinct int
	Requires    string
}

// Keyed is a signal with the key it is counted under.
type Keyed struct {
	Key    string
	Signal vigil.Signal
}

// Detector is one detection.
type Detector interface {
	// Name identifies the detector in the store's state; never change it.
	Name() string
	Window() Window
	// Signals returns what ev contributes, usually nothing.
	Signals(ev *Event) []Keyed
	// Describe builds the observation of a window that fired or grew.
	Describe(key string, w vigil.WindowState) vigil.Finding
}

// Engine runs a set of detectors over batches of events.
type Engine struct {
	detectors []Detector
}

// NewEngine returns an Engine over detectors.
func NewEngine(detectors ...Detector) *Engine { return &Engine{detectors: detectors} }

// Detectors returns the engine's detectors.
func (e *Engine) Detectors() []Detector { return e.detectors }

// Detections groups the signals of evs by (detector, key), in a stable
// order, ready for vigil.Store.Detect.
func (e *Engine) Detections(evs []*Event) []*vigil.Detection {
	type gk struct{ det, key string }
	groups := map[gk]*vigil.Detection{}
	var order []gk
	for _, d := range e.detectors {
		w := d.Window()
		for _, ev := range evs {
			for _, k := range d.Signals(ev) {
				g := gk{d.Name(), k.Key}
				det := groups[g]
				if det == nil {
					det = &vigil.Detection{Detector: d.Name(), Key: k.Key, Span: w.Span, MinCount: w.MinCount,
						MinDistinct: w.MinDistinct, Requires: w.Requires, Describe: d.Describe}
					groups[g] = det
					order = append(order, g)
				}
				sg := k.Signal
				if sg.ArtifactID == "" {
					sg.ArtifactID = ev.ArtifactID
				}
				if sg.At.IsZero() {
					sg.At = ev.At
				}
				det.Signals = append(det.Signals, sg)
			}
		}
	}
	// Requirements first: a success after a brute force in the same batch
	// must see the brute force fired.
	sort.SliceStable(order, func(i, j int) bool {
		return groups[order[i]].Requires == "" && groups[order[j]].Requires != ""
	})
	out := make([]*vigil.Detection, len(order))
	for i, g := range order {
		out[i] = groups[g]
	}
	return out
}

// str returns the string field k of ev, or "".
func str(ev parse.Event, k string) string {
	s, _ := ev[k].(string)
	return s
}

// num returns the integer field k of ev.
func num(ev parse.Event, k string) (int64, bool) {
	switch v := ev[k].(type) {
	case int64:
		return v, true
	case float64:
		return int64(v), true
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// validIP returns s in canonical form if it is an IP address.
func validIP(s string) (string, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", false
	}
	return a.Unmap().WithZone("").String(), true
}

// node builds a NodeRef, dropping empty values.
func node(typ, value string, key bool) []vigil.NodeRef {
	value = strings.TrimSpace(value)
	if value == "" || value == "-" {
		return nil
	}
	if typ == vigil.NodeHost || typ == vigil.NodeDomain {
		value = strings.ToLower(strings.TrimSuffix(value, "."))
	}
	return []vigil.NodeRef{{Type: typ, Value: value, Key: key}}
}

// nodes concatenates node lists.
func nodes(lists ...[]vigil.NodeRef) []vigil.NodeRef {
	var out []vigil.NodeRef
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// plural formats n with a noun, "1 login" / "5 logins".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// span formats a window's first and last times.
func span(w vigil.WindowState) string {
	return w.First.UTC().Format(time.RFC3339) + " – " + w.Last.UTC().Format(time.RFC3339)
}

// firstNode returns the value of the first node of type typ in w.
func firstNode(w vigil.WindowState, typ string) string {
	for _, n := range w.Nodes {
		if n.Type == typ {
			return n.Value
		}
	}
	return ""
}

// list joins members for a description, noting when there are more.
func list(members []string, distinct int) string {
	s := strings.Join(members, ", ")
	if distinct > len(members) {
		s += ", …"
	}
	return s
}
