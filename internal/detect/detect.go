// Package detect turns parsed events into detections: one file per
// detector. A detector maps an event to signals keyed by the entity it
// tracks (an attacking address, an account); the correlation engine
// (internal/correlate) evaluates each (detector, key) window atomically
// (vigil.Detection), so detections stay correct with several workers and
// after a redelivery.
package detect

import (
	"net/netip"
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
	// Raw is the artifact's line, which Sigma keywords search.
	Raw string
	// RawGrams sketch Raw's bytes and byte pairs (internal/sigma.Grams),
	// once RawGramsSet: the Sigma rules of a batch read the line once for
	// all of them.
	RawGrams    [8]uint64
	RawGramsSet bool
	// Intel lists threat-intelligence matches found by enrichment.
	Intel []vigil.IntelHit
	// Scratch is what the scoped detectors of one scope share while
	// they read the event (a Sigma rule set's fields, each read once for
	// all its rules): set by the first that needs it, and kept by the
	// engine from one event to the next, Reset between (see Scoped).
	Scratch Scratch
}

// Scratch is state the scoped detectors keep about the event they read
// (Event.Scratch); Reset makes it ready for another event.
type Scratch interface{ Reset() }

// Window says when a detector's signals make a finding (see
// vigil.Detection).
type Window struct {
	Span        time.Duration
	MinCount    int
	MinDistinct int
	OrDistinct  int
	// Order: the members must also appear in this order
	// (vigil.Detection.Order).
	Order    []string
	Requires string
}

// met reports whether a window of count and distinct members fires.
func (w Window) met(count, distinct int) bool {
	return vigil.ThresholdMet(w.MinCount, w.MinDistinct, w.OrDistinct, count, distinct)
}

// Detector is one detection.
type Detector interface {
	// Name identifies the detector in the store's state; never change it.
	Name() string
	Window() Window
	// Signals returns what ev contributes, usually nothing: signals with
	// the key each is counted under (ArtifactID and At default to ev's).
	Signals(ev *Event) []vigil.Signal
	// Describe builds the observation of a window that fired or grew.
	Describe(key string, w vigil.WindowState) vigil.Finding
}

// ContextDescriber is a Detector whose findings depend on what its
// events said and the window does not hold: a Suricata alert's severity
// and category. A detection is described with the Context of its newest
// signal that has one.
type ContextDescriber interface {
	// Context returns what the description needs of ev beyond the
	// window (an alert's signature and category), or nil.
	Context(ev *Event) any
	DescribeContext(key string, ctx any, w vigil.WindowState) vigil.Finding
}

// Scoped is a Detector that reads only some events (a Sigma rule's log
// source): an event is judged once per scope for all the detectors that
// share it, and each reads only its scope's events. The batch is read
// one event at a time, by every scope and detector that reads it, so that
// what they share about an event (Event.Scratch) is read once.
type Scoped interface {
	// Scope names the events the detector reads; detectors of the same
	// name read the same events.
	Scope() string
	// InScope reports whether the detector reads ev.
	InScope(ev *Event) bool
	// ScopedSignals is Signals for an event InScope admitted.
	ScopedSignals(ev *Event) []vigil.Signal
}

// Grouped is a Scoped detector that its Group reads events for, with the
// other detectors of the group: once per event for all of them, so that
// those that cannot match it are passed over without being called.
type Grouped interface {
	Scoped
	// Group returns the detector's group and its number in it.
	Group() (Group, int)
}

// Group reads an event for its detectors, all of one scope.
type Group interface {
	// GroupSignals calls emit with the number and signals of every
	// detector of the group that draws signals from ev, an event
	// InScope admitted: what each one's ScopedSignals returns when not
	// empty. It shares ev.Scratch with the scope's other detectors.
	GroupSignals(ev *Event, emit func(member int, sigs []vigil.Signal))
}

