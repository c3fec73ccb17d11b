package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// The observations list: findings with their type, severity and the
// incident each joined.

func (c *Console) observationRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /observations", c.authed(vigil.PermObservationsRead, c.observations))
}

type observationsView struct {
	Form         url.Values
	Observations []*vigil.Observation
	Page         pager
}

func (c *Console) observations(w http.ResponseWriter, r *http.Request, s *session) {
	form := r.URL.Query()
	q := url.Values{}
	for _, k := range []string{"type", "severity"} {
		if v := strings.TrimSpace(form.Get(k)); v != "" {
			q.Set(k, v)
		}
	}
	timeFilter(form, time.Now(), q)
	q.Set("limit", "50")
	if off := offsetOf(form); off > 0 {
		q.Set("offset", strconv.Itoa(off))
	}
	var list struct {
		Observations []*vigil.Observation `json:"observations"`
		Total        int                  `json:"total"`
		Limit        int                  `json:"limit"`
		Offset       int                  `json:"offset"`
	}
	p := page{Title: "Observations", Nav: "observations"}
	if _, err := c.call(r, s.token, "GET", "/v1/observations", q, nil, &list); err != nil {
		if c.expired(w, r, err) {
			return
		}
		p.Err = err
	}
	p.Data = observationsView{Form: form, Observations: list.Observations,
		Page: newPager("/observations", form, list.Total, list.Offset, max(list.Limit, 1))}
	c.render(w, r, http.StatusOK, "observations", p)
}
