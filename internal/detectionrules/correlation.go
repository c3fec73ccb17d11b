package detectionrules

import (
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/sigma"
)

// corrBase is a base rule of a correlation: the compiled rule and how
// the correlation names it (its id or name, for aliases and members).
type corrBase struct {
	ref  string
	rule *sigma.Compiled
}

// corrDetector is a Sigma correlation rule as a detector: a base rule's
// match is a signal keyed by the group-by values, counted in the store's
// window of the rule's timespan, which fires at the threshold (a count of
// events, of distinct values of a field, or of distinct base rules), and
// whose burst grows one observation, as a built-in detector's does.
type corrDetector struct {
	name    string
	c       *sigma.CompiledCorrelation
	bases   []corrBase
	typ     string
	sev     string
	ruleRef string
	local   string // the local-source policy (detect.LocalReport or LocalIgnore)
}

func newCorrDetector(id string, c *sigma.CompiledCorrelation, bases []corrBase, local string) *corrDetector {
	r := c.Rule
	return &corrDetector{name: DetectorPrefix + id, c: c, bases: bases, typ: ObservationType(r.Tags), sev: Severity(r.Level), ruleRef: ruleRef(id, r), local: local}
}

func (d *corrDetector) Name() string { return d.name }

func (d *corrDetector) Window() detect.Window {
	w := detect.Window{Span: d.c.Rule.Correlation.Timespan, MinCount: 1}
	switch d.c.Rule.Correlation.Type {
	case "event_count":
		w.MinCount = d.c.Threshold
	case "temporal_ordered": // every base rule, in the order named
		w.MinDistinct = d.c.Threshold
		w.Order = d.c.Rule.Correlation.Rules
	default: // value_count, temporal: distinct members
		w.MinDistinct = d.c.Threshold
	}
	return w
}

// Signals returns one signal when a base rule matches ev and ev has every
// group-by field: keyed by their values, the member the field's value
// (value_count) or the base rule (temporal, temporal_ordered). A group-by
// acting address is keyed as the built-in detectors key it
// (actingAddress): a local source's value is "127.0.0.1 on web-01".
func (d *corrDetector) Signals(ev *detect.Event) []vigil.Signal {
	sev := sigmaEvent(ev)
	var hit *corrBase
	for i := range d.bases {
		if d.bases[i].rule.Match(&sev) {
			hit = &d.bases[i]
			break
		}
	}
	if hit == nil {
		return nil
	}
	values := make([]string, 0, len(d.c.GroupBy))
	var keys []vigil.NodeRef
	for _, g := range d.c.GroupBy {
		field, ok := g[hit.ref]
		if !ok {
			field = g[""]
		}
		v := fieldString(ev.Fields, field)
		if v == "" {
			return nil // not of any group
		}
		if actingAddress(field, v) {
			k, refs, ok := detect.SourceKey(ev.Fields, v, d.local)
			if !ok {
				return nil
			}
			values, keys = append(values, k), append(keys, refs...)
			continue
		}
		values = append(values, v)
		if typ, ok := nodeFieldType(field); ok {
			if t, val := parse.NodeOf(typ, v); val != "" {
				keys = append(keys, vigil.NodeRef{Type: t, Value: val, Key: true})
			}
		}
	}
	sg := vigil.Signal{Key: strings.Join(values, " "), Nodes: vigil.MergeNodeRefs(keys, parse.Nodes(ev.Fields))}
	switch d.c.Rule.Correlation.Type {
	case "value_count":
		if sg.Member = fieldString(ev.Fields, d.c.Field); sg.Member == "" {
			return nil
		}
	case "temporal", "temporal_ordered":
		sg.Member = hit.ref
	}
	return []vigil.Signal{sg}
}

// fieldString is a field's value as text (the first of a list).
func fieldString(f parse.Event, field string) string {
	switch v := f[field].(type) {
	case string:
		return v
	case []string:
		if len(v) > 0 {
			return v[0]
		}
	case nil:
		return ""
	default:
		return toString(v)
	}
	return ""
}

func toString(v any) string {
	switch x := v.(type) {
	case int64:
		return itoa(int(x))
	case int:
		return itoa(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return ""
}

// nodeFieldType is the node type of the entities a group-by field
// names, if any.
func nodeFieldType(field string) (string, bool) {
	switch {
	case strings.HasSuffix(field, ".ip"):
		return vigil.NodeIP, true
	case field == "user.name" || field == "user.target.name":
		return vigil.NodeUser, true
	case field == "host.name" || field == "host.hostname":
		return vigil.NodeHost, true
	case field == "dns.question.name" || strings.HasSuffix(field, ".domain"):
		return vigil.NodeDomain, true
	}
	return "", false
}

// Describe says what the correlation counted.
func (d *corrDetector) Describe(key string, w vigil.WindowState) vigil.Finding {
	c := d.c.Rule.Correlation
	var what string
	switch c.Type {
	case "event_count":
		what = itoa(w.Count) + " matching events"
	case "value_count":
		what = itoa(w.Distinct) + " distinct " + c.Field + " values (" + strings.Join(w.Members, ", ") + ")"
	case "temporal":
		what = itoa(w.Distinct) + " of its rules matched (" + strings.Join(w.Members, ", ") + ")"
	case "temporal_ordered":
		what = "its " + itoa(len(c.Rules)) + " rules matched in order (" + strings.Join(c.Rules, ", then ") + ")"
	}
	desc := "Sigma correlation " + d.ruleRef + ": " + what
	if key != "" {
		desc += " for " + key
	}
	desc += " within " + c.Timespan.String() + ", " + w.First.UTC().Format(time.RFC3339)
	if w.Last.After(w.First) {
		desc += " – " + w.Last.UTC().Format(time.RFC3339)
	}
	return vigil.Finding{Type: d.typ, Severity: d.sev, Title: d.c.Rule.Title, Description: desc, Rollup: "Sigma: " + d.c.Rule.Title}
}
