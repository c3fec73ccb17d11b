package sqlite_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestSignalNodesStoredCompactly: a signal's nodes are stored in
// correlate's compact form, not as JSON, and the observation a burst
// records names the same nodes whichever form its signals' rows hold
// (rows written by an older build hold JSON).
func TestSignalNodesStoredCompactly(t *testing.T) {
	ctx := t.Context()
	s := openTallyStore(t, filepath.Join(t.TempDir(), "v.db"), -1) // every signal in the database
	const key = "198.51.100.7"
	var sigs []vigil.Signal
	for i := range 5 {
		dst := "203.0.113." + strconv.Itoa(i+1)
		sg := signalAt(t, fmt.Sprintf("0190a000-0000-7000-8000-%012d", i), key, time.Duration(i)*time.Second, dst, s)
		sg.Nodes = []vigil.NodeRef{{Type: vigil.NodeIP, Value: key, Key: true}, {Type: vigil.NodeIP, Value: dst},
			{Type: vigil.NodeHost, Value: "edge-01"}}
		sigs = append(sigs, sg)
	}
	if n := detectAll(t, s, scanDetection(key, sigs[:4])); n != 0 {
		t.Fatalf("4 signals fired %d detections; the threshold is 5", n)
	}
	forms, err := sqlite.QueryStrings(ctx, s, `SELECT typeof(nodes) || ' ' || length(nodes) FROM detect_signals`)
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) != 4 {
		t.Fatalf("%d signal rows, want 4", len(forms))
	}
	for _, f := range forms {
		var typ string
		var n int
		if _, err := fmt.Sscan(f, &typ, &n); err != nil || typ != "blob" || n > 40 {
			t.Errorf("nodes stored as %q, want a blob of at most 40 bytes (JSON took %d)", f, len(mustJSON(t, sigs[0].Nodes)))
		}
	}
	// Two rows as an older build wrote them.
	for _, sg := range sigs[:2] {
		if err := sqlite.ExecSQL(ctx, s, `UPDATE detect_signals SET nodes = ? WHERE artifact_id = ?`, mustJSON(t, sg.Nodes), sg.ArtifactID); err != nil {
			t.Fatal(err)
		}
	}
	if n := detectAll(t, s, scanDetection(key, sigs[4:])); n != 1 {
		t.Fatalf("the fifth signal fired %d detections, want 1", n)
	}
	obs, _, err := s.ListObservations(ctx, "org", vigil.ObservationFilter{Page: vigil.Page{Limit: 10}})
	if err != nil || len(obs) != 1 {
		t.Fatalf("observations: %d, %v; want 1", len(obs), err)
	}
	var got []string
	for _, id := range obs[0].NodeIDs {
		n, err := s.GetNode(ctx, "org", id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n.Type+" "+n.Value)
	}
	slices.Sort(got)
	want := []string{"Host edge-01", "IP 198.51.100.7", "IP 203.0.113.1", "IP 203.0.113.2", "IP 203.0.113.3", "IP 203.0.113.4", "IP 203.0.113.5"}
	if !slices.Equal(got, want) {
		t.Errorf("the observation's nodes are %q, want %q", got, want)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
