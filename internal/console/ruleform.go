package console

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/internal/rules"
)

// The conditions of a classification rule as a form: rows of field,
// operator and value, all or any of them. The JSON stays the rule's
// language; the form writes and reads the part of it that is a list of
// conditions, and says when a tree is more than that (nested all/any/not),
// which then is edited as JSON.

// condRow is one condition as the form shows it: the value as typed.
type condRow struct{ Field, Op, Value string }

// condForm is a rule's conditions as the form shows them.
type condForm struct {
	Match string // "all" or "any"
	Rows  []condRow
	// Complex: the conditions are more than the form can show; the rows
	// are left out and the JSON is the only editor.
	Complex bool
}

// Fields suggests the fields a row may name: the fixed ones, then
// examples of event fields (any ECS field of the parsed events may be
// named as event.<field>).
func (condForm) Fields() []string {
	return append(rules.IncidentFields(), "event.source.ip", "event.destination.ip", "event.destination.port",
		"event.user.name", "event.host.name", "event.rule.name", "event.dns.question.name", "event.url.domain")
}

// condOp is an operator and what it says, for the rows' choice.
type condOp struct{ Op, Label string }

// opLabels say what each operator tests, in words.
var opLabels = map[string]string{
	"eq": "is", "ne": "is not", "in": "is one of (a, b, …)", "contains": "contains", "prefix": "starts with",
	"suffix": "ends with", "regex": "matches the regex", "cidr": "is in the network (CIDR, …)", "gt": ">", "gte": "≥",
	"lt": "<", "lte": "≤", "exists": "exists (or: false)",
}

// condRowView is a row as the page draws it: its place (-1: the blank
// row the page's script copies), what it says, the operators offered,
// and whether it may be changed.
type condRowView struct {
	I        int
	R        condRow
	Ops      []condOp
	Writable bool
}

// Views returns the rows to draw; writable says whether they may change.
func (f condForm) Views(writable bool) []condRowView {
	out := make([]condRowView, len(f.Rows))
	for i, r := range f.Rows {
		out[i] = condRowView{I: i, R: r, Ops: ops(), Writable: writable}
	}
	return out
}

// Blank returns the row the page's script adds.
func (condForm) Blank() condRowView {
	return condRowView{I: -1, R: condRow{Op: "eq"}, Ops: ops(), Writable: true}
}

func ops() []condOp {
	var out []condOp
	for _, o := range rules.Operators() {
		out = append(out, condOp{Op: o, Label: opLabels[o] + " (" + o + ")"})
	}
	return out
}

// condLeaf is a leaf of the conditions language, as the form writes it.
type condLeaf struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	Value any    `json:"value,omitempty"`
}

// conditionsOf writes the conditions of rows joined by match ("any", else
// all): {} when no row names a field. A value is read by its operator:
// contains, prefix, suffix and regex take the text as it is; cidr and in
// take a list separated by commas (cidr a single address or prefix as
// such); exists takes false, else true; the others take a JSON number,
// true, false or "quoted text" as that, and any other text as a string.
func conditionsOf(match string, rows []condRow) string {
	if match != "any" {
		match = "all"
	}
	var leaves []string
	for _, r := range rows {
		f := strings.TrimSpace(r.Field)
		if f == "" {
			continue
		}
		l := condLeaf{Field: f, Op: r.Op}
		switch r.Op {
		case "contains", "prefix", "suffix", "regex":
			l.Value = r.Value
		case "cidr":
			items := splitList(r.Value)
			if len(items) == 1 {
				l.Value = items[0]
			} else {
				l.Value = items
			}
		case "in":
			var vs []any
			for _, it := range splitList(r.Value) {
				vs = append(vs, scalarOf(it))
			}
			l.Value = vs
		case "exists":
			if strings.TrimSpace(r.Value) == "false" {
				l.Value = false
			}
		default:
			l.Value = scalarOf(r.Value)
		}
		b, _ := marshalPlain(l)
		leaves = append(leaves, string(b))
	}
	if len(leaves) == 0 {
		return "{}"
	}
	return `{"` + match + `": [` + "\n  " + strings.Join(leaves, ",\n  ") + "\n]}"
}

