// Package correlate holds incident correlation and the classification rules
// engine (DESIGN §8 and §9).
package rules

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// This file is the classification-rule conditions engine: Compile validates
// and compiles a rule's conditions tree, Condition.Match evaluates it against
// the Facts of one incident, and RuleSet/Classify pick the rule that decides
// an incident's severity.
//
// Matching semantics, in one place:
//
//   - A field over a collection (observation.*, artifact.source, node.*,
//     event.*) yields one value per element, and an event field holding an
//     array yields one value per array item. A leaf matches when ANY value
//     satisfies it. "No element matches" is written with "not".
//   - eq, in, contains, prefix and suffix compare strings case-insensitively
//     (SOC data mixes "Admin"/"admin", "EVIL.example"/"evil.example"). regex
//     is case-sensitive RE2; write (?i) for the other.
//   - A number in a rule compares numerically with numbers and with numeric
//     strings of the data ("22" eq 22). A string in a rule compares as a
//     string with strings, and numerically with numbers when it is numeric.
//     A boolean compares with booleans and with the strings "true"/"false".
//   - contains/prefix/suffix/regex see numbers and booleans in their text
//     form (22 → "22", true → "true").
//   - gt/gte/lt/lte need a numeric value; on incident.severity and
//     observation.severity they compare by rank (low=1 < medium=2 < high=3 <
//     critical=4) whether the rule names a severity or gives the rank.
//   - cidr matches a value that is an IP address inside any of the prefixes.
//   - ne over a collection matches when some element is present and differs
//     from the value; it is "any element differs", not "none equals".
//   - A missing field (no element, no such event key, a null value, an empty
//     array) makes every operator false, ne included, except exists:false.
//     exists:true means some element has the field; exists:false that none
//     has it, so exists is the one operator judged over the whole collection.
//   - An empty object {} (or absent conditions) matches everything.

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

// Facts is what a rule sees of an incident.
type Facts struct {
	Severity      string
	ArtifactCount int
	NodeCount     int
	Observations  []ObservationFacts
	Artifacts     []ArtifactFacts
	Nodes         []NodeFacts
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
)

// fixedFields are the fields other than event.*, in the order error
// messages list them.
var fixedFields = []struct {
	name string
	kind fieldKind
}{
	{"incident.severity", fIncidentSeverity},
	{"incident.artifact_count", fIncidentArtifactCount},
	{"incident.node_count", fIncidentNodeCount},
	{"observation.type", fObservationType},
	{"observation.severity", fObservationSeverity},
	{"observation.description", fObservationDescription},
	{"artifact.source", fArtifactSource},
	{"node.type", fNodeType},
	{"node.value", fNodeValue},
}

// eventFieldRE is an ECS field name: dotted lowercase segments. Note that
// ECS's own event.* fields are reached as event.event.action.
var eventFieldRE = regexp.MustCompile(`^[a-z0-9_@-]+(\.[a-z0-9_@-]+)*$`)

func (k fieldKind) severity() bool { return k == fIncidentSeverity || k == fObservationSeverity }
func (k fieldKind) number() bool   { return k == fIncidentArtifactCount || k == fIncidentNodeCount }

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

// Condition is a compiled conditions tree, matched with the semantics set
// out at the top of this file. It is immutable and safe for concurrent use.
type Condition struct {
	root    matcher // nil matches everything
	nfields int     // distinct fields, the size of a view's cache
}

// Compile validates raw (a JSON conditions tree, DESIGN §9) and compiles it.
// Absent (empty) conditions and {} match everything. Problems are returned as
// a *vigil.Error with Code vigil.EINVALID whose Details name the exact path
// of each bad part, rooted at "conditions", e.g.
// {"field": "conditions.all[1].op", "issue": "unknown operator \"foo\"; …"}.
func Compile(raw json.RawMessage) (*Condition, error) {
	return compile(raw, map[string]int{})
}

