package rules

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Matching: the Facts a rule sees, the compiled matchers, and the view that
// resolves each field of the facts once for all the leaves that name it.

// Facts is what a rule sees of an incident, or a suppression of one
// signal: then Signal holds the signal's own fields, Artifacts its one
// artifact and Nodes the nodes it names.
type Facts struct {
	Severity      string
	ArtifactCount int
	NodeCount     int
	Title         string
	// Rollup is what a roll-up says of itself (nil: the incident is
	// none); RaisedBy the reason an entity's risk set the incident
	// apart ("": it was not).
	Rollup       *RollupFacts
	RaisedBy     string
	Observations []ObservationFacts
	Artifacts    []ArtifactFacts
	Nodes        []NodeFacts
	Signal       SignalFacts
}

// SignalFacts is what a suppression sees of a signal beyond its artifact
// and nodes: the detector that drew it, the key and member it would be
// counted under, and the usual subjects of an exception, read from its
// event (source.ip, user.name, rule.name). An empty field is missing.
type SignalFacts struct {
	Detector  string
	Key       string
	Member    string
	SourceIP  string
	User      string
	Signature string
}

// RollupFacts is what a rule sees of a roll-up: its detector, the name of
// what fired, its distinct sources and their summed count.
type RollupFacts struct {
	Detector string
	Name     string
	Sources  int
	Count    int
}

// ObservationFacts is what a rule sees of one observation of the incident.
type ObservationFacts struct {
	Type        string
	Severity    string
	Description string
}

// ArtifactFacts is what a rule sees of one artifact of the incident. Event
// holds its normalized ECS fields, flat ("source.ip": "10.0.0.1") or nested
// as decoded from JSON ({"source": {"ip": "10.0.0.1"}}); values are strings,
// numbers (any Go integer or float type, json.Number), booleans, []string
// or []any.
type ArtifactFacts struct {
	Source string
	Event  map[string]any
}

// NodeFacts is what a rule sees of one node of the incident.
type NodeFacts struct {
	Type  string
	Value string
}

// Match reports whether the incident described by f satisfies c. A nil f is
// an incident with nothing in it.
func (c *Condition) Match(f *Facts) bool {
	if c == nil || c.root == nil {
		return true
	}
	return c.root.match(newView(f, c.nfields))
}

// matcher is one compiled node of a tree.
type matcher interface {
	match(v *view) bool
}

type matchAll struct{}

func (matchAll) match(*view) bool { return true }

type matchAllOf []matcher

func (m matchAllOf) match(v *view) bool {
	for _, k := range m {
		if !k.match(v) {
			return false
		}
	}
	return true
}

type matchAnyOf []matcher

func (m matchAnyOf) match(v *view) bool {
	for _, k := range m {
		if k.match(v) {
			return true
		}
	}
	return false
}

type matchNot struct{ m matcher }

func (m matchNot) match(v *view) bool { return !m.m.match(v) }

// leaf is a compiled {"field", "op", "value"}.
type leaf struct {
	field    field
	fid      int // index of the field in a view's cache
	op       opCode
	set      scalarSet      // eq, ne, in
	str      string         // contains, prefix, suffix: lower case
	re       *regexp.Regexp // regex
	prefixes []netip.Prefix // cidr
	num      float64        // gt, gte, lt, lte
	byRank   bool           // gt…: compare severity ranks
	exists   bool           // exists
}

func (l *leaf) match(v *view) bool {
	r := v.values(l)
	switch l.op {
	case opExists:
		return r.present == l.exists
	case opNe:
		for i := range r.vals {
			if !l.set.has(&r.vals[i]) {
				return true
			}
		}
		return false
	}
	for i := range r.vals {
		if l.test(&r.vals[i]) {
			return true
		}
	}
	return false
}

// test reports whether one value satisfies l (any operator but exists, ne).
func (l *leaf) test(x *value) bool {
	switch l.op {
	case opEq, opIn:
		return l.set.has(x)
	case opContains:
		return strings.Contains(x.low, l.str)
	case opPrefix:
		return strings.HasPrefix(x.low, l.str)
	case opSuffix:
		return strings.HasSuffix(x.low, l.str)
	case opRegex:
		return l.re.MatchString(x.str)
	case opCIDR:
		if !x.addr.IsValid() {
			return false
		}
		for _, p := range l.prefixes {
			if p.Contains(x.addr) {
				return true
			}
		}
		return false
	case opGt, opGte, opLt, opLte:
		var n float64
		switch {
		case l.byRank && x.sev > 0:
			n = float64(x.sev)
		case !l.byRank && x.isNum:
			n = x.num
		default:
			return false
		}
		switch l.op {
		case opGt:
			return n > l.num
		case opGte:
			return n >= l.num
		case opLt:
			return n < l.num
		default:
			return n <= l.num
		}
	}
	return false
}

