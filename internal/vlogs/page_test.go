package vlogs

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// TestPagesWithTiedTimes: pages read in two queries (page.go) are the
// slices of the one order (_time, ts, id, newest first) when many entries
// share a time to the nanosecond: every entry on exactly one page, in
// order, for a page size that cuts through the ties.
func TestPagesWithTiedTimes(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	arts := batch(130, base)
	for i, a := range arts {
		a.Timestamp = base.Add(time.Duration(i%5) * (time.Second + 123456789)) // 5 times, 26 entries each
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	tn, err := s.Tenant(t.Context(), org)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.read(t.Context(), org, tn, "*"+orderPage(vigil.Page{Limit: 1000}), false)
	if err != nil || len(want) != len(arts) {
		t.Fatalf("the whole order: %d, %v", len(want), err)
	}
	for _, limit := range []int{7, 26, 50} {
		var got []string
		for off := 0; off < len(arts); off += limit {
			page, total, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Page: vigil.Page{Limit: limit, Offset: off}})
			if err != nil || total != len(arts) {
				t.Fatalf("limit %d offset %d: total %d, %v", limit, off, total, err)
			}
			for _, a := range page {
				got = append(got, a.ID)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d entries over the pages, want %d", limit, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i].ID {
				t.Fatalf("limit %d: entry %d is %s, want %s (the one order)", limit, i, got[i], want[i].ID)
			}
		}
	}
}

// TestPagesAcrossWindows: pages read from the newest day or week first
// (newestTimes) are the slices of the one order when the matches lie in
// the day, the week and before it, for page sizes that end inside each.
func TestPagesAcrossWindows(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	now := time.Now().Truncate(time.Second)
	var arts []*vigil.Artifact
	for _, span := range []struct {
		n    int
		from time.Time
	}{{3, now.Add(-time.Hour)}, {9, now.Add(-3 * 24 * time.Hour)}, {40, now.Add(-40 * 24 * time.Hour)}} {
		arts = append(arts, batch(span.n, span.from)...)
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	tn, err := s.Tenant(t.Context(), org)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.read(t.Context(), org, tn, "*"+orderPage(vigil.Page{Limit: 1000}), false)
	if err != nil || len(want) != len(arts) {
		t.Fatalf("the whole order: %d, %v", len(want), err)
	}
	for _, limit := range []int{2, 3, 5, 12, 50} {
		var got []string
		for off := 0; off < len(arts); off += limit {
			page, _, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Page: vigil.Page{Limit: limit, Offset: off}})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range page {
				got = append(got, a.ID)
			}
		}
		for i := range want {
			if i >= len(got) || got[i] != want[i].ID {
				t.Fatalf("limit %d: %d entries over the pages, entry %d differs from the one order", limit, len(got), i)
			}
		}
	}
}

// TestPageFromTheNewestDay: when the newest day holds the page, the
// times are read from it alone: no query for them over the whole store.
func TestPageFromTheNewestDay(t *testing.T) {
	var sent []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		q := r.Form.Get("query")
		sent = append(sent, q)
		switch {
		case strings.Contains(q, "stats count() n"):
			fmt.Fprintln(w, `{"n":"5000"}`)
		case strings.Contains(q, "fields _time") && strings.Contains(q, "_time:>="):
			for range vigil.DefaultLimit {
				fmt.Fprintf(w, "{\"_time\":%q}\n", time.Now().UTC().Format(time.RFC3339Nano))
			}
		}
	}))
	defer front.Close()
	pg, err := postgres.Open(t.Context(), pgtest.FreshDB(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ParseURLs(front.URL, front.URL)
	if err != nil {
		t.Fatal(err)
	}
	s := New(pg, cl)
	defer s.Close()
	if _, _, err := s.SearchArtifacts(t.Context(), vigil.NewID(), vigil.ArtifactFilter{Query: "udp", Source: "firewall"}); err != nil {
		t.Fatal(err)
	}
	windowed := 0
	for _, q := range sent {
		if strings.Contains(q, "fields _time") {
			if !strings.Contains(q, "_time:>=") {
				t.Errorf("times read over the whole store: %s", q)
			}
			windowed++
		}
	}
	if windowed != 1 {
		t.Errorf("%d queries for the page's times, want 1 (the newest day): %q", windowed, sent)
	}
}

// TestTiesInByteOrder: artifacts stamped at the same nanosecond come in
// the order of their ids' bytes, descending, as in the other stores —
// not in VictoriaLogs' natural order, which reads "7798" as a number
// larger than the "779" of "779e".
func TestTiesInByteOrder(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	ids := []string{ // byte order, descending
		"01a224e0-d788-779e-a4e9-c7e4a69c1f5f",
		"01a224e0-d788-779b-9de2-76bab62360c5",
		"01a224e0-d788-7798-9ac9-44a1d8b45dd7",
		"01a224e0-d788-7790-a8ca-affa79bb5bfe",
		"01a224e0-d788-71ff-a8ca-affa79bb5bfe",
		"01a224e0-d788-7100-a8ca-affa79bb5bfe",
	}
	var arts []*vigil.Artifact
	for i := len(ids) - 1; i >= 0; i-- {
		arts = append(arts, &vigil.Artifact{ID: ids[i], Source: "sshd", Raw: "tie " + ids[i], Timestamp: at, CreatedAt: at})
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{2, 50} {
		var got []string
		for off := 0; off < len(ids); off += limit {
			page, _, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Page: vigil.Page{Limit: limit, Offset: off}})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range page {
				got = append(got, a.ID)
			}
		}
		if strings.Join(got, " ") != strings.Join(ids, " ") {
			t.Fatalf("limit %d: order\n%v\nwant ids descending byte by byte\n%v", limit, got, ids)
		}
	}
}
