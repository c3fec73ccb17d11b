package datadir

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// The embedded queue and SQLite keep their files in the data dir. Ingest
// stops while some room is left on its disk (Reserve), so that neither
// JetStream nor SQLite is the one to hit ENOSPC; reads and the workers go
// on.
const (
	maxReserve     = 256 << 20
	reservePercent = 5
)

// Reserve is the free space ingest leaves on a file system of size
// bytes: 5 %, at most 256 MiB.
func Reserve(size uint64) uint64 {
	return min(size*reservePercent/100, maxReserve)
}

// BallastFile is the name of the file that keeps some of the data dir's
// disk for starting on a disk another program filled.
const BallastFile = "space-ballast"

// startRoom is the free space a start needs: the embedded JetStream may
// rewrite a message block (at most 8 MiB) while it recovers a stream whose
// state file a full disk left empty, and the nats-server it embeds crashes
// when that write fails; SQLite needs its shared-memory index.
const startRoom = 16 << 20

// StartRoom is the free space a start on a file system of size bytes
// needs, and the size of the ballast kept for it: 16 MiB, at most a
// quarter of the file system.
func StartRoom(size uint64) uint64 {
	return min(startRoom, size/4)
}

// ErrDiskFull is wrapped by the start errors of a process whose data dir's
// disk is full.
var ErrDiskFull = errors.New("the disk of the data directory is full")

// Available returns the space free on dir's disk for new data, and the
// disk's size: the free bytes less what the ballast file should hold and
// does not (it was released for a start on a full disk, or never
// written), so that releasing the ballast does not reopen ingest.
func Available(dir string) (avail, size uint64, err error) {
	free, size, err := Space(dir)
	if err != nil {
		return 0, 0, err
	}
	keep := StartRoom(size)
	if fi, err := os.Stat(filepath.Join(dir, BallastFile)); err == nil {
		keep -= min(keep, uint64(fi.Size()))
	}
	return free - min(free, keep), size, nil
}

// KeepBallast holds a ballast file of StartRoom bytes in dir while its
// disk has room, and deletes it when the disk has less than Reserve free,
// so that a process started on a disk another program filled has room to
// open its database and queue: it then starts with ingest refused (507)
// and reads working, and ingest resumes once space is freed. It returns
// an error wrapping ErrDiskFull when even then less than StartRoom is
// free: starting would crash the embedded queue or fail to open SQLite.
// Call it with the lock held.
func KeepBallast(dir string, log *slog.Logger) error {
	free, size, err := Space(dir)
	if err != nil {
		return nil
	}
	path := filepath.Join(dir, BallastFile)
	fi, statErr := os.Stat(path)
	have := statErr == nil
	want := StartRoom(size)
	if free < Reserve(size) {
		if have {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("data dir: the disk is full and its ballast file could not be deleted: %w", err)
			}
			free += uint64(fi.Size())
		}
		if free < want {
			return fmt.Errorf("%w (%s: %d KiB free of %d MiB, and no ballast file left to release): "+
				"vigil needs %d MiB free to start; free space on it, then start vigil again",
				ErrDiskFull, dir, free>>10, size>>20, want>>20)
		}
		log.Error("data dir: the disk is full; starting with ingest refused (507) until space is freed on it, reads work",
			slog.String("data_dir", dir), slog.Uint64("free_bytes", free), slog.Uint64("reserve_bytes", Reserve(size)),
			slog.Bool("ballast_released", have))
		return nil
	}
	if (have && uint64(fi.Size()) >= want) || free < Reserve(size)+want {
		return nil
	}
	if err := writeBallast(path, want); err != nil {
		os.Remove(path)
		log.Warn("data dir: could not write the ballast file", slog.String("error", err.Error()))
	}
	return nil
}

// writeBallast writes n bytes of zeros to path, allocating them on disk
// (a sparse file would keep nothing).
func writeBallast(path string, n uint64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for left := n; left > 0; {
		k := min(left, uint64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			f.Close()
			return err
		}
		left -= k
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// DiskFullError wraps err, a failure to start, with ErrDiskFull and what
// to do when dir's disk is below the reserve; otherwise it returns err.
func DiskFullError(dir string, err error) error {
	free, size, serr := Space(dir)
	if err == nil || serr != nil || free >= Reserve(size) {
		return err
	}
	return fmt.Errorf("%w (%s: %d KiB free of %d MiB): free space on it, then start vigil again: %w",
		ErrDiskFull, dir, free>>10, size>>20, err)
}
