package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/vigil-soc/vigil/internal/correlate"
)

// The Tally's signals outlive the process in <database>-tally.snapshot:
// written when the store closes, read back and removed when it opens
// (correlate.Tally.Save). A crash leaves none, and loses what the Tally
// held (docs/detections.md, "Restarts"); a snapshot left from before
// the last open would count its signals twice, so the open removes it
// before the store takes a write.

// loadTally returns a Tally of limit signals that knows every key the
// database holds signals of (those that came near a threshold, and all of
// them from before signals were counted in memory), holds what the
// snapshot at path+".snapshot" holds, and spills its keys of a few signals
// to files in path (correlate.Tally.SpillTo).
func loadTally(ctx context.Context, db *sql.DB, limit int, path string, log *slog.Logger) (*correlate.Tally, error) {
	t := correlate.NewTally(0, limit)
	if err := t.SpillTo(path); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	// Served by the table itself, clustered by (org, detector, key, at).
	rows, err := db.QueryContext(ctx, `SELECT org_id, detector, key, MAX(at) FROM detect_signals GROUP BY org_id, detector, key`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: detection keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var org, det, key string
		var newest int64
		if err := rows.Scan(&org, &det, &key, &newest); err != nil {
			return nil, fmt.Errorf("sqlite: detection keys: %w", err)
		}
		t.Hold(org, det, key, newest)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: detection keys: %w", err)
	}
	if err := restoreTally(t, path+".snapshot", log); err != nil {
		return nil, err
	}
	return t, nil
}

// restoreTally reads the snapshot at path into t, if there is one, and
// removes it. A snapshot it cannot read is logged and removed: the keys
// below their thresholds then count from zero, as after a crash.
func restoreTally(t *correlate.Tally, path string, log *slog.Logger) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	start := time.Now()
	keys, err := t.Restore(f)
	f.Close()
	if err != nil {
		log.Error("detection counts below their thresholds start from zero", slog.String("path", path), slog.Any("error", err))
	} else if keys > 0 {
		log.Info("detection counts restored", slog.Int("keys", keys), slog.Duration("took", time.Since(start)))
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// saveTally writes what the tally holds to its snapshot, or, when it
// cannot, to the database, so that the next process counts it.
func (s *Store) saveTally(path string) error {
	start := time.Now()
	keys, err := writeSnapshot(s.tally, path)
	if err == nil {
		if keys > 0 {
			s.log.Info("detection counts saved", slog.Int("keys", keys), slog.Duration("took", time.Since(start)))
		}
		return nil
	}
	s.log.Error("detection counts go to the database", slog.String("path", path), slog.Any("error", err))
	held := s.tally.Drain()
	if len(held) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return wrap("save detection signals", s.tx(ctx, func(tx *wtx) error {
		for _, h := range held {
			if _, err := s.corrTx(tx, h.Org).RecordSignals(ctx, h.Key, h.Signals); err != nil {
				return err
			}
		}
		return nil
	}))
}

// writeSnapshot writes t's snapshot to path, durably: to a file beside
// it, synced, then renamed.
func writeSnapshot(t *correlate.Tally, path string) (int, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("sqlite: %w", err)
	}
	keys, err := t.Save(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("sqlite: tally snapshot: %w", err)
	}
	return keys, syncDir(filepath.Dir(path))
}

// syncDir makes the names in dir durable (a file created, renamed or
// removed).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlite: sync %s: %w", dir, err)
	}
	return nil
}
