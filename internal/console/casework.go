package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/vigil-soc/vigil"
)

// Case work on the incident page: who works it, its tags, the analysts'
// comments, and its whole history (including the incidents merged into
// it); and "the incidents of this address" from any page.

func (c *Console) caseRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /incidents/{id}/case", c.authed(vigil.PermIncidentsWrite, c.saveCase))
	mux.HandleFunc("POST /incidents/{id}/comments", c.authed(vigil.PermIncidentsWrite, c.addComment))
	mux.HandleFunc("POST /incidents/{id}/comments/{comment}/delete", c.authed(vigil.PermIncidentsWrite, c.deleteComment))
	mux.HandleFunc("GET /nodes/incidents", c.authed(vigil.PermIncidentsRead, c.nodeIncidents))
}

// Bounds of one incident page's case work.
const (
	pageEvents   = 200
	pageComments = 100
)

type caseView struct {
	Events     []eventView
	MoreEvents int
	// MergedFrom are the incidents merged into this one.
	MergedFrom []string
	Comments   []commentView
	More       int // comments not shown
}

type eventView struct {
	vigil.IncidentEvent
	Text string
	Link string // an incident the event names, if any
}

type commentView struct {
	vigil.Comment
	HTML    template.HTML
	CanEdit bool
}

// loadCase reads the incident's history and comments for its page; what
// the token may not read is left empty, the error returned.
func (c *Console) loadCase(r *http.Request, s *session, id string) (caseView, error) {
	var v caseView
	var hist struct {
		Events []vigil.IncidentEvent `json:"events"`
		Total  int                   `json:"total"`
	}
	path := "/v1/incidents/" + url.PathEscape(id)
	if _, err := c.call(r, s.token, "GET", path+"/history", url.Values{"limit": {itoa(pageEvents)}}, nil, &hist); err != nil {
		return v, err
	}
	v.MoreEvents = hist.Total - len(hist.Events)
	for _, e := range hist.Events {
		ev := eventView{IncidentEvent: e, Text: describeEvent(e)}
		if from := e.Detail.MergedFrom; from != "" {
			v.MergedFrom = append(v.MergedFrom, from)
			ev.Link = from
		} else if into := e.Detail.MergedInto; into != "" {
			ev.Link = into
		}
		v.Events = append(v.Events, ev)
	}
	var comments struct {
		Comments []vigil.Comment `json:"comments"`
		Total    int             `json:"total"`
	}
	if _, err := c.call(r, s.token, "GET", path+"/comments", url.Values{"limit": {itoa(pageComments)}}, nil, &comments); err != nil {
		return v, err
	}
	v.More = comments.Total - len(comments.Comments)
	admin := s.Can(vigil.PermAdmin)
	for _, cm := range comments.Comments {
		v.Comments = append(v.Comments, commentView{Comment: cm, HTML: renderMarkdown(cm.Body),
			CanEdit: s.Can(vigil.PermIncidentsWrite) && (admin || cm.Author == s.Me.Subject)})
	}
	return v, nil
}

// describeEvent says what an event changed, after its actor's name.
func describeEvent(e vigil.IncidentEvent) string {
	d := e.Detail
	switch e.Type {
	case vigil.EventCreated:
		return "opened it" + via(e)
	case vigil.EventGrew:
		return fmt.Sprintf("grew it to %d artifacts%s", e.ArtifactCount, via(e))
	case vigil.EventMerged:
		if d.MergedFrom != "" {
			return "merged into it the incident"
		}
		return "merged it into the incident"
	case vigil.EventStatusChanged:
		return "moved it from " + vigil.StatusName(d.FromStatus) + " to " + vigil.StatusName(d.ToStatus)
	case vigil.EventClassified:
		rule := "no rule (back to the computed severity)"
		if d.Rule != nil {
			rule = "rule " + d.Rule.Name
		}
		return fmt.Sprintf("set its severity from %s to %s by %s", d.SeverityFrom, d.SeverityTo, rule)
	case vigil.EventAssigned:
		if d.AssigneeTo == nil || *d.AssigneeTo == "" {
			return "unassigned it"
		}
		return "assigned it to " + *d.AssigneeTo
	case vigil.EventTagged:
		var parts []string
		for _, t := range d.TagsAdded {
			parts = append(parts, "+"+t)
		}
		for _, t := range d.TagsRemoved {
			parts = append(parts, "−"+t)
		}
		return "tagged it " + strings.Join(parts, " ")
	case vigil.EventCommented:
		return "commented"
	case vigil.EventCommentEdited:
		return "edited a comment"
	case vigil.EventCommentDeleted:
		return "deleted a comment"
	case vigil.EventObservationUpdated:
		return "edited one of its observations"
	case vigil.EventObservationDeleted:
		return fmt.Sprintf("deleted one of its observations, leaving %d artifacts", e.ArtifactCount)
	case vigil.EventObservationMoved:
		if d.MovedTo != "" {
			return "an observation left for incident " + d.MovedTo + ", its source's own"
		}
		return "took an observation from roll-up " + d.MovedFrom
	}
	return e.Type
}

