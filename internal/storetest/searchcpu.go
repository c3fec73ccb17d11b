package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// ProbeStore is what SearchCPU searches: a store whose artifact search
// may estimate its total (both engines').
type ProbeStore interface {
	SearchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int, error)
	vigil.ArtifactEstimator
}

// CPUClock is a named CPU time read around each search, besides this
// process's own (a database server's backend, for one).
type CPUClock struct {
	Name string
	Read func() time.Duration
}

// Probe says how SearchCPU measures one store.
type Probe struct {
	// Clocks are read around each search besides this process's CPU
	// time (labelled "client" when there are any).
	Clocks []CPUClock
	// Trace, when set, installs a hook told each statement a search
	// runs (nil removes it): with $VIGIL_PROBE_TRACE set, one more
	// search of each class logs the CPU time of each of its statements.
	Trace func(hook func(query string, args []any))
	// Skip are classes this store's probe does not time.
	Skip []string
}

// probeTimeout bounds one search of the probe: one that runs longer is
// logged and the class left for the next.
const probeTimeout = 60 * time.Second

// SearchCPU times the search classes of vigil bench on s (org "bench",
// as vigil bench --fill leaves it, or $VIGIL_PROBE_ORG): the wall time and the CPU time of
// each search, median of $VIGIL_PROBE_N (5), for figures that a loaded
// machine disturbs less than wall-clock latencies (docs/benchmarks.md).
// Only the classes named in $VIGIL_PROBE_ONLY, comma-separated, if set;
// the single IP is $VIGIL_PROBE_IP (default 10.0.0.100, the bench's for
// its fill); more classes in $VIGIL_PROBE_EXTRA, each "name|query|source"
// (source may be empty), separated by ";". A search that fails fails the test, one that passes
// probeTimeout is logged; the other classes are timed either way.
func SearchCPU(t *testing.T, s ProbeStore, p Probe) {
	ctx := context.Background()
	org := cmp.Or(os.Getenv("VIGIL_PROBE_ORG"), "bench")
	newest, _, err := s.SearchArtifacts(ctx, org, vigil.ArtifactFilter{Page: vigil.Page{Limit: 1}})
	if err != nil || len(newest) == 0 {
		t.Fatalf("the newest artifact of org %q: %v", org, err)
	}
	end := newest[0].Timestamp.Add(time.Minute).Truncate(time.Second)
	only := os.Getenv("VIGIL_PROBE_ONLY")
	n, _ := strconv.Atoi(os.Getenv("VIGIL_PROBE_N"))
	if n == 0 {
		n = 5
	}
	clocks := append(slices.Clone(p.Clocks), CPUClock{Name: "", Read: func() time.Duration { return ProcessCPU(t) }})
	if len(p.Clocks) > 0 {
		clocks[len(clocks)-1].Name = "client"
	}
	for _, q := range probeClasses(end) {
		if slices.Contains(p.Skip, q.name) || only != "" && !slices.Contains(strings.Split(only, ","), q.name) {
			continue
		}
		q.f.Preview = true
		var wall []time.Duration
		cpu := make([][]time.Duration, len(clocks))
		var total int
		var est bool
		for range n {
			st, c0 := time.Now(), readClocks(clocks)
			cctx, cancel := context.WithTimeout(ctx, probeTimeout)
			_, tot, e, err := s.SearchArtifactsEstimated(cctx, org, q.f, 10000)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				t.Logf("%s: %v", q.name, err)
				break
			}
			if err != nil {
				t.Errorf("%s: %v", q.name, err)
				break
			}
			wall = append(wall, time.Since(st))
			for i, c := range readClocks(clocks) {
				cpu[i] = append(cpu[i], c-c0[i])
			}
			total, est = tot, e
		}
		if p.Trace != nil && os.Getenv("VIGIL_PROBE_TRACE") != "" {
			traceStatements(ctx, t, s, org, q.f, p.Trace)
		}
		if len(wall) == 0 {
			continue
		}
		slices.Sort(wall)
		line := fmt.Sprintf("%-18s wall min %8.1f med %8.1f max %8.1f ms", q.name, ms(wall[0]), ms(wall[len(wall)/2]), ms(wall[len(wall)-1]))
		for i, c := range clocks {
			slices.Sort(cpu[i])
			line += fmt.Sprintf("  %s med %8.1f ms", strings.TrimSpace(c.Name+" cpu"), ms(cpu[i][len(cpu[i])/2]))
		}
		t.Logf("%s  total %d est %v", line, total, est)
	}
}

type probeClass struct {
	name string
	f    vigil.ArtifactFilter
}

// probeClasses are the searches SearchCPU times, windows ending at end.
func probeClasses(end time.Time) []probeClass {
	day := vigil.TimeRange{Start: end.Add(-24 * time.Hour), End: end}
	month := vigil.TimeRange{Start: end.Add(-30 * 24 * time.Hour), End: end}
	// The address vigil bench picks for the fill's mix (its most frequent).
	ip := os.Getenv("VIGIL_PROBE_IP")
	if ip == "" {
		ip = "10.0.0.100"
	}
	return append([]probeClass{
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
	}, extraClasses()...)
}

// extraClasses are the classes of $VIGIL_PROBE_EXTRA.
func extraClasses() []probeClass {
	var out []probeClass
	for c := range strings.SplitSeq(os.Getenv("VIGIL_PROBE_EXTRA"), ";") {
		if f := strings.Split(c, "|"); len(f) == 3 {
			out = append(out, probeClass{f[0], vigil.ArtifactFilter{Query: f[1], Source: f[2]}})
		}
	}
	return out
}

// traceStatements runs one more search of f, logging each statement's
// CPU time (until the next one starts, or the search ends).
func traceStatements(ctx context.Context, t *testing.T, s ProbeStore, org string, f vigil.ArtifactFilter, install func(func(string, []any))) {
	var last string
	var lastArgs []any
	c0 := ProcessCPU(t)
	step := func() {
		if last != "" {
			t.Logf("  %7.1f ms cpu  %s %v", ms(ProcessCPU(t)-c0), strings.Join(strings.Fields(last), " "), lastArgs)
		}
		c0 = ProcessCPU(t)
	}
	install(func(q string, args []any) { step(); last, lastArgs = q, args })
	defer install(nil)
	if _, _, _, err := s.SearchArtifactsEstimated(ctx, org, f, 10000); err != nil {
		t.Fatal(err)
	}
	step()
}

func readClocks(clocks []CPUClock) []time.Duration {
	out := make([]time.Duration, len(clocks))
	for i, c := range clocks {
		out[i] = c.Read()
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
