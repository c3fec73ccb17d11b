// Package sigma reads Sigma rules (detection, correlation and filter
// rules of the Sigma specification 2.x) and evaluates them over Vigil's
// parsed events: Parse reads a rule's YAML (or JSON) text, Compile maps
// its log source and fields onto Vigil's sources and ECS fields and
// builds a matcher that runs without allocating on the common paths.
// docs/sigma.md lists what is supported and what is refused, and why.
package sigma

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a rule refused: Field names where (dotted, as in the rule:
// "detection.selection.query|contains", "logsource.product"), Reason
// says why.
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

func fail(field, format string, args ...any) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Bounds of a rule's text and shape: rules are written by tenants.
const (
	MaxRuleBytes    = 256 << 10
	MaxTitleLen     = 256
	maxDescription  = 65535
	maxSearches     = 256
	maxValues       = 10000 // values of one rule, after windash and base64offset expansion
	maxConditionLen = 4096
)

// Rule is one Sigma rule as written. Exactly one of Detection,
// Correlation and Filter is set.
type Rule struct {
	Title          string
	ID             string
	Name           string
	Status         string
	Description    string
	Author         string
	Date           string
	Modified       string
	License        string
	Level          string
	Taxonomy       string
	References     []string
	Tags           []string
	FalsePositives []string
	Fields         []string
	Related        []Related
	LogSource      LogSource
	Detection      *Detection
	Correlation    *Correlation
	Filter         *Filter
}

// Related is a rule this one relates to.
type Related struct {
	ID   string
	Type string
}

// LogSource is the rule's logsource section.
type LogSource struct {
	Category   string
	Product    string
	Service    string
	Definition string
}

// Detection is a detection rule's searches and condition.
type Detection struct {
	// Searches in the order written.
	Searches []*Search
	// Conditions are ORed (a condition may be a list).
	Conditions []string
	// Timeframe is the deprecated Sigma 1 aggregation window, refused
	// when Compile meets it.
	Timeframe string
}

// Search is one search identifier: a list of keywords, or maps of field
// selections (the maps ORed, a map's selections ANDed).
type Search struct {
	Name string
	// Keywords are values matched in the raw line, ORed (ANDed under
	// a '|all' keyword map, which Parse turns into a map with Field "").
	Keywords []Value
	Maps     [][]*Selection
}

// Selection is one "field|modifier|…: value(s)" of a map.
type Selection struct {
	Field     string // as written, without modifiers; "" for keywords
	Modifiers []string
	Values    []Value
	// Path is where the selection is, for errors.
	Path string
}

// Value is one value of a selection: a string, number, boolean or null
// as the YAML wrote it.
type Value struct {
	Kind Kind
	Text string // the scalar as written (numbers and booleans too)
}

// Kind is a Value's YAML type.
type Kind int

// Value kinds.
const (
	KindString Kind = iota
	KindNumber
	KindBool
	KindNull
)

var (
	uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	tagRE  = regexp.MustCompile(`^[a-z0-9_-]+\.[a-z0-9._-]+$`)
	dateRE = regexp.MustCompile(`^\d{4}[-/]\d{2}[-/]\d{2}$`)
)

var (
	levels   = []string{"informational", "low", "medium", "high", "critical"}
	statuses = []string{"stable", "test", "experimental", "deprecated", "unsupported"}
	relTypes = []string{"derived", "obsolete", "merged", "renamed", "similar"}
)

// Parse reads one Sigma rule, in YAML or in its JSON form. It checks the
// rule against the specification (required fields, formats, the shape
// of detection, correlation and filter sections, the condition's
// grammar); whether Vigil can run it is Compile's question.
func Parse(text []byte) (*Rule, error) {
	if len(text) > MaxRuleBytes {
		return nil, fail("", "rule is %d bytes, at most %d", len(text), MaxRuleBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, fail("", "not YAML or JSON: %s", yamlReason(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fail("", "more than one YAML document: post each rule on its own")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fail("", "a rule is a YAML mapping")
	}
	if err := noNUL(doc.Content[0], ""); err != nil {
		return nil, err
	}
	return parseRule(doc.Content[0])
}

// noNUL refuses a NUL character in any key or scalar of the rule, written
// as an escape ("\0", "\x00", "\u0000"): a rule's title, name and level
// are stored as text, which PostgreSQL cannot hold NUL in, and its title
// becomes the title of the observations it makes.
func noNUL(n *yaml.Node, path string) error {
	const issue = "must not contain NUL characters (U+0000)"
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.IndexByte(n.Value, 0) >= 0 {
			return fail(path, "%s", issue)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if strings.IndexByte(k, 0) >= 0 {
				return fail(path, "a key %s", issue)
			}
			child := k
			if path != "" {
				child = path + "." + k
			}
			if err := noNUL(n.Content[i+1], child); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := noNUL(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func yamlReason(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: ")
	return s
}

func parseRule(m *yaml.Node) (*Rule, error) {
	r := &Rule{}
	var detection, correlation, filter, logsource *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		if seen[key] {
			return nil, fail(key, "given twice")
		}
		seen[key] = true
		var err error
		switch key {
		case "title":
			r.Title, err = str(v, key)
		case "id":
			r.ID, err = str(v, key)
		case "name":
			r.Name, err = str(v, key)
		case "status":
			r.Status, err = str(v, key)
		case "description":
			r.Description, err = str(v, key)
		case "author":
			r.Author, err = str(v, key)
		case "date":
			r.Date, err = str(v, key)
		case "modified":
			r.Modified, err = str(v, key)
		case "license":
			r.License, err = str(v, key)
		case "level":
			r.Level, err = str(v, key)
		case "taxonomy":
			r.Taxonomy, err = str(v, key)
		case "references":
			r.References, err = strList(v, key)
		case "tags":
			r.Tags, err = strList(v, key)
		case "falsepositives":
			r.FalsePositives, err = strList(v, key)
		case "fields":
			r.Fields, err = strList(v, key)
		case "related":
			r.Related, err = parseRelated(v)
		case "logsource":
			logsource = v
		case "detection":
			detection = v
		case "correlation":
			correlation = v
		case "filter":
			filter = v
		case "scope", "generate":
			// Informational in Sigma 2 (scope) and for correlation
			// rules (generate: whether base rules alert on their own).
		case "action":
			return nil, fail(key, "rule collections (action: global/reset/repeat) are not supported: post each rule on its own")
		default:
			// Custom attributes are allowed by the specification.
		}
		if err != nil {
			return nil, err
		}
	}
	if err := r.checkMeta(); err != nil {
		return nil, err
	}
	n := 0
	for _, s := range []*yaml.Node{detection, correlation, filter} {
		if s != nil {
			n++
		}
	}
	if n != 1 {
		return nil, fail("detection", "a rule has exactly one of detection, correlation or filter")
	}
	var err error
	switch {
	case detection != nil:
		if logsource == nil {
			return nil, fail("logsource", "required")
		}
		if r.LogSource, err = parseLogSource(logsource); err != nil {
			return nil, err
		}
		r.Detection, err = parseDetection(detection, "detection")
	case correlation != nil:
		r.Correlation, err = parseCorrelation(correlation)
	case filter != nil:
		if logsource == nil {
			return nil, fail("logsource", "required")
		}
		if r.LogSource, err = parseLogSource(logsource); err != nil {
			return nil, err
		}
		r.Filter, err = parseFilter(filter)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Rule) checkMeta() error {
	switch {
	case strings.TrimSpace(r.Title) == "":
		return fail("title", "required")
	case len(r.Title) > MaxTitleLen:
		return fail("title", "at most %d characters", MaxTitleLen)
	case r.ID != "" && !uuidRE.MatchString(r.ID):
		return fail("id", "not a UUID")
	case len(r.Description) > maxDescription:
		return fail("description", "at most %d characters", maxDescription)
	case r.Level != "" && !oneOf(r.Level, levels):
		return fail("level", "one of %s", strings.Join(levels, ", "))
	case r.Status != "" && !oneOf(r.Status, statuses):
		return fail("status", "one of %s", strings.Join(statuses, ", "))
	case r.Date != "" && !dateRE.MatchString(r.Date):
		return fail("date", "a date YYYY-MM-DD")
	case r.Modified != "" && !dateRE.MatchString(r.Modified):
		return fail("modified", "a date YYYY-MM-DD")
	case r.Name != "" && strings.ContainsAny(r.Name, " \t\n"):
		return fail("name", "no spaces in a rule's name")
	}
	for i, t := range r.Tags {
		if !tagRE.MatchString(t) {
			return fail(fmt.Sprintf("tags[%d]", i), "a tag is namespace.name in lower case (%q)", t)
		}
	}
	return nil
}

func oneOf(s string, set []string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// str reads a scalar as a string (a date or number is taken as written).
func str(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fail(field, "a string")
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

func strList(n *yaml.Node, field string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return nil, nil
		}
		return []string{n.Value}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fail(field, "a list of strings")
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		s, err := str(c, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func parseRelated(n *yaml.Node) ([]Related, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fail("related", "a list of {id, type}")
	}
	var out []Related
	for i, c := range n.Content {
		f := fmt.Sprintf("related[%d]", i)
		if c.Kind != yaml.MappingNode {
			return nil, fail(f, "an {id, type} mapping")
		}
		var rel Related
		for j := 0; j+1 < len(c.Content); j += 2 {
			v, err := str(c.Content[j+1], f+"."+c.Content[j].Value)
			if err != nil {
				return nil, err
			}
			switch c.Content[j].Value {
			case "id":
				rel.ID = v
			case "type":
				rel.Type = v
			}
		}
		if !uuidRE.MatchString(rel.ID) {
			return nil, fail(f+".id", "not a UUID")
		}
		if !oneOf(rel.Type, relTypes) {
			return nil, fail(f+".type", "one of %s", strings.Join(relTypes, ", "))
		}
		out = append(out, rel)
	}
	return out, nil
}

func parseLogSource(n *yaml.Node) (LogSource, error) {
	var ls LogSource
	if n.Kind != yaml.MappingNode {
		return ls, fail("logsource", "a mapping of category, product, service")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		v, err := str(n.Content[i+1], "logsource."+k)
		if err != nil {
			return ls, err
		}
		switch k {
		case "category":
			ls.Category = v
		case "product":
			ls.Product = v
		case "service":
			ls.Service = v
		case "definition":
			ls.Definition = v
		}
	}
	if ls.Category == "" && ls.Product == "" && ls.Service == "" {
		return ls, fail("logsource", "needs a category, product or service")
	}
	return ls, nil
}

// parseDetection reads a detection (or filter) section at path.
func parseDetection(n *yaml.Node, path string) (*Detection, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fail(path, "a mapping of search identifiers and a condition")
	}
	d := &Detection{}
	values := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		switch k {
		case "condition":
			conds, err := strList(v, path+".condition")
			if err != nil {
				return nil, err
			}
			d.Conditions = conds
			continue
		case "timeframe":
			tf, err := str(v, path+".timeframe")
			if err != nil {
				return nil, err
			}
			d.Timeframe = tf
			continue
		}
		if len(d.Searches) == maxSearches {
			return nil, fail(path, "at most %d search identifiers", maxSearches)
		}
		if !identRE.MatchString(k) {
			return nil, fail(path+"."+k, "a search identifier is letters, digits and _")
		}
		for _, s := range d.Searches {
			if s.Name == k {
				return nil, fail(path+"."+k, "given twice")
			}
		}
		s, err := parseSearch(k, v, path+"."+k, &values)
		if err != nil {
			return nil, err
		}
		d.Searches = append(d.Searches, s)
	}
	if len(d.Conditions) == 0 {
		return nil, fail(path+".condition", "required")
	}
	if len(d.Searches) == 0 {
		return nil, fail(path, "needs at least one search identifier")
	}
	for i, c := range d.Conditions {
		f := path + ".condition"
		if len(d.Conditions) > 1 {
			f = fmt.Sprintf("%s[%d]", f, i)
		}
		if _, err := parseCondition(c); err != nil {
			return nil, fail(f, "%s", err.Error())
		}
	}
	return d, nil
}

var identRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

func parseSearch(name string, n *yaml.Node, path string, values *int) (*Search, error) {
	s := &Search{Name: name}
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return nil, fail(path, "an empty list")
		}
		// A list of maps (ORed) or a list of keywords; not both.
		if n.Content[0].Kind == yaml.MappingNode {
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if c.Kind != yaml.MappingNode {
					return nil, fail(p, "a list mixes maps and values")
				}
				m, err := parseMap(c, p, values)
				if err != nil {
					return nil, err
				}
				s.Maps = append(s.Maps, m)
			}
			return s, nil
		}
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			v, err := scalar(c, p)
			if err != nil {
				return nil, err
			}
			if v.Kind == KindNull {
				return nil, fail(p, "null is no keyword")
			}
			s.Keywords = append(s.Keywords, v)
		}
		if *values += len(s.Keywords); *values > maxValues {
			return nil, fail(path, "more than %d values in the rule", maxValues)
		}
		return s, nil
	case yaml.MappingNode:
		m, err := parseMap(n, path, values)
		if err != nil {
			return nil, err
		}
		s.Maps = [][]*Selection{m}
		return s, nil
	case yaml.ScalarNode:
		v, err := scalar(n, path)
		if err != nil {
			return nil, err
		}
		if v.Kind == KindNull {
			return nil, fail(path, "a search is a list or a map, not null")
		}
		s.Keywords = []Value{v}
		return s, nil
	}
	return nil, fail(path, "a search is a list or a map")
}

func parseMap(n *yaml.Node, path string, values *int) ([]*Selection, error) {
	if len(n.Content) == 0 {
		return nil, fail(path, "an empty map")
	}
	var out []*Selection
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := n.Content[i].Value, n.Content[i+1]
		p := path + "." + key
		parts := strings.Split(key, "|")
		sel := &Selection{Field: parts[0], Modifiers: parts[1:], Path: p}
		for _, m := range sel.Modifiers {
			if m == "" {
				return nil, fail(p, "an empty modifier")
			}
		}
		switch v.Kind {
		case yaml.SequenceNode:
			if len(v.Content) == 0 {
				return nil, fail(p, "an empty list of values")
			}
			for j, c := range v.Content {
				val, err := scalar(c, fmt.Sprintf("%s[%d]", p, j))
				if err != nil {
					return nil, err
				}
				if val.Kind == KindNull && len(v.Content) > 1 {
					return nil, fail(fmt.Sprintf("%s[%d]", p, j), "null cannot be part of a list of values: make it a selection of its own")
				}
				sel.Values = append(sel.Values, val)
			}
		default:
			val, err := scalar(v, p)
			if err != nil {
				return nil, err
			}
			sel.Values = []Value{val}
		}
		if *values += len(sel.Values); *values > maxValues {
			return nil, fail(path, "more than %d values in the rule", maxValues)
		}
		out = append(out, sel)
	}
	return out, nil
}

func scalar(n *yaml.Node, path string) (Value, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return Value{}, fail(path, "a value is a string, number, boolean or null")
	}
	switch n.Tag {
	case "!!null":
		return Value{Kind: KindNull}, nil
	case "!!int", "!!float":
		if _, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err != nil {
			// 0x1F, 0o17: take them as YAML reads them.
			var x int64
			if e := n.Decode(&x); e != nil {
				return Value{}, fail(path, "not a number: %q", n.Value)
			}
			return Value{Kind: KindNumber, Text: strconv.FormatInt(x, 10)}, nil
		}
		return Value{Kind: KindNumber, Text: n.Value}, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return Value{}, fail(path, "not a boolean: %q", n.Value)
		}
		return Value{Kind: KindBool, Text: strconv.FormatBool(b)}, nil
	}
	return Value{Kind: KindString, Text: n.Value}, nil
}

// Filter is a Sigma filter rule: an exception applied to the rules it
// names.
type Filter struct {
	Rules     []string
	Detection *Detection
}

func parseFilter(n *yaml.Node) (*Filter, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fail("filter", "a mapping of rules, selections and a condition")
	}
	f := &Filter{}
	det := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "rules" {
			rs, err := strList(v, "filter.rules")
			if err != nil {
				return nil, err
			}
			f.Rules = rs
			continue
		}
		det.Content = append(det.Content, k, v)
	}
	if len(f.Rules) == 0 {
		return nil, fail("filter.rules", "required: the rules (ids or names) the filter applies to")
	}
	d, err := parseDetection(det, "filter")
	if err != nil {
		return nil, err
	}
	f.Detection = d
	return f, nil
}

// Names reports whether the filter applies to rule r: it names r's id
// or name.
func (f *Filter) Names(r *Rule) bool {
	for _, ref := range f.Rules {
		if ref != "" && (ref == r.ID || ref == r.Name) {
			return true
		}
	}
	return false
}
