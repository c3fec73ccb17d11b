package postgres_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// TestSearchCPU times the search classes of vigil bench
// (storetest.SearchCPU, median of $VIGIL_PROBE_N) on the database at
// $VIGIL_PROBE_PG: the wall time of each search, the CPU time of the
// server process that ran it (the store holds one connection, whose
// backend's CPU is read from /proc: the server must run on this machine)
// and that of this process. With $VIGIL_PROBE_PHRASES set, addresses are
// read as phrases, as before migration 0022. Skipped without
// VIGIL_PROBE_PG.
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
	storetest.SearchCPU(t, s, storetest.Probe{
		Clocks: []storetest.CPUClock{{Name: "server", Read: func() time.Duration { return procCPU(t, backend) }}},
		// The classes this probe timed for docs/benchmarks.md (the
		// SQLite store's probe times three more).
		Skip: []string{"list source", "list 24h", "rare in source"},
	})
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
