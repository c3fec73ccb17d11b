package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/vigil-soc/vigil"
)

// query reads list parameters, collecting every problem so that one 400
// names all the bad fields.
type query struct {
	v      url.Values
	issues []vigil.FieldIssue
}

func newQuery(v url.Values) *query { return &query{v: v} }

func (q *query) bad(field, issue string) {
	q.issues = append(q.issues, vigil.FieldIssue{Field: field, Issue: issue})
}

func (q *query) err() error {
	if len(q.issues) == 0 {
		return nil
	}
	return vigil.Invalid(q.issues...)
}

func (q *query) str(name string) string { return q.v.Get(name) }

// page reads limit (1..1000, default 50) and offset (≥ 0, default 0).
func (q *query) page() vigil.Page {
	p := vigil.Page{Limit: vigil.DefaultLimit}
	if s := q.v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil:
			q.bad("limit", "must be an integer")
		case n < 1 || n > vigil.MaxLimit:
			q.bad("limit", "must be between 1 and 1000")
		default:
			p.Limit = n
		}
	}
	if s := q.v.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil:
			q.bad("offset", "must be an integer")
		case n < 0:
			q.bad("offset", "must be 0 or more")
		default:
			p.Offset = n
		}
	}
	return p
}

// timeRange reads start and end as RFC 3339; start after end is invalid.
func (q *query) timeRange() vigil.TimeRange { return q.rangeOf("start", "end") }

// rangeOf reads the parameters start and end as a time range.
func (q *query) rangeOf(start, end string) vigil.TimeRange {
	var r vigil.TimeRange
	r.Start = q.time(start)
	r.End = q.time(end)
	if !r.Start.IsZero() && !r.End.IsZero() && r.Start.After(r.End) {
		q.bad(start, "must not be after "+end)
	}
	return r
}

func (q *query) time(name string) time.Time {
	s := q.v.Get(name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.bad(name, "must be an RFC 3339 timestamp")
		return time.Time{}
	}
	return t.UTC()
}

func (q *query) severity() string {
	s := q.v.Get("severity")
	if s != "" && !vigil.ValidSeverity(s) {
		q.bad("severity", "must be one of low, medium, high, critical")
	}
	return s
}

// listData is the payload of every list response; name is the array's key.
// servePage answers a list whose only parameters are limit and offset:
// read gets the caller's org and the page; the items go under name.
func servePage[T any](s *Server, w http.ResponseWriter, r *http.Request, name, msg string,
	read func(ctx context.Context, org string, p vigil.Page) ([]T, int, error)) {
	q := newQuery(r.URL.Query())
	p := q.page()
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	items, total, err := read(r.Context(), principal(r.Context()).OrgID, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, msg, listData(name, items, total, p))
}

func listData(name string, items any, total int, p vigil.Page) map[string]any {
	return map[string]any{name: items, "total": total, "limit": p.Limit, "offset": p.Offset}
}
