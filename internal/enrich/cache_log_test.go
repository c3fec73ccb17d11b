package enrich

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestCacheReadLogsFailuresOnly: a cache read or write that fails warns,
// but one cut short by a stopping server does not (a stop with a full
// look-up queue once logged 1,755 warnings).
func TestCacheReadLogsFailuresOnly(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "v.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e, err := New(Config{DNSServers: []string{"127.0.0.1:9"}}, st, prometheus.NewRegistry(), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f := e.freshness(e.orgSettings(testOrg))

	stopping, cancel := context.WithCancel(context.Background())
	cancel()
	if _, fresh := e.cacheGet(stopping, ProviderDNS, "203.0.113.7", f); fresh {
		t.Fatal("a cancelled read found a fresh entry")
	}
	if logs.Len() != 0 {
		t.Fatalf("a read cut short by the stop logged: %s", logs.String())
	}
	ent := &vigil.CacheEntry{Provider: ProviderDNS, Key: "203.0.113.9", FetchedAt: time.Now()}
	e.cachePut(stopping, ent)
	if logs.Len() != 0 {
		t.Fatalf("a write cut short by the stop logged: %s", logs.String())
	}

	st.Close() // now every read fails
	if _, fresh := e.cacheGet(context.Background(), ProviderDNS, "203.0.113.8", f); fresh {
		t.Fatal("a failed read found a fresh entry")
	}
	if !strings.Contains(logs.String(), "enrichment cache read failed") {
		t.Fatalf("a failed read logged nothing: %q", logs.String())
	}
	e.cachePut(context.Background(), ent)
	if !strings.Contains(logs.String(), "enrichment cache write failed") {
		t.Fatalf("a failed write logged nothing: %q", logs.String())
	}
}
