// Package datadir guards the embedded data directory: one process at a
// time may hold it.
//
// Two processes writing one SQLite file and one JetStream store directory
// do not fail loudly: the second server takes the queue's files over while
// the first keeps acknowledging batches into files nobody reads again. The
// lock makes the second process refuse to start instead.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the name of the lock file inside the data directory.
const LockFile = "vigil.lock"

// Lock is an exclusive hold on a data directory. The kernel releases it
// when the process exits, however it exits, so a SIGKILL never leaves a
// stale lock behind.
type Lock struct {
	f *os.File
}

// ErrLocked is returned (wrapped) when another process holds the lock.
var ErrLocked = errors.New("data directory in use")

// Acquire creates dir if needed and takes its lock without waiting. When
// another process holds it, the error wraps ErrLocked and names that
// process's PID.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			abs, _ := filepath.Abs(dir)
			return nil, fmt.Errorf("%w: %s is used by another vigil process (%s); stop it, or give this one another --data-dir",
				ErrLocked, abs, holder(f))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The PID is for the message a second process prints; the flock, not
	// the file's content, is the lock.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// holder describes the process named in the lock file.
func holder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid := strings.TrimSpace(string(b[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "PID unknown"
	}
	return "PID " + pid
}

// Release gives the lock up. It is also released when the process exits.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