func via(e vigil.IncidentEvent) string {
	if e.Via == "" {
		return ""
	}
	return " (" + e.Via + ")"
}

// markdown renders comments: CommonMark with GitHub's tables, strike-
// through and autolinks. Raw HTML in a comment is not passed through
// (goldmark leaves it out unless told it is safe, which it is not told)
// and links with dangerous schemes (javascript:, vbscript:, data: other
// than images, file:) get no href, so a comment cannot run script in
// another analyst's console; the page's Content-Security-Policy allows
// none besides.
var markdown = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify))

func renderMarkdown(src string) template.HTML {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(b.String()) // #nosec: goldmark without html.WithUnsafe escapes raw HTML
}

func (c *Console) saveCase(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	body := map[string]any{"tags": splitTags(r.PostForm.Get("tags"))}
	if a := strings.TrimSpace(r.PostForm.Get("assignee")); a != "" {
		body["assignee"] = a
	} else {
		body["assignee"] = nil
	}
	if _, err := c.call(r, s.token, "PUT", "/v1/incidents/"+url.PathEscape(id), nil, body, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/incidents/"+url.PathEscape(id)+"?saved=case#case", http.StatusSeeOther)
}

// splitTags reads the tags field: separated by commas or spaces. None is
// an empty list, which clears the tags.
func splitTags(s string) []string {
	tags := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if tags == nil {
		return []string{}
	}
	return tags
}

func (c *Console) addComment(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, 2*vigil.MaxCommentBytes)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "The comment could not be read: "+err.Error())
		return
	}
	if _, err := c.call(r, s.token, "POST", "/v1/incidents/"+url.PathEscape(id)+"/comments", nil,
		map[string]string{"body": r.PostForm.Get("body")}, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/incidents/"+url.PathEscape(id)+"?saved=comment#comments", http.StatusSeeOther)
}

func (c *Console) deleteComment(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	path := "/v1/incidents/" + url.PathEscape(id) + "/comments/" + url.PathEscape(r.PathValue("comment"))
	if _, err := c.call(r, s.token, "DELETE", path, nil, nil, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/incidents/"+url.PathEscape(id)+"?saved=deleted#comments", http.StatusSeeOther)
}

// nodeIncidents opens the queue on the incidents that name a value: the
// value's nodes (of every type it can be) through GET /v1/nodes, then
// the queue filtered by the first one. The org's nodes only, as ever.
func (c *Console) nodeIncidents(w http.ResponseWriter, r *http.Request, s *session) {
	value := strings.TrimSpace(r.URL.Query().Get("value"))
	if value == "" {
		c.renderError(w, r, s, http.StatusBadRequest, "Name the value whose incidents to list.")
		return
	}
	q := url.Values{"value": {value}, "limit": {"10"}}
	if t := r.URL.Query().Get("type"); t != "" {
		q.Set("type", t)
	}
	var nodes struct {
		Nodes []vigil.Node `json:"nodes"`
	}
	if _, err := c.call(r, s.token, "GET", "/v1/nodes", q, nil, &nodes); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	if len(nodes.Nodes) == 0 {
		c.renderError(w, r, s, http.StatusNotFound, "No incident names "+value+".")
		return
	}
	http.Redirect(w, r, "/?"+url.Values{"node": {nodes.Nodes[0].ID}, "node_value": {value}, "sort": {vigil.IncidentSortActivity}}.Encode(), http.StatusSeeOther)
}
