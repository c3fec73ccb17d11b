package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// page is what every template gets: the layout's parts and the screen's
// own Data.
type page struct {
	Title string
	Nav   string // the active tab
	S     *session
	Flash string
	Err   error
	Data  any
}

// APIError returns Err when the API refused the request (for the fields
// it names), else nil.
func (p page) APIError() *apiError {
	var ae *apiError
	if errors.As(p.Err, &ae) {
		return ae
	}
	return nil
}

// views holds one template set per screen, each with the layout.
type views struct{ pages map[string]*template.Template }

var screens = []string{"signin", "signedin", "error", "queue", "incident", "search", "observations", "rules", "rule", "roles", "settings", "detections", "detection", "audit"}

func loadViews() (*views, error) {
	v := &views{pages: map[string]*template.Template{}}
	for _, name := range screens {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		v.pages[name] = t
	}
	return v, nil
}

// render writes a whole page, or a readable error if the template fails:
// never a blank or half-written page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if p.S == nil {
		p.S, _ = r.Context().Value(sessionKey{}).(*session)
	}
	var buf bytes.Buffer
	if err := c.views.pages[name].Execute(&buf, p); err != nil {
		c.log.Error("console: render", "page", name, "error", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "The %s page could not be drawn; the error is logged.\n", name)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// renderFragment writes one template of a screen alone (the queue's rows
// a poll asks for).
func (c *Console) renderFragment(w http.ResponseWriter, name, tmpl string, data any) {
	var buf bytes.Buffer
	if err := c.views.pages[name].ExecuteTemplate(&buf, tmpl, data); err != nil {
		c.log.Error("console: render fragment", "page", name, "error", err)
		http.Error(w, "fragment failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// renderError shows msg on a page of its own with the navigation, so
// that a failure is read, not a blank screen.
func (c *Console) renderError(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	c.render(w, r, status, "error", page{Title: http.StatusText(status), S: s, Data: msg})
}

// apiFailed shows an API error that stops a page; a 401 sends the user to
// sign in again.
func (c *Console) apiFailed(w http.ResponseWriter, r *http.Request, s *session, err error) {
	if c.expired(w, r, err) {
		return
	}
	status := http.StatusBadGateway
	var ae *apiError
	if errors.As(err, &ae) {
		status = ae.Status
		msg := ae.Message
		for _, d := range ae.Details {
			msg += " — " + d.Field + ": " + d.Issue
		}
		c.renderError(w, r, s, status, msg)
		return
	}
	c.log.Error("console: API call", "error", err)
	c.renderError(w, r, s, status, "The console could not read the API's answer; the error is logged.")
}

var funcs = template.FuncMap{
	"statusName": vigil.StatusName,
	"classification": func(status int) string {
		switch c := vigil.StatusClassification(status); {
		case c == nil:
			return ""
		case *c == vigil.TruePositive:
			return "true positive"
		default:
			return "false positive"
		}
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago":  ago,
	"span": span,
	// window says from when to when a roll-up's window runs.
	"window":    func(from, to time.Time) string { return span(&from, &to) },
	"thousands": vigil.Thousands,
	"statuses": func() []int {
		return []int{vigil.StatusNew, vigil.StatusInvestigating, vigil.StatusResolved, vigil.StatusClosed, vigil.StatusDisrupted}
	},
	"severities": func() []string {
		return []string{vigil.SeverityLow, vigil.SeverityMedium, vigil.SeverityHigh, vigil.SeverityCritical}
	},
	"jsonIndent": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return ""
		}
		return string(b)
	},
	"add":   func(a, b int) int { return a + b },
	"list":  func(xs ...string) []string { return xs },
	"deref": func(b *bool) bool { return b != nil && *b },
	"lower": strings.ToLower,
	"join":  strings.Join,
	"previewRows": func(ms []previewMatch, severity, id string) previewTable {
		return previewTable{Matches: ms, Severity: severity, ID: id}
	},
}

// span says from when to when something happened (UTC), as briefly as
// it reads unambiguously: one time, one day's times, or two times.
func span(first, last *time.Time) string {
	switch {
	case first == nil || last == nil:
		return ""
	case first.Equal(*last):
		return first.UTC().Format("2006-01-02 15:04:05Z")
	case first.UTC().Format("2006-01-02") == last.UTC().Format("2006-01-02"):
		return first.UTC().Format("2006-01-02 15:04:05") + "–" + last.UTC().Format("15:04:05Z")
	}
	return first.UTC().Format("2006-01-02 15:04:05Z") + " – " + last.UTC().Format("2006-01-02 15:04:05Z")
}

// ago says how long before now t was, in the largest whole unit.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case t.IsZero():
		return ""
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}
