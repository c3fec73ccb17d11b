package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestFilesPrivate: the database, its WAL and shared-memory files are
// created readable by their owner only (0600), whatever the umask (Vigil's
// own files, vigil.db-last included, are 0600 always); a
// database whose mode the operator chose keeps it, and its WAL and SHM
// follow it (SQLite derives theirs from the database file's).
func TestFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	check := func(t *testing.T, db string, want os.FileMode) {
		t.Helper()
		s, err := sqlite.Open(ctx, db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%s: mode %#o, want %#o", filepath.Base(f), got, want)
			}
		}
	}
	t.Run("created", func(t *testing.T) { check(t, filepath.Join(t.TempDir(), "vigil.db"), 0o600) })
	t.Run("chosen by the operator", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "vigil.db")
		if err := os.WriteFile(db, nil, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(db, 0o640); err != nil {
			t.Fatal(err)
		}
		check(t, db, 0o640)
	})
}
