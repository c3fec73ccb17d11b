package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// Artifact search: the API's query syntax, a source, a time range, pages
// of the newest first.

func (c *Console) searchRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /search", c.authed(vigil.PermSignalsRead, c.search))
}

type searchView struct {
	Form      url.Values
	Searched  bool
	Artifacts []artifactView
	Page      pager
}

type artifactList struct {
	Artifacts []*vigil.Artifact `json:"artifacts"`
	Total     int               `json:"total"`
	Limit     int               `json:"limit"`
	Offset    int               `json:"offset"`
}

func (c *Console) search(w http.ResponseWriter, r *http.Request, s *session) {
	form := r.URL.Query()
	v := searchView{Form: form}
	p := page{Title: "Search", Nav: "search"}
	q := url.Values{}
	query := strings.TrimSpace(form.Get("query"))
	if query != "" {
		q.Set("query", query)
	}
	if src := strings.TrimSpace(form.Get("source")); src != "" {
		q.Set("source", src)
	}
	timeFilter(form, time.Now(), q)
	q.Set("limit", "25")
	if off := offsetOf(form); off > 0 {
		q.Set("offset", strconv.Itoa(off))
	}
	// An empty form searches nothing: listing and counting every
	// artifact of a large store is the one search that cannot be fast.
	v.Searched = query != "" || q.Get("source") != ""
	var list artifactList
	if !v.Searched {
		p.Data = v
		c.render(w, r, http.StatusOK, "search", p)
		return
	}
	if _, err := c.call(r, s.token, "GET", "/v1/artifacts", q, nil, &list); err != nil {
		if c.expired(w, r, err) {
			return
		}
		p.Err = err
	}
	terms := searchTerms(query)
	// "incidents" beside a value looks its nodes up (observations:read)
	// and lists incidents (incidents:read): no link a token could not follow.
	incidents := s.Can(vigil.PermObservationsRead) && s.Can(vigil.PermIncidentsRead)
	for _, a := range list.Artifacts {
		av := newArtifactView(a, terms)
		if !incidents {
			for i := range av.Fields {
				av.Fields[i].Incidents = ""
			}
		}
		v.Artifacts = append(v.Artifacts, av)
	}
	v.Page = newPager("/search", form, list.Total, list.Offset, max(list.Limit, 1))
	p.Data = v
	status := http.StatusOK
	if ae := p.APIError(); ae != nil && ae.Status >= 500 {
		status = ae.Status
	}
	c.render(w, r, status, "search", p)
}
