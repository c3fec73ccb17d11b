package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/bench"
)

// TestBenchURLTwice runs vigil bench --url twice against one vigil serve,
// with its search phase: the second run finds the first one's artifacts
// in the store and reports no problem, its search classes expecting what
// the store held before (the first run's totals) plus what it posted,
// and the stored count is both runs' artifacts.
func TestBenchURLTwice(t *testing.T) {
	dir := t.TempDir()
	p := startVigil(t, "vigil", filepath.Join(dir, "data"))
	token := mintToken(t, filepath.Join(dir, "data"), "bench", "signals:write", "signals:read")
	var reps [2]bench.Report
	for i := range reps {
		reps[i] = runBenchURL(t, p, token, filepath.Join(dir, "run.json"))
		if len(reps[i].Problems) != 0 {
			t.Errorf("run %d: problems %q", i+1, reps[i].Problems)
		}
	}
	first, second := reps[0], reps[1]
	if first.Load.Accepted <= 0 || second.Load.Accepted <= 0 || first.Search == nil || second.Search == nil {
		t.Fatalf("accepted %d and %d, search %v and %v", first.Load.Accepted, second.Load.Accepted, first.Search, second.Search)
	}
	if first.Search.Stored != first.Load.Accepted || second.Search.Stored != first.Load.Accepted+second.Load.Accepted {
		t.Errorf("stored %d then %d, accepted %d then %d: want the first run's, then both runs'",
			first.Search.Stored, second.Search.Stored, first.Load.Accepted, second.Load.Accepted)
	}
	firstTotal := map[string]int64{}
	for _, c := range first.Search.Classes {
		firstTotal[c.Name] = c.Total
	}
	checked := 0
	for _, c := range second.Search.Classes {
		if c.Expected == nil {
			continue
		}
		checked++
		if c.Before == nil || *c.Before != firstTotal[c.Name] {
			t.Errorf("search %s: before %v, the first run ended at %d", c.Name, c.Before, firstTotal[c.Name])
		}
		if !c.Estimated && c.Total != *c.Expected {
			t.Errorf("search %s: total %d, expected %d", c.Name, c.Total, *c.Expected)
		}
		if c.Total <= firstTotal[c.Name] && *c.Expected > *c.Before {
			t.Errorf("search %s: total %d, not above the first run's %d though the second posted matches", c.Name, c.Total, firstTotal[c.Name])
		}
	}
	// Every class but the three with a time window has an expected total.
	if checked < len(second.Search.Classes)-3 {
		t.Errorf("%d of %d search classes checked in the second run", checked, len(second.Search.Classes))
	}
}

// runBenchURL runs vigil bench --url against p briefly (1 s of load, the
// search phase with 2 requests per class) and returns its JSON report.
func runBenchURL(t *testing.T, p *proc, token, jsonPath string) bench.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, vigilBin, "bench", "--url", p.base, "--token", token, "--metrics-url", p.metrics,
		"--duration", "1s", "--clients", "2", "--batch", "200", "--storage-limit=false",
		"--search", "--search-artifacts", "0", "--search-requests", "2", "--json", jsonPath)
	cmd.Env = childEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("vigil bench: %v\n%s", err, out.String())
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vigil bench:\n%s", out.String())
		}
	})
	return rep
}
