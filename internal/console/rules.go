package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil"
)

// Classification rules: the list, and an editor that previews which open
// incidents a rule would match before it is saved.

func (c *Console) ruleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /rules", c.authed(vigil.PermSignalsRead, c.rules))
	mux.HandleFunc("GET /rules/new", c.authed(vigil.PermSignalsWrite, c.ruleNew))
	mux.HandleFunc("GET /rules/{id}", c.authed(vigil.PermSignalsRead, c.ruleEdit))
	mux.HandleFunc("POST /rules", c.authed(vigil.PermSignalsRead, c.ruleSubmit))
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
}

type ruleEditView struct {
	Form    ruleForm
	Err     *apiError
	Preview *rulePreview
}

type rulePreview struct {
	Matches []struct {
		ID         string         `json:"id"`
		Title      string         `json:"title"`
		Severity   string         `json:"severity"`
		Status     int            `json:"status"`
		Decides    bool           `json:"decides"`
		ShadowedBy *vigil.RuleRef `json:"shadowed_by"`
	} `json:"matches"`
	Matched       int    `json:"matched"`
	Scanned       int    `json:"scanned"`
	OpenIncidents int    `json:"open_incidents"`
	Severity      string `json:"severity"`
}

const exampleConditions = `{"all": [
  {"field": "observation.type", "op": "eq", "value": "auth"},
  {"field": "incident.artifact_count", "op": "gte", "value": 20}
]}`

func (c *Console) ruleNew(w http.ResponseWriter, r *http.Request, s *session) {
	f := ruleForm{Priority: "100", Severity: vigil.SeverityHigh, Enabled: true, Conditions: exampleConditions}
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
		Enabled: rule.Enabled, TargetInfrastructure: rule.TargetInfrastructure, Conditions: cond.String()}
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
		Enabled: pf.Get("enabled") != "", TargetInfrastructure: pf.Get("target_infrastructure") != "", Conditions: pf.Get("conditions")}
	v := ruleEditView{Form: f}
	title := "New rule"
	if f.ID != "" {
		title = "Rule " + f.Name
	}
	show := func(status int) {
		c.render(w, r, status, "rule", page{Title: title, Nav: "rules", Data: v})
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

func (c *Console) ruleDelete(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := c.call(r, s.token, "DELETE", "/v1/classification-rules/"+url.PathEscape(r.PathValue("id")), nil, nil, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/rules", http.StatusSeeOther)
}