// resolved is the values of one field in one incident's facts.
type resolved struct {
	vals    []value
	present bool
}

// view evaluates rules against one Facts, resolving each field once however
// many leaves name it.
type view struct {
	f    *Facts
	res  []resolved
	done []bool

	internalDone, internalHit bool
}

var emptyFacts Facts

func newView(f *Facts, nfields int) *view {
	if f == nil {
		f = &emptyFacts
	}
	return &view{f: f, res: make([]resolved, nfields), done: make([]bool, nfields)}
}

func (v *view) values(l *leaf) *resolved {
	if l.fid < len(v.res) {
		if !v.done[l.fid] {
			v.res[l.fid] = v.resolve(l.field)
			v.done[l.fid] = true
		}
		return &v.res[l.fid]
	}
	r := v.resolve(l.field)
	return &r
}

func (v *view) resolve(fd field) resolved {
	f := v.f
	var r resolved
	switch fd.kind {
	case fIncidentSeverity:
		r.vals = []value{severityValue(f.Severity)}
		r.present = true
	case fIncidentArtifactCount:
		r.vals = []value{numberValue(float64(f.ArtifactCount), strconv.Itoa(f.ArtifactCount))}
		r.present = true
	case fIncidentNodeCount:
		r.vals = []value{numberValue(float64(f.NodeCount), strconv.Itoa(f.NodeCount))}
		r.present = true
	case fIncidentTitle, fRaisedReason:
		x := f.Title
		if fd.kind == fRaisedReason {
			x = f.RaisedBy
		}
		if x != "" {
			r.vals, r.present = []value{stringValue(x)}, true
		}
	case fRollupDetector, fRollupName:
		if f.Rollup != nil {
			x := f.Rollup.Detector
			if fd.kind == fRollupName {
				x = f.Rollup.Name
			}
			r.vals, r.present = []value{stringValue(x)}, true
		}
	case fRollupSources, fRollupCount:
		if f.Rollup != nil {
			n := f.Rollup.Sources
			if fd.kind == fRollupCount {
				n = f.Rollup.Count
			}
			r.vals, r.present = []value{numberValue(float64(n), strconv.Itoa(n))}, true
		}
	case fObservationType, fObservationSeverity, fObservationDescription:
		r.vals = make([]value, 0, len(f.Observations))
		for _, o := range f.Observations {
			switch fd.kind {
			case fObservationType:
				r.vals = append(r.vals, stringValue(o.Type))
			case fObservationSeverity:
				r.vals = append(r.vals, severityValue(o.Severity))
			default:
				r.vals = append(r.vals, stringValue(o.Description))
			}
		}
		r.present = len(r.vals) > 0
	case fArtifactSource:
		r.vals = make([]value, 0, len(f.Artifacts))
		for _, a := range f.Artifacts {
			r.vals = append(r.vals, stringValue(a.Source))
		}
		r.present = len(r.vals) > 0
	case fNodeType, fNodeValue:
		r.vals = make([]value, 0, len(f.Nodes))
		for _, n := range f.Nodes {
			if fd.kind == fNodeType {
				r.vals = append(r.vals, stringValue(n.Type))
			} else {
				r.vals = append(r.vals, stringValue(n.Value))
			}
		}
		r.present = len(r.vals) > 0
	case fSignalDetector, fSignalKey, fSignalMember, fSignalSourceIP, fSignalUser, fSignalSignature:
		var x string
		switch fd.kind {
		case fSignalDetector:
			x = f.Signal.Detector
		case fSignalKey:
			x = f.Signal.Key
		case fSignalMember:
			x = f.Signal.Member
		case fSignalSourceIP:
			x = f.Signal.SourceIP
		case fSignalUser:
			x = f.Signal.User
		default:
			x = f.Signal.Signature
		}
		if x != "" {
			r.vals, r.present = []value{stringValue(x)}, true
		}
	case fEvent:
		for _, a := range f.Artifacts {
			if a.Event == nil {
				continue
			}
			budget := eventLookupBudget
			var p bool
			r.vals, p = eventValues(r.vals, a.Event, fd.key, &budget)
			r.present = r.present || p
		}
	}
	return r
}

// targetsInternal reports whether some node of the incident is an IP
// address inside one of the internal networks.
func (v *view) targetsInternal(internal []netip.Prefix) bool {
	if v.internalDone {
		return v.internalHit
	}
	v.internalDone = true
	for _, n := range v.f.Nodes {
		a, err := netip.ParseAddr(strings.TrimSpace(n.Value))
		if err != nil {
			// A node of type IP with a value that is not one names nothing.
			continue
		}
		a = a.Unmap().WithZone("")
		for _, p := range internal {
			if p.Contains(a) {
				v.internalHit = true
				return true
			}
		}
	}
	return false
}
