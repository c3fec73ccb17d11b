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
//
// A RESTART (like FULL) keeps new writers out while it waits for the
// writer to finish and for readers of older snapshots to move on, for as
// long as the checkpointer's busy timeout: a search reading for seconds
// then stalled ingest for as long, up to the 10 s busy timeout, after
// which the writer's own statements failed with SQLITE_BUSY. The
// checkpointer waits restartWait at most, and after a RESTART that
// readers kept from finishing the next is tried restartBackoff later;
// meanwhile the WAL grows past walRestartFrames.
const (
	checkpointEvery = 200 * time.Millisecond
	restartWait     = 200 * time.Millisecond
	restartBackoff  = 2 * time.Second
)

// walRestartFrames is the WAL size, in frames, above which a RESTART
// checkpoint is run: 128 MiB of 4 KiB pages (tests lower it).
var walRestartFrames = 32768

// checkpointLoop checkpoints until stop is closed, then once more.
func checkpointLoop(db *sql.DB, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	var retry time.Time // no RESTART before
	for {
		select {
		case <-stop:
			// The writer is closed: only readers finishing a search can
			// hold up a full checkpoint, and they are waited for.
			db.Exec(`PRAGMA busy_timeout = 10000`)
			db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
			return
		case <-t.C:
		}
		_, log, _ := checkpoint(db, "PASSIVE")
		if log > walRestartFrames && !time.Now().Before(retry) {
			if busy, _, err := checkpoint(db, "RESTART"); busy || err != nil {
				retry = time.Now().Add(restartBackoff)
			}
		}
	}
}

// checkpoint runs one checkpoint in mode and returns whether it could
// not finish (the writer or readers in the way) and the WAL's size in
// frames before it.
func checkpoint(db *sql.DB, mode string) (busy bool, log int, err error) {
	var b, done int
	err = db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&b, &log, &done)
	return b != 0, log, err
}
