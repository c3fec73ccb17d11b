package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// Classification rules: the list, and an editor that previews which open
// incidents a rule would match before it is saved.

func (c *Console) ruleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /rules", c.authed(vigil.PermSignalsRead, c.rules))
	mux.HandleFunc("GET /rules/new", c.authed(vigil.PermSignalsWrite, c.ruleNew))
	mux.HandleFunc("GET /rules/{id}", c.authed(vigil.PermSignalsRead, c.ruleEdit))
	mux.HandleFunc("POST /rules", c.authed(vigil.PermSignalsRead, c.ruleSubmit))
	mux.HandleFunc("POST /rules/conditions", c.authed(vigil.PermSignalsRead, c.ruleConditions))
	mux.HandleFunc("POST /rules/{id}/delete", c.authed(vigil.PermSignalsManage, c.ruleDelete))
}

type rulesView struct {
	Rules []*vigil.Rule
	Saved string
}

func (c *Console) rules(w http.ResponseWriter, r *http.Request, s *session) {
	var list struct {
		Rules []*vigil.Rule `json:"rules"`
	}
	p := page{Title: "Classification rules", Nav: "rules"}
	if _, err := c.call(r, s.token, "GET", "/v1/classification-rules", url.Values{"limit": {"1000"}}, nil, &list); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	p.Data = rulesView{Rules: list.Rules, Saved: r.URL.Query().Get("saved")}
	c.render(w, r, http.StatusOK, "rules", p)
}

// ruleForm is the editor's fields as typed.
type ruleForm struct {
	ID, Name, Priority, Severity, Conditions string
	Enabled, TargetInfrastructure            bool
	// Cond is Conditions as rows, when it is a list of conditions.
	Cond condForm
}

// withConditions returns f with its conditions set to cond, in both of
// the editor's forms.
func (f ruleForm) withConditions(cond string) ruleForm {
	f.Conditions, f.Cond = cond, formOf(cond)
	return f
}

type ruleEditView struct {
	Form    ruleForm
	Err     *apiError
	Preview *rulePreview
}

type rulePreview struct {
	Matches       []previewMatch `json:"matches"`
	Matched       int            `json:"matched"`
	Scanned       int            `json:"scanned"`
	OpenIncidents int            `json:"open_incidents"`
	Severity      string         `json:"severity"`
	Closed        struct {
		Matches         []previewMatch `json:"matches"`
		Matched         int            `json:"matched"`
		Scanned         int            `json:"scanned"`
		ClosedIncidents int            `json:"closed_incidents"`
		Since           time.Time      `json:"since"`
	} `json:"closed"`
}

// previewMatch is an incident a previewed rule matches.
type previewMatch struct {
	ID         string         `json:"id"`
	Title      string         `json:"title"`
	Severity   string         `json:"severity"`
	Status     int            `json:"status"`
	Decides    bool           `json:"decides"`
	ShadowedBy *vigil.RuleRef `json:"shadowed_by"`
}

// previewTable is one table of a preview: its matches, the severity the
// rule sets, and the table's id.
type previewTable struct {
	Matches      []previewMatch
	Severity, ID string
}

const exampleConditions = `{"all": [
  {"field": "observation.type", "op": "eq", "value": "auth"},
  {"field": "incident.artifact_count", "op": "gte", "value": 20}
]}`

func (c *Console) ruleNew(w http.ResponseWriter, r *http.Request, s *session) {
	f := ruleForm{Priority: "100", Severity: vigil.SeverityHigh, Enabled: true}.withConditions(exampleConditions)
	c.render(w, r, http.StatusOK, "rule", page{Title: "New rule", Nav: "rules", Data: ruleEditView{Form: f}})
}

func (c *Console) ruleEdit(w http.ResponseWriter, r *http.Request, s *session) {
	var rule vigil.Rule
	if _, err := c.call(r, s.token, "GET", "/v1/classification-rules/"+url.PathEscape(r.PathValue("id")), nil, nil, &rule); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	var cond strings.Builder
	var v any
	if json.Unmarshal(rule.Conditions, &v) == nil {
		b, _ := json.MarshalIndent(v, "", "  ")
		cond.Write(b)
	}
	f := ruleForm{ID: rule.ID, Name: rule.Name, Priority: strconv.Itoa(rule.Priority), Severity: rule.Severity,
		Enabled: rule.Enabled, TargetInfrastructure: rule.TargetInfrastructure}.withConditions(cond.String())
	c.render(w, r, http.StatusOK, "rule", page{Title: "Rule " + rule.Name, Nav: "rules", Data: ruleEditView{Form: f}})
}

