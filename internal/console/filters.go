package console

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// timeFilter turns the form's time range into the API's start and end:
// a recent span ("24h", "7d", "30d") or the given start and end, each an
// RFC 3339 time or a browser's datetime-local value (read as UTC).
func timeFilter(form url.Values, now time.Time, q url.Values) {
	if span := form.Get("range"); span != "" {
		if d, ok := spans[span]; ok {
			q.Set("start", now.Add(-d).UTC().Format(time.RFC3339))
		}
		return
	}
	for _, k := range []string{"start", "end"} {
		if v := strings.TrimSpace(form.Get(k)); v != "" {
			q.Set(k, rfc3339(v))
		}
	}
}

var spans = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// rfc3339 reads a datetime-local value ("2026-11-25T10:00") as UTC;
// anything else goes to the API as typed, which names it if it is bad.
func rfc3339(v string) string {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
	}
	return v
}

// pager is the position of a list page and the links to its neighbours.
type pager struct {
	Total, Offset, Limit int
	Prev, Next           string
}

// First and Last number the page's items from 1.
func (p pager) First() int {
	if p.Total == 0 {
		return 0
	}
	return p.Offset + 1
}
func (p pager) Last() int { return min(p.Offset+p.Limit, p.Total) }

// newPager links the pages of path, keeping the form's other values.
func newPager(path string, form url.Values, total, offset, limit int) pager {
	p := pager{Total: total, Offset: offset, Limit: limit}
	link := func(off int) string {
		v := url.Values{}
		for k, vs := range form {
			if k != "offset" && len(vs) > 0 && vs[0] != "" {
				v.Set(k, vs[0])
			}
		}
		if off > 0 {
			v.Set("offset", strconv.Itoa(off))
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	if offset > 0 {
		p.Prev = link(max(0, offset-limit))
	}
	if offset+limit < total {
		p.Next = link(offset + limit)
	}
	return p
}

// offsetOf reads the form's offset (bad or negative: 0).
func offsetOf(form url.Values) int {
	n, err := strconv.Atoi(form.Get("offset"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// localPath returns back if it is a path of this site, else def: a
// redirect never leads elsewhere.
func localPath(back, def string) string {
	if strings.HasPrefix(back, "/") && !strings.HasPrefix(back, "//") && !strings.HasPrefix(back, "/\\") {
		return back
	}
	return def
}
