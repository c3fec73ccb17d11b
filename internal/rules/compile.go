package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/vigil-soc/vigil"
)

// Compiling: a conditions tree, given as JSON, validated and turned into
// matchers, with the tables of the fields and operators a rule may name.

// Limits of a conditions tree. They bound the cost of evaluating every rule
// of an org each time an incident is created or grows.
const (
	MaxConditionDepth    = 10      // nesting levels, the root being level 1
	MaxConditionNodes    = 1000    // objects in the whole tree
	MaxConditionChildren = 100     // entries of one all/any
	MaxConditionValues   = 1000    // entries of one in or cidr list
	MaxRegexLen          = 1000    // characters of a regex
	MaxConditionsBytes   = 1 << 20 // the encoded tree
	maxEventFieldLen     = 255
	maxIssues            = 20 // issues reported for one tree
)

// fieldKind names the source of a field's values.
type fieldKind uint8

const (
	fIncidentSeverity fieldKind = iota + 1
	fIncidentArtifactCount
	fIncidentNodeCount
	fObservationType
	fObservationSeverity
	fObservationDescription
	fArtifactSource
	fNodeType
	fNodeValue
	fEvent
	fSignalDetector
	fSignalKey
	fSignalMember
	fSignalSourceIP
	fSignalUser
	fSignalSignature
	fIncidentTitle
	fRollupDetector
	fRollupName
	fRollupSources
	fRollupCount
	fRaisedReason
)

// scope says what a conditions tree is matched against: an incident (a
// classification rule) or one signal (a suppression).
type scope uint8

const (
	scopeIncident scope = 1 << iota
	scopeSignal
)

// fixedFields are the fields other than event.*, in the order error
// messages list them, with the scopes they belong to.
var fixedFields = []struct {
	name   string
	kind   fieldKind
	scopes scope
}{
	{"incident.severity", fIncidentSeverity, scopeIncident},
	{"incident.artifact_count", fIncidentArtifactCount, scopeIncident},
	{"incident.node_count", fIncidentNodeCount, scopeIncident},
	{"incident.title", fIncidentTitle, scopeIncident},
	{"incident.rollup.detector", fRollupDetector, scopeIncident},
	{"incident.rollup.name", fRollupName, scopeIncident},
	{"incident.rollup.sources", fRollupSources, scopeIncident},
	{"incident.rollup.count", fRollupCount, scopeIncident},
	{"incident.raised_by.reason", fRaisedReason, scopeIncident},
	{"observation.type", fObservationType, scopeIncident},
	{"observation.severity", fObservationSeverity, scopeIncident},
	{"observation.description", fObservationDescription, scopeIncident},
	{"signal.detector", fSignalDetector, scopeSignal},
	{"signal.key", fSignalKey, scopeSignal},
	{"signal.member", fSignalMember, scopeSignal},
	{"signal.source_ip", fSignalSourceIP, scopeSignal},
	{"signal.user", fSignalUser, scopeSignal},
	{"signal.signature", fSignalSignature, scopeSignal},
	{"artifact.source", fArtifactSource, scopeIncident | scopeSignal},
	{"node.type", fNodeType, scopeIncident | scopeSignal},
	{"node.value", fNodeValue, scopeIncident | scopeSignal},
}

// eventFieldRE is an ECS field name: dotted lowercase segments. Note that
// ECS's own event.* fields are reached as event.event.action.
var eventFieldRE = regexp.MustCompile(`^[a-z0-9_@-]+(\.[a-z0-9_@-]+)*$`)

func (k fieldKind) severity() bool { return k == fIncidentSeverity || k == fObservationSeverity }
func (k fieldKind) number() bool {
	return k == fIncidentArtifactCount || k == fIncidentNodeCount || k == fRollupSources || k == fRollupCount
}

// field is a validated field name.
type field struct {
	name string
	kind fieldKind
	key  string // for fEvent: the ECS name after "event."
}

type opCode uint8

const (
	opEq opCode = iota + 1
	opNe
	opIn
	opContains
	opPrefix
	opSuffix
	opRegex
	opCIDR
	opGt
	opGte
	opLt
	opLte
	opExists
)

// opNames lists the operators in the order error messages list them.
var opNames = []struct {
	name string
	op   opCode
}{
	{"eq", opEq}, {"ne", opNe}, {"in", opIn}, {"contains", opContains},
	{"prefix", opPrefix}, {"suffix", opSuffix}, {"regex", opRegex},
	{"cidr", opCIDR}, {"gt", opGt}, {"gte", opGte}, {"lt", opLt},
	{"lte", opLte}, {"exists", opExists},
}

const severityNames = "low, medium, high, critical"

