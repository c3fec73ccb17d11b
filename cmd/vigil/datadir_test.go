package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logWriter is a log that a test reads while the server writes it.
type logWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveUntil runs vigil serve with args until it logs want, calls while
// (if not nil) with the log so far as it serves, then stops it and returns its log.
func serveUntil(t *testing.T, want string, while func(log string), env map[string]string, args ...string) string {
	t.Helper()
	return runUntil(t, "serve", want, while, env, args...)
}

// runUntil is serveUntil for the subcommand sub (serve or worker).
func runUntil(t *testing.T, sub, want string, while func(log string), env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var log logWriter
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{sub, "--addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, &log, &log)
	}()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(log.String(), want) {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve ended before logging %q: %v\n%s", want, err, log.String())
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("serve did not log %q within 30s:\n%s", want, log.String())
		case <-time.After(20 * time.Millisecond): // polling the log
		}
	}
	if while != nil {
		while(log.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	return log.String()
}

// TestDataDirPrivate: with a umask of 022, everything vigil serve creates
// in a new data dir (the embedded database, its WAL and SHM, the queue's
// files, the secret, the lock) is its owner's alone: directories 0700,
// files 0600.
func TestDataDirPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	n := 0
	walk := func() {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walked (a queue block)
			}
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			want := os.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if got := fi.Mode().Perm(); got != want {
				rel, _ := filepath.Rel(dir, path)
				t.Errorf("%s: mode %#o, want %#o", rel, got, want)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	serveUntil(t, `"msg":"listening"`, func(string) {
		walk()
		for _, f := range []string{"vigil.db", "vigil.db-wal", "vigil.db-shm", "jwt-secret", "jetstream"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s not created: %v", f, err)
			}
		}
	}, nil, "--data-dir", dir)
	walk() // and after a clean stop
	t.Logf("%d files and directories checked", n)
}

// TestOpenDataDirWarned: a data dir the operator opened to others keeps its
// mode, and the start says so.
func TestOpenDataDirWarned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o750)
	log := serveUntil(t, `"msg":"listening"`, nil, nil, "--data-dir", dir)
	if !strings.Contains(log, "the data dir is open to other users") || !strings.Contains(log, `"mode":"0750"`) {
		t.Errorf("no warning of the open data dir:\n%s", log)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o750 {
		t.Errorf("data dir mode changed to %#o", fi.Mode().Perm())
	}
}
