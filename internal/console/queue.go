package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// The incident queue: the org's incidents with filters, counts per
// status, pages, bulk status changes, and rows that refresh themselves.

func (c *Console) queueRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.authed(vigil.PermIncidentsRead, c.queue))
	mux.HandleFunc("GET /queue/rows", c.authed(vigil.PermIncidentsRead, c.queueRows))
	mux.HandleFunc("GET /queue/live", c.authed(vigil.PermIncidentsRead, c.queueLive))
	mux.HandleFunc("POST /incidents/status", c.authed(vigil.PermIncidentsWrite, c.bulkStatus))
}

type statusCount struct {
	Status int
	N      int
	Link   string
	Active bool
}

type queueView struct {
	Form      url.Values
	Incidents []*vigil.Incident
	Counts    []statusCount
	All       statusCount
	Page      pager
	Back      string // this page, for the bulk form to return to
	RowsURL   string // what a poll fetches
	LiveURL   string // the stream of changes that triggers a poll
	PollMS    int
	Changed   string // what a bulk change just did
	NodeValue string // the value whose incidents these are (node filter)
	NoNode    string // the page without the node filter
}

// queueQuery turns the form into the API's list parameters.
func queueQuery(form url.Values, now time.Time) url.Values {
	q := url.Values{}
	for _, k := range []string{"status", "severity", "q", "node"} {
		if v := strings.TrimSpace(form.Get(k)); v != "" {
			q.Set(k, v)
		}
	}
	q.Set("sort", sortOf(form))
	timeFilter(form, now, q)
	// When it happened, beside when Vigil saw it (the range above).
	for _, k := range []string{"event_start", "event_end"} {
		if v := strings.TrimSpace(form.Get(k)); v != "" {
			q.Set(k, rfc3339(v))
		}
	}
	q.Set("limit", "50")
	if off := offsetOf(form); off > 0 {
		q.Set("offset", strconv.Itoa(off))
	}
	return q
}

// sortOf is the queue's order: most recently active first unless chosen.
func sortOf(form url.Values) string {
	if s := form.Get("sort"); s != "" {
		return s
	}
	return vigil.IncidentSortActivity
}

type incidentList struct {
	Incidents []*vigil.Incident `json:"incidents"`
	Total     int               `json:"total"`
	Limit     int               `json:"limit"`
	Offset    int               `json:"offset"`
}

