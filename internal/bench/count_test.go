package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/client"
)

// TestCountRangeExact: a store that estimates a list's total beyond its
// bound, as PostgreSQL and VictoriaLogs do past 10,000 (docs/api.md),
// still gives the bench the exact number of the run's artifacts — before,
// the bench took the estimate and reported its own artifacts as missing
// or duplicated. The server here answers GET /v1/artifacts by that rule
// over a set of timestamps: exact up to bound, else 1.3 times the count,
// flagged; 2,345 of them stamped at one instant are counted by pages.
func TestCountRangeExact(t *testing.T) {
	const bound = 100
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var stamps []time.Time
	for i := range 1234 {
		stamps = append(stamps, t0.Add(time.Duration(i*i%5000)*time.Millisecond*37))
	}
	// A batch stamped at one instant, more than bound: no halving
	// makes its total exact.
	for range 2345 {
		stamps = append(stamps, t0.Add(30*time.Minute))
	}
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		start, err1 := time.Parse(time.RFC3339Nano, r.URL.Query().Get("start"))
		end, err2 := time.Parse(time.RFC3339Nano, r.URL.Query().Get("end"))
		if err1 != nil || err2 != nil {
			http.Error(w, "start and end wanted", http.StatusBadRequest)
			return
		}
		n := 0
		for _, s := range stamps {
			if !s.Before(start) && s.Before(end) {
				n++
			}
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		page := client.ArtifactPage{Total: n, Limit: limit, Offset: offset}
		for i := offset; i < min(n, offset+limit); i++ {
			page.Artifacts = append(page.Artifacts, vigil.Artifact{ID: strconv.Itoa(i)})
		}
		if n > bound {
			page.Total, page.TotalEstimated = n*13/10, true
		}
		json.NewEncoder(w).Encode(map[string]any{"data": page})
	}))
	defer srv.Close()
	b := &bench{api: client.New(srv.URL, "", srv.Client())}
	got, err := b.countRange(context.Background(), t0, t0.Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got != int64(len(stamps)) {
		t.Fatalf("counted %d, want %d (in %d requests)", got, len(stamps), requests.Load())
	}
	if n := requests.Load(); n > int64(2*1234/bound*4+2*maxCountDepth+2345/1000+1) {
		t.Errorf("%d requests for %d artifacts in ranges of at most %d", n, len(stamps), bound)
	}
}