// ruleSubmit previews or saves the editor's rule. Fields the console
// cannot even send (a priority that is no number, conditions that are
// no JSON) are named as the API names its own.
func (c *Console) ruleSubmit(w http.ResponseWriter, r *http.Request, s *session) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	pf := r.PostForm
	f := ruleForm{ID: pf.Get("id"), Name: pf.Get("name"), Priority: strings.TrimSpace(pf.Get("priority")), Severity: pf.Get("severity"),
		Enabled: pf.Get("enabled") != "", TargetInfrastructure: pf.Get("target_infrastructure") != ""}.withConditions(postedConditions(pf))
	v := ruleEditView{Form: f}
	title := "New rule"
	if f.ID != "" {
		title = "Rule " + f.Name
	}
	show := func(status int) {
		c.render(w, r, status, "rule", page{Title: title, Nav: "rules", Data: v})
	}
	// A row added or removed without script: the form again, nothing sent.
	if a := pf.Get("action"); a == "add" || strings.HasPrefix(a, "remove:") {
		rows := postedRows(pf)
		if a == "add" {
			rows = append(rows, condRow{Op: "eq"})
		} else if i, err := strconv.Atoi(strings.TrimPrefix(a, "remove:")); err == nil && i >= 0 && i < len(rows) {
			rows = append(rows[:i], rows[i+1:]...)
		}
		v.Form = f.withConditions(conditionsOf(pf.Get("match"), rows))
		v.Form.Cond.Rows = rows // an empty row stays to be filled
		show(http.StatusOK)
		return
	}
	body := map[string]any{"name": f.Name, "enabled": f.Enabled, "target_infrastructure": f.TargetInfrastructure}
	if f.Severity != "" {
		body["severity"] = f.Severity
	}
	var local []fieldIssue
	if n, err := strconv.Atoi(f.Priority); err != nil {
		local = append(local, fieldIssue{Field: "priority", Issue: "must be a whole number"})
	} else {
		body["priority"] = n
	}
	if strings.TrimSpace(f.Conditions) == "" {
		body["conditions"] = json.RawMessage("{}")
	} else if !json.Valid([]byte(f.Conditions)) {
		local = append(local, fieldIssue{Field: "conditions", Issue: "is not valid JSON"})
	} else {
		body["conditions"] = json.RawMessage(f.Conditions)
	}
	if len(local) > 0 {
		v.Err = &apiError{Status: http.StatusBadRequest, Message: "The rule has invalid fields", Details: local}
		show(http.StatusBadRequest)
		return
	}
	var err error
	switch {
	case pf.Get("action") == "preview":
		if !s.Can(vigil.PermIncidentsRead) {
			c.renderError(w, r, s, http.StatusForbidden, "A preview lists incidents: your token lacks incidents:read.")
			return
		}
		if f.ID != "" {
			body["id"] = f.ID
		}
		var pv rulePreview
		if _, err = c.call(r, s.token, "POST", "/v1/classification-rules/preview", nil, body, &pv); err == nil {
			v.Preview = &pv
			show(http.StatusOK)
			return
		}
	case f.ID == "":
		_, err = c.call(r, s.token, "POST", "/v1/classification-rules", nil, body, nil)
	default:
		_, err = c.call(r, s.token, "PUT", "/v1/classification-rules/"+url.PathEscape(f.ID), nil, body, nil)
	}
	if err != nil {
		if c.expired(w, r, err) {
			return
		}
		ae, ok := err.(*apiError)
		if !ok {
			c.apiFailed(w, r, s, err)
			return
		}
		v.Err = ae
		show(ae.Status)
		return
	}
	http.Redirect(w, r, "/rules?"+url.Values{"saved": {f.Name}}.Encode(), http.StatusSeeOther)
}

// postedRows returns the condition rows of a posted rule form.
func postedRows(pf url.Values) []condRow {
	fields, ops, values := pf["cond_field"], pf["cond_op"], pf["cond_value"]
	var rows []condRow
	for i := range fields {
		r := condRow{Field: fields[i]}
		if i < len(ops) {
			r.Op = ops[i]
		}
		if i < len(values) {
			r.Value = values[i]
		}
		rows = append(rows, r)
	}
	return rows
}

// postedConditions returns the conditions of a posted rule form: the JSON
// when it was changed from what the page showed (an expert's edit, or the
// page's script writing the rows into it), when the rows could not show
// it, or when none was sent (a reader's form has them disabled), else
// what the rows say.
func postedConditions(pf url.Values) string {
	if _, rows := pf["cond_field"]; !rows {
		return pf.Get("conditions")
	}
	// A browser sends a textarea's line breaks as CRLF.
	norm := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
	typed, shown := pf.Get("conditions"), pf.Get("conditions_shown")
	if formOf(shown).Complex || norm(typed) != norm(shown) {
		return typed
	}
	return conditionsOf(pf.Get("match"), postedRows(pf))
}

// ruleConditions is the page script's way of keeping the two editors of
// the conditions in step: given the form and which editor changed (from
// rows or json), it answers the conditions block drawn again from it.
func (c *Console) ruleConditions(w http.ResponseWriter, r *http.Request, s *session) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return
	}
	cond := r.PostForm.Get("conditions")
	if r.PostForm.Get("from") == "rows" {
		cond = conditionsOf(r.PostForm.Get("match"), postedRows(r.PostForm))
	}
	f := ruleForm{}.withConditions(cond)
	c.renderFragment(w, "rule", "conditions", page{S: s, Data: ruleEditView{Form: f}})
}

func (c *Console) ruleDelete(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := c.call(r, s.token, "DELETE", "/v1/classification-rules/"+url.PathEscape(r.PathValue("id")), nil, nil, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/rules", http.StatusSeeOther)
}