func (c *Console) queue(w http.ResponseWriter, r *http.Request, s *session) {
	form := r.URL.Query()
	q := queueQuery(form, time.Now())
	var list incidentList
	p := page{Title: "Incidents", Nav: "queue"}
	v := queueView{Form: form, PollMS: int(c.poll / time.Millisecond)}
	rows := without(form, "changed", "to")
	v.Back = "/?" + rows.Encode()
	v.RowsURL = "/queue/rows?" + rows.Encode()
	v.LiveURL = "/queue/live"
	if _, err := c.call(r, s.token, "GET", "/v1/incidents", q, nil, &list); err != nil {
		if c.expired(w, r, err) {
			return
		}
		// A bad filter is the user's to fix: show it above the form.
		p.Err = err
	}
	v.Incidents = list.Incidents
	v.Page = newPager("/", form, list.Total, list.Offset, max(list.Limit, 1))
	// Counts per status under the same other filters: one count query
	// each, asked at once (each reads the org's incidents when a title
	// search is on).
	statuses := []int{vigil.StatusNew, vigil.StatusInvestigating, vigil.StatusResolved, vigil.StatusClosed, vigil.StatusDisrupted}
	counts := make([]incidentList, len(statuses))
	errs := make([]error, len(statuses))
	if p.Err == nil {
		var wg sync.WaitGroup
		for i, st := range statuses {
			cq := without(q, "status", "offset", "sort")
			cq.Set("limit", "1")
			cq.Set("status", strconv.Itoa(st))
			wg.Go(func() { _, errs[i] = c.call(r, s.token, "GET", "/v1/incidents", cq, nil, &counts[i]) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				p.Err = err // the first, as the API said it
				break
			}
		}
	}
	others := without(form, "status", "offset")
	v.All = statusCount{Link: "/?" + others.Encode(), Active: form.Get("status") == ""}
	for i, st := range statuses {
		link := without(others)
		link.Set("status", strconv.Itoa(st))
		v.Counts = append(v.Counts, statusCount{Status: st, N: counts[i].Total, Link: "/?" + link.Encode(), Active: form.Get("status") == strconv.Itoa(st)})
		v.All.N += counts[i].Total
	}
	if form.Get("node") != "" {
		v.NodeValue = form.Get("node_value")
		if v.NodeValue == "" {
			v.NodeValue = "one node"
		}
		v.NoNode = "/?" + without(form, "node", "node_value", "offset").Encode()
	}
	if n := form.Get("changed"); n != "" {
		if st, err := strconv.Atoi(form.Get("to")); err == nil && vigil.ValidStatus(st) {
			v.Changed = fmt.Sprintf("%s incident(s) moved to %s.", n, vigil.StatusName(st))
		}
	}
	p.Data = v
	status := http.StatusOK
	if ae := p.APIError(); ae != nil && ae.Status >= 500 {
		status = ae.Status
	}
	c.render(w, r, status, "queue", p)
}

// queueRows answers a poll with the rows of the page as it is now.
func (c *Console) queueRows(w http.ResponseWriter, r *http.Request, s *session) {
	var list incidentList
	if _, err := c.call(r, s.token, "GET", "/v1/incidents", queueQuery(r.URL.Query(), time.Now()), nil, &list); err != nil {
		if c.expired(w, r, err) {
			return
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	c.renderFragment(w, "queue", "rows", page{S: s, Data: queueView{Incidents: list.Incidents}})
}

// without returns a copy of v without keys (a plain copy with none).
func without(v url.Values, keys ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		if !slices.Contains(keys, k) {
			out[k] = vs
		}
	}
	return out
}

// liveTypes are the events that change what a queue shows.
var liveTypes = strings.Join([]string{vigil.EventCreated, vigil.EventGrew, vigil.EventMerged,
	vigil.EventStatusChanged, vigil.EventClassified, vigil.EventAssigned, vigil.EventTagged}, ",")

// queueLive streams the org's incident changes to an open queue: the
// API's GET /v1/events, served to the browser as it is with the session's
// token (an EventSource cannot send one), so the stream is scoped to the
// token's org and permission exactly as for any client. The page fetches
// its rows again when an event arrives; the browser resumes a dropped
// stream with Last-Event-ID, which passes through.
func (c *Console) queueLive(w http.ResponseWriter, r *http.Request, s *session) {
	req := r.Clone(r.Context())
	req.URL = &url.URL{Path: "/v1/events", RawQuery: url.Values{"types": {liveTypes}}.Encode()}
	req.RequestURI = ""
	req.Header.Del("Cookie")
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "text/event-stream")
	c.api.ServeHTTP(w, req)
}

// bulkStatus moves every selected incident to one status, one API call
// each, and reports what failed.
func (c *Console) bulkStatus(w http.ResponseWriter, r *http.Request, s *session) {
	r.Body = http.MaxBytesReader(w, r.Body, 256<<10)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	back := localPath(r.PostForm.Get("back"), "/")
	st, err := strconv.Atoi(r.PostForm.Get("status"))
	if err != nil || !vigil.ValidStatus(st) {
		c.renderError(w, r, s, http.StatusBadRequest, "Choose the status to move the selected incidents to.")
		return
	}
	ids := r.PostForm["id"]
	if len(ids) == 0 || len(ids) > 1000 {
		c.renderError(w, r, s, http.StatusBadRequest, "Select between 1 and 1000 incidents.")
		return
	}
	var failed []string
	for _, id := range ids {
		if _, err := c.call(r, s.token, "PUT", "/v1/incidents/"+url.PathEscape(id)+"/status", nil, map[string]int{"status": st}, nil); err != nil {
			if c.expired(w, r, err) {
				return
			}
			failed = append(failed, id+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		c.renderError(w, r, s, http.StatusConflict, fmt.Sprintf("%d of %d incidents were not changed: %s", len(failed), len(ids), strings.Join(failed, "; ")))
		return
	}
	sep := "?"
	if strings.Contains(back, "?") {
		sep = "&"
	}
	http.Redirect(w, r, back+sep+url.Values{"changed": {strconv.Itoa(len(ids))}, "to": {strconv.Itoa(st)}}.Encode(), http.StatusSeeOther)
}
