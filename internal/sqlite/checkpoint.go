package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// The writer connection does not checkpoint the WAL itself
// (wal_autocheckpoint=0): copying WAL frames back into the database file
// took ≈ 15 % of the writer's time when it ran inside its commits
// (BenchmarkProcess profile, docs/benchmarks.md). A goroutine does it on
// its own connection instead. PASSIVE checkpoints run beside the writer and
// the readers; when the WAL has grown past walRestartFrames anyway (a writer
// that never pauses never lets a PASSIVE checkpoint reach the WAL's end), a
// RESTART checkpoint makes the next writer start the WAL over, and
// journal_size_limit truncates the file.
const (
	checkpointEvery  = 200 * time.Millisecond
	walRestartFrames = 32768 // 128 MiB of 4 KiB pages
)

// checkpointLoop checkpoints until stop is closed, then once more.
func checkpointLoop(db *sql.DB, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			// The writer is closed: nothing can block a full checkpoint.
			db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
			return
		case <-t.C:
		}
		log, _ := checkpoint(db, "PASSIVE")
		if log > walRestartFrames {
			checkpoint(db, "RESTART")
		}
	}
}

// checkpoint runs one checkpoint in mode and returns the WAL's size in
// frames before it.
func checkpoint(db *sql.DB, mode string) (log int, err error) {
	var busy, done int
	err = db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &done)
	return log, err
}
