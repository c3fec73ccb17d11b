package postgres_test

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
	"github.com/vigil-soc/vigil/internal/postgres"
)

// TestSearchCPU times the search classes of vigil bench on the database at
// $VIGIL_PROBE_PG (org "bench", as vigil bench --fill leaves it): the wall
// time of each search and the CPU time of the server process that ran it
// (the store holds one connection, whose backend's CPU is read from
// /proc: the server must run on this machine) and of this process, median
// of $VIGIL_PROBE_N (5), for figures a loaded machine disturbs less than
// wall-clock latencies (docs/benchmarks.md). Only the classes named in
// $VIGIL_PROBE_ONLY, comma-separated, if set; the single IP is
// $VIGIL_PROBE_IP (default 10.0.0.100, the bench's for its fill). With
// $VIGIL_PROBE_PHRASES set, addresses are read as phrases, as before
// migration 0022. Skipped without VIGIL_PROBE_PG.
func TestSearchCPU(t *testing.T) {
	url := os.Getenv("VIGIL_PROBE_PG")
	if url == "" {
		t.Skip()
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 1, MaxSearches: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if os.Getenv("VIGIL_PROBE_PHRASES") != "" {
		postgres.SetAddressKeys(s, false)
	}
	backend := postgres.BackendPID(ctx, t, s)
	org := "bench"
	newest, _, err := s.SearchArtifacts(ctx, org, vigil.ArtifactFilter{Page: vigil.Page{Limit: 1}})
	if err != nil || len(newest) == 0 {
		t.Fatal(err)
	}
	end := newest[0].Timestamp.Add(time.Minute).Truncate(time.Second)
	day := vigil.TimeRange{Start: end.Add(-24 * time.Hour), End: end}
	month := vigil.TimeRange{Start: end.Add(-30 * 24 * time.Hour), End: end}
	ip := os.Getenv("VIGIL_PROBE_IP")
	if ip == "" {
		ip = "10.0.0.100"
	}
	cs := []struct {
		name string
		f    vigil.ArtifactFilter
	}{
		{"list", vigil.ArtifactFilter{}},
		{"single term", vigil.ArtifactFilter{Query: "sshd"}},
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
		{"single term p2", vigil.ArtifactFilter{Query: "sshd", Page: vigil.Page{Offset: 50}}},
		{"single term p10", vigil.ArtifactFilter{Query: "sshd", Page: vigil.Page{Offset: 450}}},
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
		var ds, ss, cs []time.Duration
		var total int
		var est bool
		for range n {
			st, s0, c0 := time.Now(), procCPU(t, backend), selfCPU()
			_, tot, e, err := s.SearchArtifactsEstimated(ctx, org, q.f, 10000)
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			ds, ss, cs = append(ds, time.Since(st)), append(ss, procCPU(t, backend)-s0), append(cs, selfCPU()-c0)
			total, est = tot, e
		}
		for _, d := range [][]time.Duration{ds, ss, cs} {
			slices.Sort(d)
		}
		t.Logf("%-16s wall min %8.1f med %8.1f max %8.1f ms  server cpu med %8.1f ms  client cpu med %6.1f ms  total %d est %v",
			q.name, ms(ds[0]), ms(ds[n/2]), ms(ds[n-1]), ms(ss[n/2]), ms(cs[n/2]), total, est)
	}
}

// procCPU is the CPU time process pid has run so far (the first field of
// /proc/pid/schedstat, in nanoseconds).
func procCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
