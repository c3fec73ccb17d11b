package vlogs

import (
	"fmt"
	"math/rand/v2"
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

// TestEstimatedTotals: a query matching more than the bound gets an
// estimated total above it, flagged, with its page; a rarer one, a bound
// of 0 or one above the matches get the exact count, unflagged; the same
// search twice gives the same total.
func TestEstimatedTotals(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	s.sampleSize = 50
	org := vigil.NewID()
	arts := batch(200, time.Now().Add(-3*time.Hour).Truncate(time.Second))
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query     string
		exactUpTo int
		want      int
		estimated bool
	}{
		{"failed password", 10, 200, true},
		{"failed password", 0, 200, false},
		{"failed password", 1000, 200, false},
		{"u7", 10, 1, false},
		{"failed -u7", 10, 199, true},
	} {
		first := -1
		for range 2 {
			page, total, est, err := s.SearchArtifactsEstimated(t.Context(), org, vigil.ArtifactFilter{Query: tc.query, Page: vigil.Page{Limit: 5}}, tc.exactUpTo)
			ok := err == nil && est == tc.estimated && len(page) == min(5, tc.want) && (first < 0 || total == first)
			if est {
				ok = ok && total > tc.exactUpTo
			} else {
				ok = ok && total == tc.want
			}
			if !ok {
				t.Fatalf("%q up to %d: total %d estimated %v, %d on the page, %v; want %d (estimated %v: above the bound), twice the same",
					tc.query, tc.exactUpTo, total, est, len(page), err, tc.want, tc.estimated)
			}
			first = total
		}
	}
}

// TestEstimateSkipsShortRanges: a search within a day is counted
// exactly, however many it matches.
func TestEstimateSkipsShortRanges(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	from := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	if err := s.InsertArtifacts(t.Context(), org, batch(200, from)); err != nil {
		t.Fatal(err)
	}
	f := vigil.ArtifactFilter{Query: "failed password", Range: vigil.TimeRange{Start: from.Add(-time.Hour), End: from.Add(time.Hour)}}
	if _, total, est, err := s.SearchArtifactsEstimated(t.Context(), org, f, 10); err != nil || total != 200 || est {
		t.Fatalf("within two hours: total %d estimated %v, %v; want 200 exactly", total, est, err)
	}
}

// TestTotalsCountedNewestFirst: the dataset lines spread over 40 days
// that end three days ago, and one more stamped an hour ahead (the
// newest hour and day hold no sample to estimate from), sampled 3,000 at
// a time. A total above the bound is flagged, an estimate above it: from
// the sample across the range when it says so beyond doubt (a tenth of
// the matches: within a factor of two), else once the bound's next
// match is found; a total at or below the bound is exact and unflagged
// (counted over every window, the future included); the same search
// twice gives the same total. On the code before, which counted every
// match when the newest hour and day gave no estimate, the total above
// the bound was exact and unflagged.
func TestTotalsCountedNewestFirst(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	s.sampleSize = 3000 // of about 30,000
	org := vigil.NewID()
	raws := datasetRaws(t)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(raws), func(i, j int) { raws[i], raws[j] = raws[j], raws[i] })
	now := time.Now()
	from := now.Add(-43 * 24 * time.Hour)
	step := 40 * 24 * time.Hour / time.Duration(len(raws))
	arts := make([]*vigil.Artifact, 0, len(raws)+1)
	for i, raw := range raws {
		ts := from.Add(time.Duration(i) * step)
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "datasets", Raw: raw, Timestamp: ts, CreatedAt: ts})
	}
	for _, raw := range raws {
		if strings.Contains(strings.ToLower(raw), "sshd") {
			ts := now.Add(time.Hour)
			arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "datasets", Raw: raw, Timestamp: ts, CreatedAt: ts})
			break
		}
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	f := vigil.ArtifactFilter{Query: "sshd", Page: vigil.Page{Limit: 5}}
	_, exact, _, err := s.SearchArtifactsEstimated(t.Context(), org, f, 0)
	if err != nil || exact < 100 {
		t.Fatalf("exact total %d, %v: want the datasets' sshd lines", exact, err)
	}
	for _, bound := range []int{exact, exact + 1, exact - 1, exact / 2, exact / 10} {
		for range 2 {
			page, total, est, err := s.SearchArtifactsEstimated(t.Context(), org, f, bound)
			if err != nil || len(page) != 5 {
				t.Fatalf("bound %d: %d on the page, %v", bound, len(page), err)
			}
			if bound >= exact && (total != exact || est) {
				t.Fatalf("bound %d: total %d estimated %v; want %d exactly", bound, total, est, exact)
			}
			if bound < exact && (total <= bound || !est) {
				t.Fatalf("bound %d: total %d estimated %v; want an estimate above the bound (%d matches)", bound, total, est, exact)
			}
			if bound == exact/10 && (total < exact/2 || total > 2*exact) {
				t.Fatalf("bound %d: estimated %d for %d matches", bound, total, exact)
			}
			t.Logf("bound %d: total %d estimated %v (%d matches)", bound, total, est, exact)
		}
	}
}

