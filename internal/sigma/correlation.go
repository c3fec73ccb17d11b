package sigma

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Correlation is a Sigma correlation rule's section: base rules (by id or
// name) whose matches are counted per group-by values within timespan.
type Correlation struct {
	Type     string
	Rules    []string
	GroupBy  []string
	Timespan time.Duration
	// Condition: the count (event_count), distinct values of Field
	// (value_count) or distinct rules (temporal*) must meet every bound.
	Condition []Bound
	Field     string
	// Aliases map an alias used in GroupBy to each base rule's field.
	Aliases  map[string]map[string]string
	Generate bool
}

// Bound is one criterion of a correlation's condition.
type Bound struct {
	Op    string // gt, gte, lt, lte, eq, neq
	Value float64
}

// Holds reports whether n meets the bound.
func (b Bound) Holds(n float64) bool {
	switch b.Op {
	case "gt":
		return n > b.Value
	case "gte":
		return n >= b.Value
	case "lt":
		return n < b.Value
	case "lte":
		return n <= b.Value
	case "eq":
		return n == b.Value
	}
	return n != b.Value
}

var (
	correlationTypes = []string{"event_count", "value_count", "temporal", "temporal_ordered", "value_sum", "value_avg", "value_percentile"}
	timespanRE       = regexp.MustCompile(`^([1-9][0-9]{0,6})([smhd])$`)
)

// MaxTimespan bounds a correlation's window: windows live in the store.
const MaxTimespan = 7 * 24 * time.Hour

func parseCorrelation(n *yaml.Node) (*Correlation, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fail("correlation", "a mapping of type, rules, group-by, timespan and condition")
	}
	c := &Correlation{}
	var cond *yaml.Node
	var err error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		f := "correlation." + k
		switch k {
		case "type":
			c.Type, err = str(v, f)
		case "rules":
			c.Rules, err = strList(v, f)
		case "group-by":
			c.GroupBy, err = strList(v, f)
		case "timespan":
			var s string
			if s, err = str(v, f); err == nil {
				c.Timespan, err = parseTimespan(s, f)
			}
		case "condition":
			cond = v
		case "generate":
			err = v.Decode(&c.Generate)
			if err != nil {
				err = fail(f, "true or false")
			}
		case "aliases":
			c.Aliases, err = parseAliases(v)
		default:
			err = fail(f, "unknown attribute")
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case !oneOf(c.Type, correlationTypes):
		return nil, fail("correlation.type", "one of %s", strings.Join(correlationTypes, ", "))
	case len(c.Rules) == 0:
		return nil, fail("correlation.rules", "required: the base rules' ids or names")
	case c.Timespan == 0:
		return nil, fail("correlation.timespan", "required: a number and s, m, h or d (5m)")
	}
	temporal := c.Type == "temporal" || c.Type == "temporal_ordered"
	if cond == nil {
		if !temporal {
			return nil, fail("correlation.condition", "required for %s", c.Type)
		}
		// Temporal: every rule must have matched.
		c.Condition = []Bound{{Op: "gte", Value: float64(len(c.Rules))}}
		return c, nil
	}
	if cond.Kind != yaml.MappingNode {
		return nil, fail("correlation.condition", "a mapping such as gte: 5")
	}
	for i := 0; i+1 < len(cond.Content); i += 2 {
		k, v := cond.Content[i].Value, cond.Content[i+1]
		f := "correlation.condition." + k
		if k == "field" {
			if c.Field, err = str(v, f); err != nil {
				return nil, err
			}
			continue
		}
		if !oneOf(k, []string{"gt", "gte", "lt", "lte", "eq", "neq"}) {
			return nil, fail(f, "unknown criterion: gt, gte, lt, lte, eq, neq or field")
		}
		x, perr := strconv.ParseFloat(v.Value, 64)
		if v.Kind != yaml.ScalarNode || perr != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fail(f, "a number")
		}
		c.Condition = append(c.Condition, Bound{Op: k, Value: x})
	}
	if len(c.Condition) == 0 {
		return nil, fail("correlation.condition", "needs a criterion (gte: 5)")
	}
	needsField := strings.HasPrefix(c.Type, "value_")
	if needsField && c.Field == "" {
		return nil, fail("correlation.condition.field", "required for %s", c.Type)
	}
	if !needsField && c.Field != "" {
		return nil, fail("correlation.condition.field", "only value_* correlations take a field")
	}
	return c, nil
}

