package vlogs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// TestSearchCPU times the search classes of vigil bench
// (storetest.SearchCPU, median of $VIGIL_PROBE_N) on the cluster of
// $VIGIL_PROBE_VLOGS ("front URL|storage URLs"), its tenants in the
// database at $VIGIL_PROBE_PG (as vigil bench --fill left them, org
// "bench"): the wall time of each search, this process's CPU time and
// that of each VictoriaLogs node of $VIGIL_PROBE_PIDS (comma-separated,
// read from /proc: the nodes must run on this machine). Skipped without
// VIGIL_PROBE_VLOGS.
func TestSearchCPU(t *testing.T) {
	urls := strings.Split(os.Getenv("VIGIL_PROBE_VLOGS"), "|")
	if len(urls) != 2 {
		t.Skip()
	}
	ctx := context.Background()
	pg, err := postgres.Open(ctx, os.Getenv("VIGIL_PROBE_PG"), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ParseURLs(urls[0], urls[1])
	if err != nil {
		t.Fatal(err)
	}
	s := New(pg, cl)
	defer s.Close()
	var pids []int
	for p := range strings.SplitSeq(os.Getenv("VIGIL_PROBE_PIDS"), ",") {
		if pid, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	storetest.SearchCPU(t, s, storetest.Probe{
		Clocks: []storetest.CPUClock{{Name: "nodes", Read: func() time.Duration {
			var sum time.Duration
			for _, pid := range pids {
				sum += procCPU(t, pid)
			}
			return sum
		}}},
	})
}

// procCPU is the CPU time process pid has run so far: the sum over its
// threads of the first field of /proc/pid/task/*/schedstat (nanoseconds;
// /proc/pid/schedstat is its first thread's alone).
func procCPU(t *testing.T, pid int) time.Duration {
	files, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(files) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	var sum time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended
		}
		ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += time.Duration(ns)
	}
	return sum
}