// TestCountStopsAtTheBound: when the recent windows give no estimate
// (here, a front whose sample windows hold nothing and whose windows
// all hold more matches than asked for), every count of the query's
// matches asks VictoriaLogs to stop at the bound's next match (| limit),
// the newest window is counted first, and the total is flagged, above
// the bound. The code before counted every match of the range (a count
// with no limit), whatever the store held.
func TestCountStopsAtTheBound(t *testing.T) {
	var sent []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		q := r.Form.Get("query")
		sent = append(sent, q)
		switch {
		case strings.Contains(q, "count() if"):
			fmt.Fprintln(w, `{"n":"0","m":"0"}`) // no sample
		case strings.Contains(q, "stats count"):
			n := "10000000" // every entry of the window or range
			if i := strings.Index(q, "| limit "); i >= 0 {
				n = strings.Fields(q[i+len("| limit "):])[0] // as many matches as asked for
			}
			fmt.Fprintf(w, "{\"n\":%q}\n", n)
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
	_, total, est, err := s.SearchArtifactsEstimated(t.Context(), vigil.NewID(), vigil.ArtifactFilter{Query: "udp", Source: "firewall"}, 10000)
	if err != nil || !est || total <= 10000 {
		t.Fatalf("total %d estimated %v, %v; want an estimate above 10,000", total, est, err)
	}
	var counts []string
	for _, q := range sent {
		if !strings.Contains(q, "stats count") || !strings.Contains(q, `"udp"`) || strings.Contains(q, "count() if") {
			continue
		}
		counts = append(counts, q)
		if !strings.Contains(q, "| limit 10001 |") {
			t.Errorf("a count of the matches not stopped at 10,001: %s", q)
		}
	}
	// The sample (none here) expects few: one count of the whole range,
	// then, since it found 10,001, the newest hour.
	if len(counts) != 2 || strings.Contains(counts[0], "_time:>=") || !strings.Contains(counts[1], "_time:>=") {
		t.Errorf("counts of the matches %q, want the range's, then the newest hour's", counts)
	}
}

// TestSkewedSampleNeverFlagsASmallTotal: the newest hour holds 100
// dataset lines of sshd and nothing else, three days before it 200 lines
// without the word: the sample (the newest hour's share of matches,
// times the entries in range) says about 300, three times the matches.
// A total of no more than the bound is exact and unflagged whatever the
// sample says. The code before flagged the sample's estimate whenever it
// was above twice the bound.
func TestSkewedSampleNeverFlagsASmallTotal(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	s.sampleSize = 30 // of 300
	org := vigil.NewID()
	var with, without []string
	for _, raw := range datasetRaws(t) {
		if strings.Contains(strings.ToLower(raw), "sshd") {
			with = append(with, raw)
		} else {
			without = append(without, raw)
		}
	}
	if len(with) < 100 || len(without) < 200 {
		t.Fatalf("%d lines with sshd, %d without", len(with), len(without))
	}
	now := time.Now()
	hour := now.Truncate(time.Hour).Add(-50 * time.Minute) // within the newest whole hour
	var arts []*vigil.Artifact
	add := func(raw string, ts time.Time) {
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "datasets", Raw: raw, Timestamp: ts, CreatedAt: ts})
	}
	for i, raw := range with[:100] {
		add(raw, hour.Add(time.Duration(i)*10*time.Second))
	}
	for i, raw := range without[:200] {
		add(raw, now.Add(-72*time.Hour+time.Duration(i)*time.Second))
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	f := vigil.ArtifactFilter{Query: "sshd", Page: vigil.Page{Limit: 5}}
	_, exact, _, err := s.SearchArtifactsEstimated(t.Context(), org, f, 0)
	if err != nil || exact < 90 {
		t.Fatalf("exact total %d, %v", exact, err)
	}
	if _, total, est, err := s.SearchArtifactsEstimated(t.Context(), org, f, exact); err != nil || total != exact || est {
		t.Fatalf("bound %d: total %d estimated %v, %v; want %d exactly", exact, total, est, err, exact)
	}
}