// compile compiles raw, numbering its fields in ids, which a RuleSet shares
// between its rules so that one view caches each field once for all of them.
func compile(raw json.RawMessage, ids map[string]int) (*Condition, error) {
	c := &compiler{ids: ids}
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

// Match reports whether the incident described by f satisfies c. A nil f is
// an incident with nothing in it.
func (c *Condition) Match(f *Facts) bool {
	if c == nil || c.root == nil {
		return true
	}
	return c.root.match(newView(f, c.nfields))
}

// compiler collects the issues of one tree.
type compiler struct {
	issues []vigil.FieldIssue
	nodes  int
	stop   bool // too many issues or nodes: give up
	ids    map[string]int
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
	} else if f, issue := parseField(fieldRaw); issue != "" {
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

func parseField(raw json.RawMessage) (field, string) {
	var name string
	if jsonKind(raw) != '"' || json.Unmarshal(raw, &name) != nil {
		return field{}, "must be a string"
	}
	for _, f := range fixedFields {
		if f.name == name {
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
		names = append(names, f.name)
	}
	names = append(names, "event.<ecs field>")
	return field{}, fmt.Sprintf("unknown field %q; want one of %s", name, strings.Join(names, ", "))
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

// leafValue validates the value of l (raw is nil when absent) against its
// operator and field, and stores it compiled in l.
func (c *compiler) leafValue(l *leaf, raw json.RawMessage, path string) bool {
	kind := jsonKind(raw)
	if raw == nil && l.op != opExists {
		c.fail(path, "required")
		return false
	}
	switch l.op {
	case opExists:
		// null is taken as absent: serializers write optional fields so.
		switch kind {
		case 0, 'n', 't':
			l.exists = true
		case 'f':
			l.exists = false
		default:
			c.fail(path, "must be a boolean (true: the field is present, false: it is absent)")
			return false
		}
	case opEq, opNe:
		s, ok := c.scalar(raw, path, l.field)
		if !ok {
			return false
		}
		l.set = newScalarSet([]scalar{s})
	case opIn:
		elems := arrayElems(raw)
		switch {
		case kind != '[' || len(elems) == 0:
			c.fail(path, "must be a non-empty array of strings, numbers or booleans")
			return false
		case len(elems) > MaxConditionValues:
			c.fail(path, fmt.Sprintf("must hold at most %d values", MaxConditionValues))
			return false
		}
		items := make([]scalar, 0, len(elems))
		for i, e := range elems {
			if s, ok := c.scalar(e, fmt.Sprintf("%s[%d]", path, i), l.field); ok {
				items = append(items, s)
			}
		}
		if len(items) != len(elems) {
			return false
		}
		l.set = newScalarSet(items)
	case opContains, opPrefix, opSuffix:
		s, ok := jsonString(raw)
		if !ok {
			c.fail(path, "must be a string")
			return false
		}
		l.str = strings.ToLower(s)
	case opRegex:
		s, ok := jsonString(raw)
		if !ok {
			c.fail(path, "must be a string (an RE2 regular expression)")
			return false
		}
		if utf8.RuneCountInString(s) > MaxRegexLen {
			c.fail(path, fmt.Sprintf("must be at most %d characters", MaxRegexLen))
			return false
		}
		re, err := regexp.Compile(s)
		if err != nil {
			c.fail(path, "invalid regular expression: "+err.Error())
			return false
		}
		l.re = re
	case opCIDR:
		var elems []json.RawMessage
		var paths []string
		switch kind {
		case '"':
			elems, paths = []json.RawMessage{raw}, []string{path}
		case '[':
			elems = arrayElems(raw)
			switch {
			case len(elems) == 0:
				c.fail(path, "must be a CIDR, an IP address or a non-empty array of them")
				return false
			case len(elems) > MaxConditionValues:
				c.fail(path, fmt.Sprintf("must hold at most %d prefixes", MaxConditionValues))
				return false
			}
			for i := range elems {
				paths = append(paths, fmt.Sprintf("%s[%d]", path, i))
			}
		default:
			c.fail(path, "must be a CIDR, an IP address or a non-empty array of them")
			return false
		}
		ok := true
		for i, e := range elems {
			p, issue := parsePrefix(e)
			if issue != "" {
				c.fail(paths[i], issue)
				ok = false
				continue
			}
			l.prefixes = append(l.prefixes, p)
		}
		return ok
	case opGt, opGte, opLt, opLte:
		if l.field.kind.severity() {
			l.byRank = true
			if s, ok := jsonString(raw); ok {
				if !vigil.ValidSeverity(s) {
					c.fail(path, fmt.Sprintf("unknown severity %q; want a rank number or one of %s", s, severityNames))
					return false
				}
				l.num = float64(vigil.SeverityRank(s))
				return true
			}
		}
		n, issue := jsonNumber(raw)
		if issue != "" {
			if l.field.kind.severity() && issue == "must be a number" {
				issue = "must be a number or a severity name (" + severityNames + ")"
			}
			c.fail(path, issue)
			return false
		}
		l.num = n
	}
	return true
}

// scalar validates one value of eq, ne or in for field f.
func (c *compiler) scalar(raw json.RawMessage, path string, f field) (scalar, bool) {
	var s scalar
	switch jsonKind(raw) {
	case '"':
		str, _ := jsonString(raw)
		s = scalarString(str)
	case 't', 'f':
		s = scalarBool(jsonKind(raw) == 't')
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, issue := jsonNumber(raw)
		if issue != "" {
			c.fail(path, issue)
			return s, false
		}
		s = scalar{kind: vNumber, num: n, isNum: true}
	default:
		c.fail(path, "must be a string, number or boolean")
		return s, false
	}
	switch {
	case f.kind.severity():
		// Severity names are stored lower case; a rule naming one
		// otherwise is a mistake worth reporting.
		str, ok := jsonString(raw)
		if !ok {
			c.fail(path, "must be a severity name ("+severityNames+")")
			return s, false
		}
		if !vigil.ValidSeverity(str) {
			c.fail(path, fmt.Sprintf("unknown severity %q; want one of %s", str, severityNames))
			return s, false
		}
	case f.kind.number():
		if s.kind != vNumber {
			c.fail(path, "must be a number")
			return s, false
		}
	}
	return s, true
}

func parsePrefix(raw json.RawMessage) (netip.Prefix, string) {
	s, ok := jsonString(raw)
	if !ok {
		return netip.Prefix{}, "must be a string (a CIDR or an IP address)"
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Sprintf("invalid CIDR %q", s)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p.Masked(), ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Sprintf("invalid CIDR or IP address %q", s)
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), ""
}

// JSON helpers. The whole tree was checked by json.Valid before any of them
// runs, so decoding a part of it cannot fail.

type member struct {
	key string
	val json.RawMessage
}

// jsonKind returns the first byte of a JSON value: '{', '[', '"', 't', 'f',
// 'n', '-' or a digit; 0 when raw is empty.
func jsonKind(raw []byte) byte {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return b
	}
	return 0
}

// objectMembers returns the members of a JSON object in document order,
// duplicates included.
func objectMembers(raw json.RawMessage) []member {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, member{key, v})
	}
	return out
}

// arrayElems returns the elements of a JSON array, nil for anything else.
func arrayElems(raw json.RawMessage) []json.RawMessage {
	if jsonKind(raw) != '[' {
		return nil
	}
	var out []json.RawMessage
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if jsonKind(raw) != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func jsonNumber(raw json.RawMessage) (float64, string) {
	k := jsonKind(raw)
	if k != '-' && (k < '0' || k > '9') {
		return 0, "must be a number"
	}
	n, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsInf(n, 0) {
		return 0, "must be a finite number"
	}
	return n, ""
}

// memberPath names key of the object at path, quoting keys that would not
// read as one path segment.
func memberPath(path, key string) string {
	for _, r := range key {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return path + "[" + strconv.Quote(key) + "]"
		}
	}
	if key == "" {
		return path + `[""]`
	}
	return path + "." + key
}

// Evaluation.

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

type valueKind uint8

const (
	vString valueKind = iota + 1
	vNumber
	vBool
)

// value is one value of a field in the facts, prepared for every operator.
type value struct {
	kind  valueKind
	str   string     // text form
	low   string     // lower-case text form
	num   float64    // when isNum
	isNum bool       // a number, or a string that reads as one
	b     bool       // when kind is vBool
	sev   int        // severity rank of a severity field, 0 if unknown
	addr  netip.Addr // when the text is an IP address
}

func stringValue(s string) value {
	x := value{kind: vString, str: s, low: strings.ToLower(s)}
	// Numbers and addresses are short; skip parsing descriptions.
	if len(s) > 0 && len(s) <= 64 {
		if n, ok := numericString(s); ok {
			x.num, x.isNum = n, true
		}
		if strings.ContainsAny(s, ".:") {
			if a, err := netip.ParseAddr(s); err == nil {
				x.addr = a.Unmap().WithZone("")
			}
		}
	}
	return x
}

func numberValue(n float64, text string) value {
	return value{kind: vNumber, str: text, low: text, num: n, isNum: true}
}

func boolValue(b bool) value {
	s := strconv.FormatBool(b)
	return value{kind: vBool, str: s, low: s, b: b}
}

// numericString parses s as a decimal number; hex, "Inf", "NaN" and
// underscores are not numbers here.
func numericString(s string) (float64, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '.', c == '-', c == '+', c == 'e', c == 'E':
		default:
			return 0, false
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, false
	}
	return n, true
}

