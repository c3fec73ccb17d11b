package console_test

import (
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
	srv := serveForBrowser(t)
	admin := srv.token(time.Hour, "acme", "admin")
	observeIPs := func(desc string, ips ...string) string {
		t.Helper()
		var nodes []map[string]string
		for _, ip := range ips {
			nodes = append(nodes, map[string]string{"type": "IP", "value": ip})
		}
		return observe(t, srv.base, admin, map[string]any{"type": "network", "description": desc, "nodes": nodes})
	}
	kept := observeIPs("port scan from 203.0.113.9", "203.0.113.9")
	gone := observeIPs("port scan from 198.51.100.23", "198.51.100.23")
	if bridge := observeIPs("one scanner behind both addresses", "203.0.113.9", "198.51.100.23"); bridge != kept {
		t.Fatalf("setup: the bridging observation joined %s, want the older incident %s", bridge, kept)
	}
	srv.browse("merged.mjs", 2*time.Minute, "TOKEN_ADMIN="+admin, "KEPT="+kept, "GONE="+gone)
}
