package sqlite_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestSearchCPU times the search classes of vigil bench in this process,
// on the store at $VIGIL_PROBE_DB (org "bench", as vigil bench --fill
// leaves it; migrated by opening it): the wall and CPU time of each
// search, median of $VIGIL_PROBE_N (5), for figures that a loaded machine
// disturbs less than wall-clock latencies (docs/benchmarks.md). Only the
// classes named in $VIGIL_PROBE_ONLY, comma-separated, if set; the single
// IP is $VIGIL_PROBE_IP (default 10.0.0.100, the bench's). With
// $VIGIL_PROBE_TRACE set, one more search of each class logs the CPU time
// of each of its statements (its rows read by the next). Skipped
// without VIGIL_PROBE_DB.
func TestSearchCPU(t *testing.T) {
	path := os.Getenv("VIGIL_PROBE_DB")
	if path == "" {
		t.Skip()
	}
	ctx := context.Background()
	t0 := time.Now()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("open %v", time.Since(t0))
	org := "bench"
	newest, _, err := s.SearchArtifacts(ctx, org, vigil.ArtifactFilter{Page: vigil.Page{Limit: 1}})
	if err != nil || len(newest) == 0 {
		t.Fatal(err)
	}
	end := newest[0].Timestamp.Add(time.Minute).Truncate(time.Second)
	day := vigil.TimeRange{Start: end.Add(-24 * time.Hour), End: end}
	month := vigil.TimeRange{Start: end.Add(-30 * 24 * time.Hour), End: end}
	// The address vigil bench picks for the fill's mix (its most frequent).
	ip := os.Getenv("VIGIL_PROBE_IP")
	if ip == "" {
		ip = "10.0.0.100"
	}
	type c struct {
		name string
		f    vigil.ArtifactFilter
	}
	cs := []c{
		{"list", vigil.ArtifactFilter{}},
		{"list source", vigil.ArtifactFilter{Source: "firewall"}},
		{"list 24h", vigil.ArtifactFilter{Range: day}},
		{"single term", vigil.ArtifactFilter{Query: "sshd"}},
		{"single term p2", vigil.ArtifactFilter{Query: "sshd", Page: vigil.Page{Offset: 50}}},
		{"single term p10", vigil.ArtifactFilter{Query: "sshd", Page: vigil.Page{Offset: 450}}},
		{"single IP", vigil.ArtifactFilter{Query: ip}},
		// An address of few lines whose parts are in most (the bench's
		// own load names it; its fill does not).
		{"rare IP", vigil.ArtifactFilter{Query: "10.0.0.53"}},
		{"two words", vigil.ArtifactFilter{Query: "failed password"}},
		{"phrase 30d", vigil.ArtifactFilter{Query: `"authentication failure"`, Range: month}},
		{"phrase 24h", vigil.ArtifactFilter{Query: `"authentication failure"`, Range: day}},
		{"prefix", vigil.ArtifactFilter{Query: "fail*"}},
		{"OR", vigil.ArtifactFilter{Query: "sshd OR named"}},
		{"negation", vigil.ArtifactFilter{Query: "sshd -failed"}},
		{"term+source", vigil.ArtifactFilter{Query: "udp", Source: "firewall"}},
		{"term+source 24h", vigil.ArtifactFilter{Query: "udp", Source: "firewall", Range: day}},
		{"rare in source", vigil.ArtifactFilter{Query: "sshd", Source: "firewall"}},
	}
	only := os.Getenv("VIGIL_PROBE_ONLY")
	n, _ := strconv.Atoi(os.Getenv("VIGIL_PROBE_N"))
	if n == 0 {
		n = 5
	}
	for _, q := range cs {
		if only != "" && !slices.Contains(strings.Split(only, ","), q.name) {
			continue
		}
		q.f.Preview = true
		var ds, cs []time.Duration
		var total int
		var est bool
		for range n {
			st, c0 := time.Now(), cpu()
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			_, tot, e, err := s.SearchArtifactsEstimated(cctx, org, q.f, 10000)
			cancel()
			if err != nil {
				t.Logf("%s: %v", q.name, err)
				break
			}
			ds = append(ds, time.Since(st))
			cs = append(cs, cpu()-c0)
			total, est = tot, e
		}
		if os.Getenv("VIGIL_PROBE_TRACE") != "" {
			// One more search, each statement's CPU time (until the next
			// one starts, or the search ends) logged.
			var last string
			var lastArgs []any
			c0 := cpu()
			step := func() {
				if last != "" {
					t.Logf("  %7.1f ms cpu  %s %v", ms(cpu()-c0), strings.Join(strings.Fields(last), " "), lastArgs)
				}
				c0 = cpu()
			}
			sqlite.SetStatementHook(s, func(q string, args []any) { step(); last, lastArgs = q, args })
			if _, _, _, err := s.SearchArtifactsEstimated(ctx, org, q.f, 10000); err != nil {
				t.Fatal(err)
			}
			step()
			sqlite.SetStatementHook(s, nil)
		}
		slices.Sort(ds)
		slices.Sort(cs)
		if len(ds) > 0 {
			t.Logf("%-18s wall min %8.1f med %8.1f max %8.1f ms  cpu med %8.1f ms  total %d est %v", q.name, ms(ds[0]), ms(ds[len(ds)/2]), ms(ds[len(ds)-1]), ms(cs[len(cs)/2]), total, est)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