func parseTimespan(s, field string) (time.Duration, error) {
	m := timespanRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fail(field, "a number and s, m, h or d (5m), not %q", s)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	d := time.Duration(n) * unit
	if d > MaxTimespan {
		return 0, fail(field, "at most %s", MaxTimespan)
	}
	return d, nil
}

func parseAliases(n *yaml.Node) (map[string]map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fail("correlation.aliases", "a mapping of alias to {rule: field}")
	}
	out := map[string]map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		alias, v := n.Content[i].Value, n.Content[i+1]
		f := "correlation.aliases." + alias
		if v.Kind != yaml.MappingNode {
			return nil, fail(f, "a mapping of rule to field")
		}
		m := map[string]string{}
		for j := 0; j+1 < len(v.Content); j += 2 {
			field, err := str(v.Content[j+1], fmt.Sprintf("%s.%s", f, v.Content[j].Value))
			if err != nil {
				return nil, err
			}
			m[v.Content[j].Value] = field
		}
		out[alias] = m
	}
	return out, nil
}

// CompiledCorrelation is a correlation rule whose fields are mapped to
// Vigil's; its base rules are resolved by the rule set it joins.
type CompiledCorrelation struct {
	Rule *Rule
	// GroupBy are the ECS fields of each group-by entry, per base rule
	// when an alias maps it ("" key: every rule).
	GroupBy []map[string]string
	// Field is the ECS field whose distinct values value_count counts.
	Field string
	// Threshold is the count (event_count), distinct values
	// (value_count) or distinct base rules (temporal; temporal_ordered:
	// all of them, in order) at which the correlation fires: a window
	// fires when it reaches a bound.
	Threshold int
}

// CompileCorrelation maps a correlation rule's fields onto Vigil's and
// refuses what the store's windows cannot evaluate.
func CompileCorrelation(r *Rule) (*CompiledCorrelation, error) {
	c := r.Correlation
	if c == nil {
		return nil, fail("correlation", "not a correlation rule")
	}
	switch c.Type {
	case "value_sum", "value_avg", "value_percentile":
		return nil, fail("correlation.type", "%s is not supported: Vigil's detection windows count events and distinct values, they keep no sums or distributions", c.Type)
	}
	cc := &CompiledCorrelation{Rule: r}
	// A window fires when its count reaches a lower bound: gte N, or gt N
	// (N+1). An upper bound (lt, lte, eq, neq) would fire on quiet
	// windows, which the windows, fed by matches only, never see.
	if len(c.Condition) != 1 || (c.Condition[0].Op != "gte" && c.Condition[0].Op != "gt") {
		return nil, fail("correlation.condition", "Vigil fires a correlation when its count reaches a bound: one gte or gt criterion")
	}
	b := c.Condition[0]
	n := int(math.Ceil(b.Value))
	if b.Op == "gt" {
		n = int(math.Floor(b.Value)) + 1
	}
	if n < 1 || n > 1_000_000 {
		return nil, fail("correlation.condition."+b.Op, "a bound between 1 and 1000000")
	}
	cc.Threshold = n
	if c.Type == "temporal_ordered" {
		if n != len(c.Rules) {
			return nil, fail("correlation.condition."+b.Op, "temporal_ordered fires when all %d of its rules matched in order: leave the condition out or make it gte: %d", len(c.Rules), len(c.Rules))
		}
		for i, r := range c.Rules {
			if slices.Index(c.Rules, r) != i {
				return nil, fail(fmt.Sprintf("correlation.rules[%d]", i), "%q is named twice: temporal_ordered names each rule once", r)
			}
		}
	}
	for i, g := range c.GroupBy {
		f := fmt.Sprintf("correlation.group-by[%d]", i)
		if alias, ok := c.Aliases[g]; ok {
			m := map[string]string{}
			for rule, field := range alias {
				ecs, ok := mapCorrelationField(field)
				if !ok {
					return nil, fail("correlation.aliases."+g+"."+rule, "unknown field %q with no mapping to Vigil's ECS fields", field)
				}
				m[rule] = ecs
			}
			cc.GroupBy = append(cc.GroupBy, m)
			continue
		}
		ecs, ok := mapCorrelationField(g)
		if !ok {
			return nil, fail(f, "unknown field %q with no mapping to Vigil's ECS fields", g)
		}
		cc.GroupBy = append(cc.GroupBy, map[string]string{"": ecs})
	}
	if c.Field != "" {
		ecs, ok := mapCorrelationField(c.Field)
		if !ok {
			return nil, fail("correlation.condition.field", "unknown field %q with no mapping to Vigil's ECS fields", c.Field)
		}
		cc.Field = ecs
	}
	return cc, nil
}