// scalar is one value given in a rule for eq, ne or in.
type scalar struct {
	kind  valueKind
	low   string // strings and booleans
	num   float64
	isNum bool // a number, or a numeric string
	b     bool
}

func scalarString(s string) scalar {
	x := scalar{kind: vString, low: strings.ToLower(s)}
	x.num, x.isNum = numericString(s)
	return x
}

func scalarBool(b bool) scalar {
	return scalar{kind: vBool, low: strconv.FormatBool(b), b: b}
}

// equal is the equality of eq, ne and in (see the semantics at the top).
func (s *scalar) equal(x *value) bool {
	switch s.kind {
	case vString:
		if x.kind == vNumber {
			return s.isNum && x.num == s.num
		}
		return x.low == s.low
	case vNumber:
		return x.isNum && x.num == s.num
	case vBool:
		if x.kind == vBool {
			return x.b == s.b
		}
		return x.kind == vString && x.low == s.low
	}
	return false
}

// scalarSet is the values of eq, ne or in. Small sets are scanned; large
// ones are indexed with the same equality as scalar.equal.
type scalarSet struct {
	items   []scalar
	strs    map[string]struct{}  // strings and booleans, lower case: for string and bool values
	nums    map[float64]struct{} // numbers: for numeric values and numeric strings
	strNums map[float64]struct{} // numeric strings: for numeric values
}

