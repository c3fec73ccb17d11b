package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
)

// TestLostConnectionIsTransient: when the server drops the store's
// connections (a restart, a failover), the write that finds its connection
// gone fails with a transient error — the pipeline retries it rather than
// dead-lettering the message — and the next write succeeds on a new
// connection.
func TestLostConnectionIsTransient(t *testing.T) {
	requirePostgres(t)
	ctx := context.Background()
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{MaxConns: 1})
	const org = "org-lost"
	batch := func(tag string) []*vigil.Artifact {
		now := time.Now().UTC()
		out := make([]*vigil.Artifact, 5)
		for i := range out {
			out[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "test", Timestamp: now, CreatedAt: now,
				Raw: fmt.Sprintf("%s %d", tag, i), Metadata: json.RawMessage("{}")}
		}
		return out
	}
	if err := s.InsertArtifacts(ctx, org, batch("before")); err != nil {
		t.Fatal(err)
	}

	admin := mustConn(t, dbURL)
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminating the store's connections: %d terminated, %v", n, err)
	}
	retry := batch("retried")
	err := s.InsertArtifacts(ctx, org, retry)
	if err == nil {
		t.Fatal("insert on a terminated connection succeeded; want a transient failure (the test proves nothing)")
	}
	if !vigil.Transient(err) {
		t.Fatalf("insert on a terminated connection: %v (code %q), want a transient error", err, vigil.ErrorCode(err))
	}
	t.Logf("insert on a terminated connection: %v (%s)", err, vigil.ErrorCode(err))
	if err := s.InsertArtifacts(ctx, org, retry); err != nil {
		t.Fatalf("retried insert: %v", err)
	}
	if _, total, err := s.SearchArtifacts(ctx, org, vigil.ArtifactFilter{}); err != nil || total != 10 {
		t.Fatalf("%d artifacts (%v), want 10", total, err)
	}
}