// IncidentFields returns the fields a classification rule may name,
// besides event.<ECS field>, in the order error messages list them.
func IncidentFields() []string {
	var out []string
	for _, f := range fixedFields {
		if f.scopes&scopeIncident != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// Operators returns the operators a condition may name, in the order
// error messages list them.
func Operators() []string {
	out := make([]string, len(opNames))
	for i, o := range opNames {
		out[i] = o.name
	}
	return out
}

// Condition is a compiled conditions tree, matched with the semantics set
// out in the package comment. It is immutable and safe for concurrent use.
type Condition struct {
	root    matcher // nil matches everything
	nfields int     // distinct fields, the size of a view's cache
}

// Compile validates raw (a JSON conditions tree, as docs/detections.md
// describes it for users) and compiles it.
// Absent (empty) conditions and {} match everything. Problems are returned as
// a *vigil.Error with Code vigil.EINVALID whose Details name the exact path
// of each bad part, rooted at "conditions", e.g.
// {"field": "conditions.all[1].op", "issue": "unknown operator \"foo\"; …"}.
func Compile(raw json.RawMessage) (*Condition, error) {
	return compile(raw, map[string]int{}, scopeIncident)
}

// CompileSignal validates and compiles the conditions of a suppression,
// matched against one signal (SignalFacts) as Compile's are against an
// incident: the same language, over the fields of a signal (signal.*,
// artifact.source, node.*, event.*) instead of an incident's.
func CompileSignal(raw json.RawMessage) (*Condition, error) {
	return compile(raw, map[string]int{}, scopeSignal)
}

// MatchesAll reports whether c matches everything: absent or empty
// conditions ({}).
func (c *Condition) MatchesAll() bool { return c == nil || c.root == nil }

// compile compiles raw for scope sc, numbering its fields in ids, which a
// RuleSet shares between its rules so that one view caches each field once
// for all of them.
func compile(raw json.RawMessage, ids map[string]int, sc scope) (*Condition, error) {
	c := &compiler{ids: ids, scope: sc}
	var root matcher
	switch {
	case len(bytes.TrimSpace(raw)) == 0:
	case len(raw) > MaxConditionsBytes:
		c.fail("conditions", fmt.Sprintf("must be at most %d bytes", MaxConditionsBytes))
	case !json.Valid(raw):
		c.fail("conditions", "must be valid JSON")
	default:
		root = c.node(raw, "conditions", 1)
	}
	if len(c.issues) > 0 {
		e := vigil.Invalid(c.issues...)
		e.Op = "rules.Compile"
		return nil, e
	}
	if _, ok := root.(matchAll); ok {
		root = nil
	}
	return &Condition{root: root, nfields: len(ids)}, nil
}

// compiler collects the issues of one tree.
type compiler struct {
	issues []vigil.FieldIssue
	nodes  int
	stop   bool // too many issues or nodes: give up
	ids    map[string]int
	scope  scope
}

func (c *compiler) fail(path, issue string) {
	if len(c.issues) >= maxIssues {
		c.stop = true
		return
	}
	c.issues = append(c.issues, vigil.FieldIssue{Field: path, Issue: issue})
}

// node compiles the condition object raw found at path, depth levels deep.
// It returns nil after recording the issues of a bad node.
func (c *compiler) node(raw json.RawMessage, path string, depth int) matcher {
	if c.stop {
		return nil
	}
	c.nodes++
	if c.nodes > MaxConditionNodes {
		c.fail(path, fmt.Sprintf("too many conditions: at most %d in a tree", MaxConditionNodes))
		c.stop = true
		return nil
	}
	if depth > MaxConditionDepth {
		c.fail(path, fmt.Sprintf("nested too deep: at most %d levels", MaxConditionDepth))
		return nil
	}
	if jsonKind(raw) != '{' {
		c.fail(path, "must be an object")
		return nil
	}
	members := objectMembers(raw)
	if len(members) == 0 {
		return matchAll{}
	}

	// The first known key decides the shape; every other key must belong
	// to it. Keys are judged in document order so that the issue names the
	// key a reader would blame.
	shape, ok := "", true
	seen := map[string]bool{}
	for _, m := range members {
		p := memberPath(path, m.key)
		var leafKey bool
		switch m.key {
		case "all", "any", "not":
		case "field", "op", "value":
			leafKey = true
		default:
			c.fail(p, "unknown key; a condition is {\"all\": […]}, {\"any\": […]}, {\"not\": {…}} or {\"field\", \"op\", \"value\"}")
			ok = false
			continue
		}
		switch {
		case seen[m.key]:
			c.fail(p, "duplicate key")
			ok = false
		case shape == "":
			shape = m.key
		case !leafKey || !isLeafKey(shape):
			c.fail(p, fmt.Sprintf("cannot be combined with %q", shape))
			ok = false
		}
		seen[m.key] = true
	}
	if !ok {
		return nil
	}

	if isLeafKey(shape) {
		return c.leaf(members, path)
	}
	m := members[0]
	p := path + "." + m.key
	if m.key == "not" {
		kid := c.node(m.val, p, depth+1)
		if kid == nil {
			return nil
		}
		return matchNot{kid}
	}
	if jsonKind(m.val) != '[' {
		c.fail(p, "must be a non-empty array of conditions")
		return nil
	}
	elems := arrayElems(m.val)
	switch {
	case len(elems) == 0:
		c.fail(p, "must be a non-empty array of conditions")
		return nil
	case len(elems) > MaxConditionChildren:
		c.fail(p, fmt.Sprintf("must hold at most %d conditions", MaxConditionChildren))
		return nil
	}
	kids := make([]matcher, 0, len(elems))
	for i, e := range elems {
		if kid := c.node(e, fmt.Sprintf("%s[%d]", p, i), depth+1); kid != nil {
			kids = append(kids, kid)
		}
	}
	if len(kids) != len(elems) {
		return nil
	}
	if m.key == "all" {
		return matchAllOf(kids)
	}
	return matchAnyOf(kids)
}

func isLeafKey(k string) bool { return k == "field" || k == "op" || k == "value" }

// leaf compiles {"field", "op", "value"}.
func (c *compiler) leaf(members []member, path string) matcher {
	var fieldRaw, opRaw, valRaw json.RawMessage
	for _, m := range members {
		switch m.key {
		case "field":
			fieldRaw = m.val
		case "op":
			opRaw = m.val
		case "value":
			valRaw = m.val
		}
	}
	l := &leaf{}
	ok := true
	if fieldRaw == nil {
		c.fail(path+".field", "required")
		ok = false
	} else if f, issue := parseField(fieldRaw, c.scope); issue != "" {
		c.fail(path+".field", issue)
		ok = false
	} else {
		l.field = f
	}
	if opRaw == nil {
		c.fail(path+".op", "required")
		ok = false
	} else if op, issue := parseOp(opRaw); issue != "" {
		c.fail(path+".op", issue)
		ok = false
	} else {
		l.op = op
	}
	if !ok {
		return nil
	}
	if l.field.kind.number() {
		switch l.op {
		case opContains, opPrefix, opSuffix, opRegex, opCIDR:
			c.fail(path+".op", fmt.Sprintf("operator %s does not apply to the number field %s; want one of eq, ne, in, gt, gte, lt, lte, exists", opName(l.op), l.field.name))
			return nil
		}
	}
	if !c.leafValue(l, valRaw, path+".value") {
		return nil
	}
	id, seen := c.ids[l.field.name]
	if !seen {
		id = len(c.ids)
		c.ids[l.field.name] = id
	}
	l.fid = id
	return l
}

func parseField(raw json.RawMessage, sc scope) (field, string) {
	var name string
	if jsonKind(raw) != '"' || json.Unmarshal(raw, &name) != nil {
		return field{}, "must be a string"
	}
	for _, f := range fixedFields {
		if f.name == name && f.scopes&sc != 0 {
			return field{name: name, kind: f.kind}, ""
		}
	}
	if key, ok := strings.CutPrefix(name, "event."); ok {
		if len(name) > maxEventFieldLen || !eventFieldRE.MatchString(key) {
			return field{}, fmt.Sprintf("invalid event field %q; want event. followed by a dotted lowercase ECS name of [a-z0-9_.@-], e.g. event.source.ip (at most %d characters)", name, maxEventFieldLen)
		}
		return field{name: name, kind: fEvent, key: key}, ""
	}
	names := make([]string, 0, len(fixedFields)+1)
	for _, f := range fixedFields {
		if f.scopes&sc != 0 {
			names = append(names, f.name)
		}
	}
	names = append(names, "event.<ecs field>")
	what := "unknown field"
	if sc == scopeSignal {
		what = "unknown field of a signal"
	}
	return field{}, fmt.Sprintf("%s %q; want one of %s", what, name, strings.Join(names, ", "))
}

func parseOp(raw json.RawMessage) (opCode, string) {
	var name string
	if jsonKind(raw) != '"' || json.Unmarshal(raw, &name) != nil {
		return 0, "must be a string"
	}
	names := make([]string, 0, len(opNames))
	for _, o := range opNames {
		if o.name == name {
			return o.op, ""
		}
		names = append(names, o.name)
	}
	return 0, fmt.Sprintf("unknown operator %q; want one of %s", name, strings.Join(names, ", "))
}

func opName(op opCode) string {
	for _, o := range opNames {
		if o.op == op {
			return o.name
		}
	}
	return "?"
}
