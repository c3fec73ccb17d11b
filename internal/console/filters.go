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

// pager is the position of a list page and the links to its neighbours
// and, for a section of a page, to its first and last pages.
type pager struct {
	Total, Offset, Limit int
	Prev, Next           string
	Start, End           string // the first and last pages, when not a neighbour
	Words                pagerWords
	// Param is the form value that holds the offset ("offset" for a list
	// page; a section of a page has its own).
	Param string
}

// pagerWords name the links: toward the first page, the previous and
// next, toward the last.
type pagerWords struct{ Start, Prev, Next, End string }

var (
	// newestFirst names the pages of a list of the newest first.
	newestFirst = pagerWords{"Newest", "Newer", "Older", "Oldest"}
	// inOrder names the pages of a list in its own order.
	inOrder = pagerWords{"First", "Previous", "Next", "Last"}
)

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
	p := pager{Total: total, Offset: offset, Limit: limit, Words: newestFirst, Param: "offset"}
	if offset > 0 {
		p.Prev = p.link(path, form, max(0, offset-limit))
	}
	if offset+limit < total {
		p.Next = p.link(path, form, offset+limit)
	}
	return p
}

// sectionPager links the pages of one section of the page at path (its
// anchor #id), whose offset is the form value param; the form's other
// values stay as they are, so that each section keeps its own page.
func sectionPager(path, id, param string, words pagerWords, form url.Values, total, offset, limit int) pager {
	p := pager{Total: total, Offset: offset, Limit: limit, Words: words, Param: param}
	link := func(off int) string { return p.link(path, form, off) + "#" + id }
	if offset > 0 {
		p.Prev = link(max(0, offset-limit))
		if offset > limit {
			p.Start = link(0)
		}
	}
	if offset+limit < total {
		p.Next = link(offset + limit)
		if last := (total - 1) / limit * limit; last > offset+limit {
			p.End = link(last)
		}
	}
	return p
}

// link returns the address of path at offset off, with the form's other
// values.
func (p pager) link(path string, form url.Values, off int) string {
	v := url.Values{}
	for k, vs := range form {
		if k != p.Param && len(vs) > 0 && vs[0] != "" {
			v.Set(k, vs[0])
		}
	}
	if off > 0 {
		v.Set(p.Param, strconv.Itoa(off))
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// offsetOf reads the form's offset (bad or negative: 0).
func offsetOf(form url.Values) int { return offsetParam(form, "offset") }

// offsetParam reads the offset the form value param holds (bad or
// negative: 0).
func offsetParam(form url.Values, param string) int {
	n, err := strconv.Atoi(form.Get(param))
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
