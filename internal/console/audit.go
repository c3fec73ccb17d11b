package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// The audit log (admin): who changed what through the API, newest first,
// with the fields each write changed before and after.

func (c *Console) auditRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /audit", c.authed(vigil.PermAdmin, c.audit))
}

type auditView struct {
	Form    url.Values
	Types   []string
	Entries []auditRow
	Page    pager
}

// auditRow is an entry with the changed fields listed side by side.
type auditRow struct {
	*vigil.AuditEntry
	Changes []auditChange
}

type auditChange struct{ Field, Before, After string }

func (c *Console) audit(w http.ResponseWriter, r *http.Request, s *session) {
	form := r.URL.Query()
	q := url.Values{}
	for _, k := range []string{"actor", "resource_type", "resource_id"} {
		if v := strings.TrimSpace(form.Get(k)); v != "" {
			q.Set(k, v)
		}
	}
	if d, ok := spans[form.Get("range")]; ok {
		q.Set("from", time.Now().Add(-d).UTC().Format(time.RFC3339))
	}
	q.Set("limit", "50")
	if off := offsetOf(form); off > 0 {
		q.Set("offset", strconv.Itoa(off))
	}
	var list struct {
		Entries []*vigil.AuditEntry `json:"entries"`
		Total   int                 `json:"total"`
		Limit   int                 `json:"limit"`
		Offset  int                 `json:"offset"`
	}
	p := page{Title: "Audit log", Nav: "audit"}
	if _, err := c.call(r, s.token, "GET", "/v1/audit", q, nil, &list); err != nil {
		if c.expired(w, r, err) {
			return
		}
		p.Err = err
	}
	rows := make([]auditRow, len(list.Entries))
	for i, e := range list.Entries {
		rows[i] = auditRow{AuditEntry: e, Changes: changes(e.Before, e.After)}
	}
	p.Data = auditView{Form: form, Types: vigil.AuditResourceTypes, Entries: rows,
		Page: newPager("/audit", form, list.Total, list.Offset, max(list.Limit, 1))}
	c.render(w, r, http.StatusOK, "audit", p)
}

// changes lists the fields of before and after (JSON objects, either
// null) in name order, each side as compact JSON ("" where absent).
func changes(before, after json.RawMessage) []auditChange {
	var b, a map[string]json.RawMessage
	json.Unmarshal(before, &b)
	json.Unmarshal(after, &a)
	names := map[string]bool{}
	for k := range b {
		names[k] = true
	}
	for k := range a {
		names[k] = true
	}
	out := make([]auditChange, 0, len(names))
	for k := range names {
		out = append(out, auditChange{Field: k, Before: string(b[k]), After: string(a[k])})
	}
	slices.SortFunc(out, func(x, y auditChange) int { return strings.Compare(x.Field, y.Field) })
	return out
}