// Screen decides, signal by signal, which signals count in one org:
// its suppressions, and the kinds of signal it promotes or not. A signal
// screened out feeds no burst and opens no observation; its artifact is
// stored all the same.
type Screen interface {
	// Admit reports whether the signal sg that detector drew from ev
	// counts.
	Admit(detector string, ev *Event, sg *vigil.Signal) bool
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
// order, ready for correlate.Engine.Detect, which evaluates a detection at
// its newest signal, so each key's signals are split, oldest first, into
// chunks that lie inside that window (see split): a batch that replays
// hours of logs still fires every burst in it, once, at the signal that
// crossed the threshold.
func (e *Engine) Detections(evs []*Event) []*vigil.Detection { return e.Screened(evs, nil) }

// Screened is Detections over the signals that screen admits (all of
// them when screen is nil), each judged before it is grouped.
func (e *Engine) Screened(evs []*Event, screen Screen) []*vigil.Detection {
	var out, late []*vigil.Detection
	var g grouper
	scoped := e.scopedSignals(evs)
	for i, d := range e.detectors {
		w := d.Window()
		cd, _ := d.(ContextDescriber)
		// A scoped detector's signals are read already: go through the
		// events that gave some.
		hits, isScoped := scoped[i]
		n := len(evs)
		if isScoped {
			n = len(hits)
		}
		g.reset()
		for j := 0; j < n; j++ {
			var ev *Event
			var sigs []vigil.Signal
			if isScoped {
				ev, sigs = hits[j].ev, hits[j].sigs
			} else {
				ev = evs[j]
				sigs = d.Signals(ev)
			}
			var ctx any
			if cd != nil && len(sigs) > 0 {
				ctx = cd.Context(ev)
			}
			for _, sg := range sigs {
				if sg.ArtifactID == "" {
					sg.ArtifactID = ev.ArtifactID
				}
				if sg.At.IsZero() {
					sg.At = ev.At
				}
				if screen != nil && !screen.Admit(d.Name(), ev, &sg) {
					continue
				}
				g.add(sg, ctx)
			}
		}
		g.group(func(key string, sigs []vigil.Signal, ctxs []any) {
			for _, chunk := range split(sigs, w) {
				det := &vigil.Detection{Detector: d.Name(), Key: key, Span: w.Span, MinCount: w.MinCount,
					MinDistinct: w.MinDistinct, OrDistinct: w.OrDistinct, Order: w.Order, Requires: w.Requires, Signals: chunk, Describe: d.Describe}
				var ctx any
				for _, c := range ctxs[:len(chunk)] {
					if c != nil {
						ctx = c
					}
				}
				ctxs = ctxs[len(chunk):]
				if cd != nil && ctx != nil {
					det.Describe = func(key string, w vigil.WindowState) vigil.Finding { return cd.DescribeContext(key, ctx, w) }
				}
				// Requirements last: a success after a brute force in
				// the same batch must see the brute force fired.
				if w.Requires != "" {
					late = append(late, det)
				} else {
					out = append(out, det)
				}
			}
		})
	}
	return append(out, late...)
}

// scopedHit is an event a scoped detector drew signals from.
type scopedHit struct {
	ev   *Event
	sigs []vigil.Signal
}

// scopedSignals reads evs with the scoped detectors event by event: for
// each event, each scope's first detector says whether the event is of
// the scope, and every detector of a scope that has it reads it in turn —
// the Grouped ones through their Group, once for all of its members —
// with one Scratch for all of them (Reset between events). It returns, by
// detector index, the events that gave signals, in order.
func (e *Engine) scopedSignals(evs []*Event) map[int][]scopedHit {
	// group is a Group of a scope, with the detector index of each of
	// its members this engine holds (-1: none).
	type group struct {
		g   Group
		det []int
	}
	type scope struct {
		first  Scoped
		dets   []int // those read one by one
		groups []*group
		all    []int
	}
	var scopes []*scope
	var byKey map[string]*scope
	groups := map[Group]*group{}
	for i, d := range e.detectors {
		sd, ok := d.(Scoped)
		if !ok {
			continue
		}
		if byKey == nil {
			byKey = map[string]*scope{}
		}
		k := sd.Scope()
		sc := byKey[k]
		if sc == nil {
			sc = &scope{first: sd}
			byKey[k] = sc
			scopes = append(scopes, sc)
		}
		sc.all = append(sc.all, i)
		gd, ok := d.(Grouped)
		if !ok {
			sc.dets = append(sc.dets, i)
			continue
		}
		g, m := gd.Group()
		gr := groups[g]
		if gr == nil {
			gr = &group{g: g}
			groups[g] = gr
			sc.groups = append(sc.groups, gr)
		}
		for len(gr.det) <= m {
			gr.det = append(gr.det, -1)
		}
		gr.det[m] = i
	}
	if scopes == nil {
		return nil
	}
	out := make(map[int][]scopedHit, len(e.detectors))
	for _, sc := range scopes {
		for _, i := range sc.all {
			out[i] = []scopedHit{}
		}
	}
	var scratch Scratch
	var ev *Event
	var gr *group
	emit := func(m int, sigs []vigil.Signal) {
		if m < len(gr.det) && gr.det[m] >= 0 {
			out[gr.det[m]] = append(out[gr.det[m]], scopedHit{ev, sigs})
		}
	}
	for _, ev = range evs {
		if scratch != nil {
			scratch.Reset()
		}
		ev.Scratch = scratch
		for _, sc := range scopes {
			if !sc.first.InScope(ev) {
				continue
			}
			for _, i := range sc.dets {
				if sigs := e.detectors[i].(Scoped).ScopedSignals(ev); len(sigs) > 0 {
					out[i] = append(out[i], scopedHit{ev, sigs})
				}
			}
			for _, gr = range sc.groups {
				gr.g.GroupSignals(ev, emit)
			}
		}
		scratch, ev.Scratch = ev.Scratch, nil
	}
	return out
}

// split cuts one key's signals, sorted oldest first, into the chunks the
// store evaluates one after the other. A chunk ends
//   - before a signal more than Span after the previous chunk's newest
//     signal (or, when the chunk starts a new burst, after its own first
//     signal), so that every chunk lies inside the window of its newest
//     signal and a burst fired by one chunk is still active for the next;
//   - at the signal where the batch's own signals first meet the window's
//     thresholds, so that the store fires there, on the right window.
func split(sigs []vigil.Signal, w Window) [][]vigil.Signal {
	switch len(sigs) {
	case 0:
		return nil
	case 1: // what the loop below gives one signal, without its maps
		return [][]vigil.Signal{sigs}
	}
	var out [][]vigil.Signal
	start := 0
	var bound, prevNewest time.Time
	fired := false // the batch has met the thresholds in the current burst
	// The sliding window of the batch's signals ending at the current
	// one: its weights and members.
	lo, count := 0, 0
	members := map[string]int{}
	// weight is a signal's weight, a unit counting at its first signal
	// in the batch only (the store discounts units recorded before).
	weights := make([]int, len(sigs))
	units := map[string]bool{}
	chain := vigil.NewOrderChain(w.Order)
	for i, s := range sigs {
		weights[i] = s.Weight()
		if s.Unit != "" && weights[i] > 0 {
			if units[s.Unit] {
				weights[i] = 0
			}
			units[s.Unit] = true
		}
	}
	for i, s := range sigs {
		if i > 0 && s.At.Sub(sigs[i-1].At) > w.Span {
			fired = false // a gap: the next burst must cross again
		}
		if i > start && s.At.After(bound) {
			out = append(out, sigs[start:i])
			prevNewest, start = sigs[i-1].At, i
		}
		if i == start {
			// bound is the newest time the chunk may hold: the store's
			// window ending at it must still hold the chunk's first
			// signal, and a burst fired by the previous chunk must
			// still be active (last signal at most Span old).
			if !prevNewest.IsZero() && s.At.Sub(prevNewest) <= w.Span {
				bound = prevNewest.Add(w.Span)
			} else {
				bound = s.At.Add(w.Span)
			}
		}
		count += weights[i]
		if s.Member != "" {
			members[s.Member]++
		}
		for sigs[lo].At.Before(s.At.Add(-w.Span)) {
			count -= weights[lo]
			if m := sigs[lo].Member; m != "" {
				if members[m]--; members[m] == 0 {
					delete(members, m)
				}
			}
			lo++
		}
		inOrder := chain == nil || chain.Add(s.Member, s.At.UnixNano(), int64(w.Span))
		if !fired && inOrder && w.met(count, len(members)) {
			fired = true
			out = append(out, sigs[start:i+1])
			prevNewest, start = s.At, i+1
		}
	}
	if start < len(sigs) {
		out = append(out, sigs[start:])
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

// node builds a NodeRef of a value of node type typ, typed and written as
// parse.NodeOf gives it (an address in a Domain field is an IP node), or
// none when the value names nothing.
func node(typ, value string, key bool) []vigil.NodeRef {
	typ, value = parse.NodeOf(typ, value)
	if value == "" {
		return nil
	}
	return []vigil.NodeRef{{Type: typ, Value: value, Key: key}}
}

// nodes concatenates node lists, a node named twice once (a key if
// either names it as one).
func nodes(lists ...[]vigil.NodeRef) []vigil.NodeRef {
	return vigil.MergeNodeRefs(lists...)
}

// plural formats n with a noun, "1 login" / "5 logins" / "2 addresses".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return strconv.Itoa(n) + " " + noun + "es"
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
