package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// Detection rules: the org's Sigma rules and the starter rules, each
// switched on or off; an editor that tests a rule over stored artifacts
// (yesterday's by default) or pasted lines before it is saved.

func (c *Console) detectionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /detections", c.authed(vigil.PermSignalsRead, c.detections))
	mux.HandleFunc("GET /detections/new", c.authed(vigil.PermSignalsRead, c.detectionNew))
	mux.HandleFunc("GET /detections/{id}", c.authed(vigil.PermSignalsRead, c.detectionEdit))
	mux.HandleFunc("POST /detections", c.authed(vigil.PermSignalsRead, c.detectionSubmit))
	mux.HandleFunc("POST /detections/{id}/{action}", c.authed(vigil.PermSignalsWrite, c.detectionSwitch))
	mux.HandleFunc("POST /starter-rules/{id}/{action}", c.authed(vigil.PermSignalsWrite, c.starterSwitch))
}

// detectionRule is a rule as the lists show it.
type detectionRule struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Kind      string    `json:"kind"`
	Level     string    `json:"level"`
	Enabled   bool      `json:"enabled"`
	Rule      string    `json:"rule"`
	Sources   []string  `json:"sources"`
	Origin    string    `json:"origin"`
	Author    string    `json:"author"`
	UpdatedAt time.Time `json:"updated_at"`
}

type detectionsView struct {
	Rules, Starter []detectionRule
	Saved          string
}

func (c *Console) detections(w http.ResponseWriter, r *http.Request, s *session) {
	var own struct {
		Rules []detectionRule `json:"detection_rules"`
	}
	var starter struct {
		Rules []detectionRule `json:"starter_rules"`
	}
	lim := url.Values{"limit": {"1000"}}
	if _, err := c.call(r, s.token, "GET", "/v1/detection-rules", lim, nil, &own); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	if _, err := c.call(r, s.token, "GET", "/v1/starter-rules", lim, nil, &starter); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "detections", page{Title: "Detection rules", Nav: "detections",
		Data: detectionsView{Rules: own.Rules, Starter: starter.Rules, Saved: r.URL.Query().Get("saved")}})
}

// detectionForm is the editor's fields as typed.
type detectionForm struct {
	ID, Rule, From, To, Source string
}

type detectionEditView struct {
	Form detectionForm
	Err  *apiError
	Test *detectionTest
}

type detectionTest struct {
	Matches []struct {
		ArtifactID string    `json:"artifact_id"`
		Source     string    `json:"source"`
		Timestamp  time.Time `json:"timestamp"`
		Raw        string    `json:"raw"`
	} `json:"matches"`
	Scanned    int  `json:"scanned"`
	Total      int  `json:"total"`
	NextOffset *int `json:"next_offset"`
}

const exampleDetection = `title: SSH login from an invalid user
level: low
tags:
    - attack.credential-access
logsource:
    product: linux
    service: sshd
detection:
    keywords:
        - 'Invalid user'
    condition: keywords
`

// yesterday is the default range of a test: the previous UTC day.
func yesterday(now time.Time) (from, to string) {
	day := now.UTC().Truncate(24 * time.Hour)
	return day.Add(-24 * time.Hour).Format(time.RFC3339), day.Format(time.RFC3339)
}

func (c *Console) detectionNew(w http.ResponseWriter, r *http.Request, s *session) {
	f := detectionForm{Rule: exampleDetection}
	f.From, f.To = yesterday(time.Now())
	c.render(w, r, http.StatusOK, "detection", page{Title: "New detection rule", Nav: "detections", Data: detectionEditView{Form: f}})
}

func (c *Console) detectionEdit(w http.ResponseWriter, r *http.Request, s *session) {
	var dr detectionRule
	if _, err := c.call(r, s.token, "GET", "/v1/detection-rules/"+url.PathEscape(r.PathValue("id")), nil, nil, &dr); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	f := detectionForm{ID: dr.ID, Rule: dr.Rule}
	f.From, f.To = yesterday(time.Now())
	c.render(w, r, http.StatusOK, "detection", page{Title: "Detection rule " + dr.Title, Nav: "detections", Data: detectionEditView{Form: f}})
}

