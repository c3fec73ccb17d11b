package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestLongReadDoesNotStallWriter: while a reader holds an old snapshot (a
// slow search) and the WAL is past its restart size, the checkpointer's
// RESTART cannot finish; the writer must go on storing, not wait behind
// it for the busy timeout (10 s, then SQLITE_BUSY: before the fix each
// attempt kept writers out that long).
func TestLongReadDoesNotStallWriter(t *testing.T) {
	defer func(n int) { walRestartFrames = n }(walRestartFrames)
	walRestartFrames = 20
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lines := datasetLines(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next := 0
	batch := func() []*vigil.Artifact {
		var b []*vigil.Artifact
		for range 200 {
			l := lines[next%len(lines)]
			next++
			at = at.Add(time.Second)
			b = append(b, &vigil.Artifact{ID: vigil.NewID(), Source: l[0], Raw: l[1], Timestamp: at, CreatedAt: at})
		}
		return b
	}
	if err := s.InsertArtifacts(ctx, "o", batch()); err != nil {
		t.Fatal(err)
	}
	// The reader's snapshot ends in the WAL: no RESTART can finish while
	// it is open.
	conn, err := s.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts`).Scan(&n); err != nil || n != 200 {
		t.Fatalf("reader: %d artifacts, %v", n, err)
	}
	// Writes for 3 s, long enough for the checkpointer (every 200 ms) to
	// try RESTART several times; each write must finish well within the
	// busy timeout the old checkpointer held writers out for.
	stored := 200
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.InsertArtifacts(wctx, "o", batch())
		cancel()
		if err != nil {
			t.Fatalf("a write while a reader held an old snapshot, %d artifacts stored: %v", stored, err)
		}
		stored += 200
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts`).Scan(&n); err != nil || n != 200 {
		t.Fatalf("the reader's snapshot moved: %d artifacts, %v", n, err)
	}
	tx.Rollback()
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts`).Scan(&n); err != nil || n != stored {
		t.Fatalf("%d artifacts after the reader closed, %d stored: %v", n, stored, err)
	}
}

// TestConnectionPragmas: each pool runs with its own page cache and busy
// timeout, not the common ones (the driver sorts a DSN's pragmas, so a
// second cache_size used to lose to the writer's 64 MiB on every
// connection, and the checkpointer waited the common 10 s).
func TestConnectionPragmas(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name        string
		db          *sql.DB
		cache, busy int
	}{
		{"writer", s.w, -65536, 10000},
		{"reader", s.r, -16384, 10000},
		{"search", s.search, -16384, 10000},
		{"checkpointer", s.c, -2048, int(restartWait.Milliseconds())},
	} {
		var cache, busy int
		if err := c.db.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil {
			t.Fatal(err)
		}
		if err := c.db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if cache != c.cache || busy != c.busy {
			t.Errorf("%s: cache_size %d, busy_timeout %d; want %d, %d", c.name, cache, busy, c.cache, c.busy)
		}
	}
	// One writer: a second would wait on the first's lock (SQLITE_BUSY
	// after the busy timeout) instead of queueing in Go.
	for name, db := range map[string]*sql.DB{"writer": s.w, "checkpointer": s.c} {
		if n := db.Stats().MaxOpenConnections; n != 1 {
			t.Errorf("%s: %d connections at most, want 1", name, n)
		}
	}
}
