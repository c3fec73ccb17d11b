package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// timeOf parses a JSON time of an API response, failing t when it is not
// one.
func timeOf(t *testing.T, v any, what string) time.Time {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s = %v: not a time", what, v)
	}
	return ts
}

// TestIncidentEventTimes: a back-filled attack (a real auth log whose
// lines keep their own times, months before they were sent) shows when
// it happened beside when Vigil saw it, and incidents sort and filter by
// either.
func TestIncidentEventTimes(t *testing.T) {
	e, tok, inc := bruteForce(t)
	id := inc["id"].(string)

	// When it happened: its artifacts' times, read one by one through
	// its observations.
	var first, last time.Time
	detail := must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
	for _, ref := range detail["observations"].([]any) {
		o := must(t, call(t, e, "GET", "/v1/observations/"+ref.(map[string]any)["id"].(string), tok, nil), http.StatusOK).data()
		for _, a := range o["artifact_ids"].([]any) {
			art := must(t, call(t, e, "GET", "/v1/artifacts/"+a.(string), tok, nil), http.StatusOK).data()
			ts := timeOf(t, art["timestamp"], "artifact timestamp")
			if first.IsZero() || ts.Before(first) {
				first = ts
			}
			if ts.After(last) {
				last = ts
			}
		}
	}
	for what, got := range map[string]map[string]any{"list": inc, "single incident": detail} {
		if f, l := timeOf(t, got["first_event_at"], what+" first_event_at"), timeOf(t, got["last_event_at"], what+" last_event_at"); !f.Equal(first) || !l.Equal(last) {
			t.Errorf("%s: events %v..%v, want its artifacts' %v..%v", what, f, l, first, last)
		}
	}
	created := timeOf(t, detail["created_at"], "created_at")
	if created.Sub(last) < 24*time.Hour {
		t.Errorf("created_at %v is not when Vigil saw the back-filled attack (its last event %v)", created, last)
	}
	t.Logf("%s: happened %v..%v, seen %v", detail["title"], first, last, created)

	// Every incident of the log, sorted by either event time.
	all := items(t, must(t, call(t, e, "GET", "/v1/incidents?limit=1000", tok, nil), http.StatusOK), "incidents")
	if len(all) < 3 {
		t.Fatalf("%d incidents: the test needs several", len(all))
	}
	for _, sort := range []string{"first_event", "last_event"} {
		field := sort + "_at"
		got := items(t, must(t, call(t, e, "GET", "/v1/incidents?limit=1000&sort="+sort, tok, nil), http.StatusOK), "incidents")
		if len(got) != len(all) {
			t.Fatalf("sort=%s: %d incidents, want %d", sort, len(got), len(all))
		}
		ok := slices.IsSortedFunc(got, func(a, b map[string]any) int {
			if c := timeOf(t, b[field], field).Compare(timeOf(t, a[field], field)); c != 0 {
				return c
			}
			return strings.Compare(b["id"].(string), a["id"].(string))
		})
		if !ok {
			t.Errorf("sort=%s: not newest %s first, ties by id", sort, field)
		}
	}

	// Filtered on when it happened: the incidents whose events meet one
	// second of the attack's start, whenever Vigil saw them.
	start, end := first, first.Add(time.Second)
	q := url.Values{"limit": {"1000"}, "event_start": {start.Format(time.RFC3339Nano)}, "event_end": {end.Format(time.RFC3339Nano)}}
	got := idsOf(items(t, must(t, call(t, e, "GET", "/v1/incidents?"+q.Encode(), tok, nil), http.StatusOK), "incidents"))
	if !slices.Contains(got, id) {
		t.Errorf("the attack is not among the incidents of its first second: %v", got)
	}
	for _, i := range all {
		meets := !timeOf(t, i["last_event_at"], "last_event_at").Before(start) && timeOf(t, i["first_event_at"], "first_event_at").Before(end)
		if meets != slices.Contains(got, i["id"].(string)) {
			t.Errorf("incident %s (%v..%v): listed %v, meets [%v, %v) %v", i["id"], i["first_event_at"], i["last_event_at"],
				!meets, start, end, meets)
		}
	}
	// Seen today, it happened months ago: filters on either time differ.
	seen := url.Values{"start": {created.Add(-time.Hour).Format(time.RFC3339)}, "event_end": {created.Add(-24 * time.Hour).Format(time.RFC3339)}}
	if n := total(t, must(t, call(t, e, "GET", "/v1/incidents?"+seen.Encode(), tok, nil), http.StatusOK)); n != len(all) {
		t.Errorf("seen in the last hour and happened before yesterday: %d incidents, want all %d", n, len(all))
	}

	for _, tc := range []struct{ query, field string }{
		{"event_start=yesterday", "event_start"},
		{"event_end=2026-13-01T00:00:00Z", "event_end"},
		{"event_start=2026-02-01T00:00:00Z&event_end=2026-01-01T00:00:00Z", "event_start"},
		{"sort=happened", "sort"},
	} {
		wantError(t, call(t, e, "GET", "/v1/incidents?"+tc.query, tok, nil), http.StatusBadRequest, tc.field)
	}
}
