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

// storageLimit measures S: batches of f.Batch of the same lines stored by
// sqlite.Store.InsertArtifacts (rows + FTS5 index, nothing else) into a
// fresh database, in a tight loop for min(duration, 20 s): the rate the
// pipeline could reach if storing were all it did.
func (b *bench) storageLimit(ctx context.Context) error {
	span := min(b.f.Duration, 20*time.Second)
	b.logf("storage limit: InsertArtifacts of batches of %d for %s", b.f.Batch, span)
	n, secs, err := b.insertLoop(ctx, span)
	if err != nil {
		return err
	}
	r := &StorageReport{Artifacts: n, Seconds: secs, Rate: float64(n) / secs}
	if b.rep.Load.E2ERate > 0 {
		r.Ratio = b.rep.Load.E2ERate / r.Rate
	}
	b.rep.Storage = r
	return nil
}

// insertLoop stores batches into a fresh store for span of timed work and
// returns the artifacts stored and the seconds timed.
func (b *bench) insertLoop(ctx context.Context, span time.Duration) (int64, float64, error) {
	dir, err := os.MkdirTemp("", "vigil-bench-s-")
	if err != nil {
		return 0, 0, fmt.Errorf("temporary store: %w", err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "s.db"), sqlite.Options{FsyncAlways: b.f.Fsync == "always"})
	if err != nil {
		return 0, 0, fmt.Errorf("temporary store: %w", err)
	}
	defer st.Close()
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
		if err := st.InsertArtifacts(ctx, "bench", arts); err != nil {
			return 0, 0, fmt.Errorf("insert a batch: %w", err)
		}
		timed += time.Since(start)
		n += int64(len(arts))
	}
	return n, timed.Seconds(), ctx.Err()
}
