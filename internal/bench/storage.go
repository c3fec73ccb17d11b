package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// storeFunc stores one batch of one org's artifacts.
type storeFunc func(ctx context.Context, org string, arts []*vigil.Artifact) error

// storageLimit measures S: batches of f.Batch of the same lines stored in
// a tight loop for min(duration, 20 s), the rate the pipeline could reach
// if storing were all it did. Into SQLite (the embedded store): by
// sqlite.Store.InsertArtifacts (rows + FTS5 index, nothing else) into a
// fresh database. Into PostgreSQL (--database-url): S_PG, by COPY into the
// store's tables in a scratch schema of that database (storage_pg.go).
func (b *bench) storageLimit(ctx context.Context) error {
	span := min(b.f.Duration, 20*time.Second)
	engine, open := EngineSQLite, b.scratchSQLite
	if b.f.DatabaseURL != "" {
		engine, open = EnginePostgres, b.scratchPostgres
	}
	store, done, err := open(ctx)
	if err != nil {
		return err
	}
	b.logf("storage limit: %s, batches of %d for %s", engine, b.f.Batch, span)
	n, secs, err := b.insertLoop(ctx, span, store)
	if derr := done(); err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	r := &StorageReport{Engine: engine, Artifacts: n, Seconds: secs, Rate: float64(n) / secs}
	if b.rep.Load != nil && b.rep.Load.E2ERate > 0 {
		r.Ratio = b.rep.Load.E2ERate / r.Rate
	}
	b.rep.Storage = r
	return nil
}

// scratchSQLite opens a fresh SQLite store in a temporary directory; done
// closes and removes it.
func (b *bench) scratchSQLite(ctx context.Context) (storeFunc, func() error, error) {
	dir, err := os.MkdirTemp("", "vigil-bench-s-")
	if err != nil {
		return nil, nil, fmt.Errorf("temporary store: %w", err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "s.db"), sqlite.Options{FsyncAlways: b.f.Fsync == "always"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("temporary store: %w", err)
	}
	return st.InsertArtifacts, func() error {
		err := st.Close()
		os.RemoveAll(dir)
		return err
	}, nil
}

// insertLoop stores batches with store for span of timed work and returns
// the artifacts stored and the seconds timed.
func (b *bench) insertLoop(ctx context.Context, span time.Duration, store storeFunc) (int64, float64, error) {
	var n int64
	var timed time.Duration
	next := 0
	for timed < span && ctx.Err() == nil {
		start := time.Now()
		arts := make([]*vigil.Artifact, b.f.Batch)
		for k := range arts {
			j := next % len(b.lines)
			next++
			l := b.lines[j]
			ts := start
			if b.times != nil {
				ts = b.times[j]
			}
			arts[k] = &vigil.Artifact{ID: vigil.NewID(), OrgID: "bench", Source: l.Source, Raw: l.Raw,
				Timestamp: ts, CreatedAt: start, Metadata: json.RawMessage("{}")}
		}
		if err := store(ctx, "bench", arts); err != nil {
			return 0, 0, fmt.Errorf("store a batch: %w", err)
		}
		timed += time.Since(start)
		n += int64(len(arts))
	}
	return n, timed.Seconds(), ctx.Err()
}