// detectionSubmit tests the editor's rule over the org's artifacts in the
// range given, or saves it (created enabled; a saved rule keeps whether
// it is enabled).
func (c *Console) detectionSubmit(w http.ResponseWriter, r *http.Request, s *session) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	pf := r.PostForm
	f := detectionForm{ID: pf.Get("id"), Rule: pf.Get("rule"), From: strings.TrimSpace(pf.Get("from")),
		To: strings.TrimSpace(pf.Get("to")), Source: strings.TrimSpace(pf.Get("source"))}
	v := detectionEditView{Form: f}
	title := "New detection rule"
	if f.ID != "" {
		title = "Detection rule"
	}
	if pf.Get("action") == "test" {
		body := map[string]any{"rule": f.Rule, "from": f.From, "to": f.To, "limit": 1000}
		if f.Source != "" {
			body["source"] = f.Source
		}
		var t detectionTest
		_, err := c.call(r, s.token, "POST", "/v1/detection-rules/test", nil, body, &t)
		if c.formFailed(w, r, s, err, &v.Err) {
			return
		}
		if err == nil {
			v.Test = &t
		}
		c.render(w, r, statusOf(v.Err), "detection", page{Title: title, Nav: "detections", Data: v})
		return
	}
	if !s.Can(vigil.PermSignalsWrite) {
		c.renderError(w, r, s, http.StatusForbidden, "Saving a detection rule needs signals:write, which your token lacks.")
		return
	}
	method, path := "POST", "/v1/detection-rules"
	if f.ID != "" {
		method, path = "PUT", "/v1/detection-rules/"+url.PathEscape(f.ID)
	}
	var saved detectionRule
	_, err := c.callRaw(r, s.token, method, path, nil, "application/yaml", []byte(f.Rule), &saved)
	if c.formFailed(w, r, s, err, &v.Err) {
		return
	}
	if err != nil {
		c.render(w, r, statusOf(v.Err), "detection", page{Title: title, Nav: "detections", Data: v})
		return
	}
	http.Redirect(w, r, "/detections?saved="+url.QueryEscape(saved.Title), http.StatusSeeOther)
}

// formFailed sorts an API error of a form: one the user can correct
// (4xx but 401/403) goes into *into, to be shown above the form; any
// other is answered here, and formFailed returns true.
func (c *Console) formFailed(w http.ResponseWriter, r *http.Request, s *session, err error, into **apiError) bool {
	if err == nil {
		return false
	}
	if ae, ok := err.(*apiError); ok && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusUnauthorized && ae.Status != http.StatusForbidden {
		*into = ae
		return false
	}
	c.apiFailed(w, r, s, err)
	return true
}

func statusOf(e *apiError) int {
	if e != nil {
		return e.Status
	}
	return http.StatusOK
}

// detectionSwitch enables, disables or deletes one of the org's rules.
func (c *Console) detectionSwitch(w http.ResponseWriter, r *http.Request, s *session) {
	id, action := url.PathEscape(r.PathValue("id")), r.PathValue("action")
	var err error
	switch action {
	case "enable", "disable":
		_, err = c.call(r, s.token, "POST", "/v1/detection-rules/"+id+"/"+action, nil, nil, nil)
	case "delete":
		_, err = c.call(r, s.token, "DELETE", "/v1/detection-rules/"+id, nil, nil, nil)
	default:
		c.notFound(w, r)
		return
	}
	if err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/detections", http.StatusSeeOther)
}

// starterSwitch enables or disables a starter rule for the org.
func (c *Console) starterSwitch(w http.ResponseWriter, r *http.Request, s *session) {
	action := r.PathValue("action")
	if action != "enable" && action != "disable" {
		c.notFound(w, r)
		return
	}
	if _, err := c.call(r, s.token, "POST", "/v1/starter-rules/"+url.PathEscape(r.PathValue("id"))+"/"+action, nil, nil, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/detections#starter", http.StatusSeeOther)
}
