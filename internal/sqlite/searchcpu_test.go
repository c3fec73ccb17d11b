package sqlite_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// TestSearchCPU times the search classes of vigil bench in this process
// (storetest.SearchCPU: wall and CPU time of each, median of
// $VIGIL_PROBE_N) on the store at $VIGIL_PROBE_DB, migrated by opening
// it. With $VIGIL_PROBE_TRACE set, one more search of each class logs the
// CPU time of each of its statements (its rows read by the next). Skipped
// without VIGIL_PROBE_DB.
func TestSearchCPU(t *testing.T) {
	path := os.Getenv("VIGIL_PROBE_DB")
	if path == "" {
		t.Skip()
	}
	t0 := time.Now()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("open %v", time.Since(t0))
	storetest.SearchCPU(t, s, storetest.Probe{
		Trace: func(hook func(string, []any)) { sqlite.SetStatementHook(s, hook) },
	})
}