// marshalPlain encodes v as JSON with spaces after colons and commas, as
// the form writes a condition, and without escaping <, > and &.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	b := bytes.TrimSpace(buf.Bytes())
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		out.WriteByte(c)
		switch {
		case in && c == '\\':
			i++
			out.WriteByte(b[i])
		case c == '"':
			in = !in
		case !in && (c == ':' || c == ','):
			out.WriteByte(' ')
		}
	}
	return out.Bytes(), nil
}

// splitList reads a list typed as items separated by commas.
func splitList(s string) []string {
	var out []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// scalarOf reads a typed value: a JSON number, true, false or "quoted
// text" as that, anything else as the text itself.
func scalarOf(s string) any {
	t := strings.TrimSpace(s)
	var v any
	if t != "" && json.Unmarshal([]byte(t), &v) == nil {
		switch v.(type) {
		case float64, bool, string:
			return v
		}
	}
	return s
}

// textOf writes a value so that scalarOf reads it back: text that would
// read as something else is quoted.
func textOf(v any) string {
	switch x := v.(type) {
	case string:
		if _, ok := scalarOf(x).(string); ok && scalarOf(x) == x && strings.TrimSpace(x) == x {
			return x
		}
		b, _ := json.Marshal(x)
		return string(b)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// formOf reads conditions (JSON) into the form: a list of conditions
// under all or any, a single condition, or {} (no row). Anything the rows
// would not write back the same (nesting, not, a list item holding a
// comma, a key besides field, op and value) is Complex.
func formOf(raw string) condForm {
	complex := condForm{Match: "all", Complex: true}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return condForm{Match: "all"}
	}
	var root any
	if json.Unmarshal([]byte(raw), &root) != nil {
		return complex
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return complex
	}
	f := condForm{Match: "all"}
	var leaves []any
	switch {
	case len(obj) == 0:
	case obj["field"] != nil:
		leaves = []any{obj}
	case len(obj) == 1 && (obj["all"] != nil || obj["any"] != nil):
		if obj["any"] != nil {
			f.Match = "any"
		}
		if leaves, ok = obj[f.Match].([]any); !ok {
			return complex
		}
	default:
		return complex
	}
	for _, x := range leaves {
		l, ok := x.(map[string]any)
		if !ok {
			return complex
		}
		field, _ := l["field"].(string)
		op, _ := l["op"].(string)
		if !slices.Contains(rules.Operators(), op) {
			return complex // the rows offer only the operators there are
		}
		row := condRow{Field: field, Op: op}
		switch v := l["value"].(type) {
		case bool:
			if op != "exists" || !v {
				row.Value = textOf(v)
			}
		case []any:
			items := make([]string, len(v))
			for i, it := range v {
				items[i] = textOf(it)
			}
			row.Value = strings.Join(items, ", ")
		case string:
			if op == "contains" || op == "prefix" || op == "suffix" || op == "regex" || op == "cidr" {
				row.Value = v
			} else {
				row.Value = textOf(v)
			}
		default:
			row.Value = textOf(v)
		}
		f.Rows = append(f.Rows, row)
	}
	if !sameConditions(conditionsOf(f.Match, f.Rows), raw) {
		return complex
	}
	return f
}

// sameConditions reports whether two conditions trees say the same, as
// the form writes them: a single condition is all of one, exists true is
// exists, a cidr of one prefix is that prefix.
func sameConditions(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(canonical(x), canonical(y))
}

func canonical(v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if obj["field"] != nil {
		obj = map[string]any{"all": []any{obj}}
	}
	for _, k := range []string{"all", "any"} {
		list, _ := obj[k].([]any)
		for _, x := range list {
			l, ok := x.(map[string]any)
			if !ok {
				continue
			}
			switch l["op"] {
			case "exists":
				if l["value"] == nil || l["value"] == true {
					delete(l, "value")
				}
			case "cidr":
				if one, ok := l["value"].([]any); ok && len(one) == 1 {
					l["value"] = one[0]
				}
			}
		}
	}
	return obj
}
