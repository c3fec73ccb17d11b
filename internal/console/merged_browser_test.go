package console_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestBrowserMerged: an incident merged into another has left the queue
// (neither listed nor counted as New), and opening it leads to the
// incident it was merged into, which says so (browser/merged.mjs). The
// incidents come from observations posted through the API: two on one
// address each, then one on both, which merges the newer incident into
// the older.
func TestBrowserMerged(t *testing.T) {
	node, chromium := browserTools(t)
	dir := t.TempDir()
	bin := buildVigil(t, dir)
	data := filepath.Join(dir, "data")
	base := startServe(t, bin, data)
	admin := mintToken(t, bin, data, time.Hour, "acme", "admin")
	observe := func(desc string, ips ...string) string {
		t.Helper()
		var nodes []map[string]string
		for _, ip := range ips {
			nodes = append(nodes, map[string]string{"type": "IP", "value": ip})
		}
		var o struct {
			IncidentID string `json:"incident_id"`
		}
		if st := apiDo(t, "POST", base+"/v1/observations", admin, map[string]any{"type": "network", "description": desc, "nodes": nodes}, &o); st != http.StatusCreated {
			t.Fatalf("POST /v1/observations: %d", st)
		}
		return o.IncidentID
	}
	kept := observe("port scan from 203.0.113.9", "203.0.113.9")
	gone := observe("port scan from 198.51.100.23", "198.51.100.23")
	if bridge := observe("one scanner behind both addresses", "203.0.113.9", "198.51.100.23"); bridge != kept {
		t.Fatalf("setup: the bridging observation joined %s, want the older incident %s", bridge, kept)
	}
	runBrowser(t, node, chromium, "merged.mjs", 2*time.Minute, "BASE_URL="+base, "TOKEN_ADMIN="+admin, "KEPT="+kept, "GONE="+gone)
}