const scalarSetScan = 8

func newScalarSet(items []scalar) scalarSet {
	s := scalarSet{items: items}
	if len(items) <= scalarSetScan {
		return s
	}
	s.strs = map[string]struct{}{}
	s.nums = map[float64]struct{}{}
	s.strNums = map[float64]struct{}{}
	for _, it := range items {
		switch it.kind {
		case vString:
			s.strs[it.low] = struct{}{}
			if it.isNum {
				s.strNums[it.num] = struct{}{}
			}
		case vBool:
			s.strs[it.low] = struct{}{}
		case vNumber:
			s.nums[it.num] = struct{}{}
		}
	}
	return s
}

func (s *scalarSet) has(x *value) bool {
	if s.strs == nil {
		for i := range s.items {
			if s.items[i].equal(x) {
				return true
			}
		}
		return false
	}
	switch x.kind {
	case vString, vBool:
		if _, ok := s.strs[x.low]; ok {
			// A rule boolean equals a string "true" but a rule string
			// "true" equals a boolean too, so both kinds may meet here.
			return true
		}
	case vNumber:
		if _, ok := s.strNums[x.num]; ok {
			return true
		}
	}
	if x.isNum {
		if _, ok := s.nums[x.num]; ok {
			return true
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

func severityValue(s string) value {
	x := stringValue(s)
	x.sev = vigil.SeverityRank(x.low)
	return x
}

// eventLookupBudget bounds the map look-ups spent finding one field in one
// event, whose keys may come from an attacker's log line.
const eventLookupBudget = 256

// eventValues appends the values of the ECS field key in the event m. The
// event may be flat ("source.ip"), nested ({"source": {"ip": …}}), a mix of
// both, or hold arrays of objects, each of whose values count. It reports
// whether the field is present.
func eventValues(out []value, m map[string]any, key string, budget *int) ([]value, bool) {
	*budget--
	if *budget < 0 {
		return out, false
	}
	if x, ok := m[key]; ok {
		return appendValues(out, x, 0)
	}
	present := false
	for i := 0; i < len(key); i++ {
		if key[i] != '.' {
			continue
		}
		*budget--
		if *budget < 0 {
			break
		}
		switch sub := m[key[:i]].(type) {
		case map[string]any:
			var p bool
			out, p = eventValues(out, sub, key[i+1:], budget)
			present = present || p
		case []any:
			for _, e := range sub {
				if em, ok := e.(map[string]any); ok {
					var p bool
					out, p = eventValues(out, em, key[i+1:], budget)
					present = present || p
				}
			}
		}
		if present {
			break
		}
	}
	return out, present
}

// appendValues appends the scalar values of x (one, or several for arrays)
// and reports whether x is present: not null and not empty.
func appendValues(out []value, x any, depth int) ([]value, bool) {
	switch t := x.(type) {
	case nil:
		return out, false
	case string:
		return append(out, stringValue(t)), true
	case bool:
		return append(out, boolValue(t)), true
	case float64:
		return append(out, numberValue(t, strconv.FormatFloat(t, 'f', -1, 64))), true
	case float32:
		return append(out, numberValue(float64(t), strconv.FormatFloat(float64(t), 'f', -1, 32))), true
	case int:
		return append(out, numberValue(float64(t), strconv.Itoa(t))), true
	case int64:
		return append(out, numberValue(float64(t), strconv.FormatInt(t, 10))), true
	case int32:
		return append(out, numberValue(float64(t), strconv.FormatInt(int64(t), 10))), true
	case int16:
		return append(out, numberValue(float64(t), strconv.FormatInt(int64(t), 10))), true
	case int8:
		return append(out, numberValue(float64(t), strconv.FormatInt(int64(t), 10))), true
	case uint:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case uint64:
		return append(out, numberValue(float64(t), strconv.FormatUint(t, 10))), true
	case uint32:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case uint16:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case uint8:
		return append(out, numberValue(float64(t), strconv.FormatUint(uint64(t), 10))), true
	case json.Number:
		if n, err := t.Float64(); err == nil && !math.IsInf(n, 0) {
			return append(out, numberValue(n, string(t))), true
		}
		return append(out, stringValue(string(t))), true
	case []string:
		for _, s := range t {
			out = append(out, stringValue(s))
		}
		return out, len(t) > 0
	case []any:
		if depth >= 4 {
			return out, len(t) > 0
		}
		present := false
		for _, e := range t {
			var p bool
			out, p = appendValues(out, e, depth+1)
			present = present || p
		}
		return out, present
	case map[string]any:
		// An object has no value of its own; it is present when it holds
		// something, as an ECS object field is.
		return out, len(t) > 0
	case fmt.Stringer:
		return append(out, stringValue(t.String())), true
	}
	// Another type is present but offers no value to compare.
	return out, true
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

// RuleSet is an org's classification rules compiled once, to classify many
// incidents. It reads the rules when built; later changes to them are not
// seen. It is safe for concurrent use.
type RuleSet struct {
	rules   []compiledRule
	nfields int
	invalid map[string]error
}

type compiledRule struct {
	rule *vigil.Rule
	cond *Condition
}

// NewRuleSet compiles rules, kept in the order given (see SortRules).
// Disabled rules are left out; rules whose conditions fail to compile are
// left out and reported by Invalid.
func NewRuleSet(rules []*vigil.Rule) *RuleSet {
	rs := &RuleSet{}
	ids := map[string]int{}
	for _, r := range rules {
		if r == nil || !r.Enabled {
			continue
		}
		c, err := compile(r.Conditions, ids)
		if err != nil {
			if rs.invalid == nil {
				rs.invalid = map[string]error{}
			}
			rs.invalid[r.ID] = err
			continue
		}
		rs.rules = append(rs.rules, compiledRule{rule: r, cond: c})
	}
	rs.nfields = len(ids)
	return rs
}

// Invalid returns the compile errors of the enabled rules that were left
// out, by rule ID. Rules are validated on write, so an entry here means a
// rule stored before a validation change.
func (rs *RuleSet) Invalid() map[string]error { return rs.invalid }

// Empty reports whether rs has no rule that could match.
func (rs *RuleSet) Empty() bool { return len(rs.rules) == 0 }

// Classify returns the first rule of rs that matches f, or nil when none
// does. A rule with TargetInfrastructure also requires some node of the
// incident to be an IP address inside one of internal (the org's
// internal_networks); with no internal networks such a rule never matches.
func (rs *RuleSet) Classify(f *Facts, internal []netip.Prefix) *vigil.Rule {
	v := newView(f, rs.nfields)
	for _, cr := range rs.rules {
		if cr.rule.TargetInfrastructure && !v.targetsInternal(internal) {
			continue
		}
		if cr.cond.root == nil || cr.cond.root.match(v) {
			return cr.rule
		}
	}
	return nil
}

// Classify returns the first rule, in the order given, that is enabled and
// matches f, honoring TargetInfrastructure against internal (see
// RuleSet.Classify). The caller orders the rules (SortRules). Rules whose
// conditions fail to compile are skipped. It returns nil when none matches.
// To classify many incidents with the same rules, build a RuleSet once.
func Classify(rules []*vigil.Rule, f *Facts, internal []netip.Prefix) *vigil.Rule {
	return NewRuleSet(rules).Classify(f, internal)
}

// SortRules orders rules for evaluation (DESIGN §9): ascending priority,
// older first on ties, then by ID so that the order is total.
func SortRules(rules []*vigil.Rule) {
	slices.SortFunc(rules, func(a, b *vigil.Rule) int {
		return cmp.Or(
			cmp.Compare(a.Priority, b.Priority),
			a.CreatedAt.Compare(b.CreatedAt),
			cmp.Compare(a.ID, b.ID),
		)
	})
}
