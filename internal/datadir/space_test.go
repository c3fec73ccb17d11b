package datadir

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func TestReserve(t *testing.T) {
	tests := []struct {
		size, want uint64
	}{
		{64 << 20, 64 << 20 * 5 / 100}, // a small disk keeps 5 %: 3.2 MiB
		{4 << 30, 4 << 30 * 5 / 100},   // 205 MiB
		{6 << 30, 256 << 20},           // 5 % would be 307 MiB: at most 256
		{2 << 40, 256 << 20},
		{0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			if got := Reserve(tt.size); got != tt.want {
				t.Errorf("Reserve(%d) = %d, want %d", tt.size, got, tt.want)
			}
		})
	}
}

// TestBallast: on a disk with room, a start writes the ballast file, whose
// room ingest does not count as free (Available); without the file that
// room is held back all the same, so releasing it never reopens ingest.
func TestBallast(t *testing.T) {
	dir := t.TempDir()
	free, size, err := Space(dir)
	if err != nil {
		t.Skipf("no statfs here: %v", err)
	}
	if free < Reserve(size)+2*StartRoom(size) {
		t.Fatalf("the test's disk has %d MiB free: too little to test the ballast", free>>20)
	}
	if err := KeepBallast(dir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, BallastFile))
	if err != nil || uint64(fi.Size()) != StartRoom(size) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ballast file: %v, %v; want %d bytes, 0600", fi, err, StartRoom(size))
	}
	// Other programs write meanwhile (CI runs packages in parallel on the
	// same disk): compare with a margin, and measure again when a pair
	// differs by more. A wrong account differs by the ballast, 16 MiB or
	// more, every time.
	var withBallast, without uint64
	for try := range 5 {
		if try > 0 {
			if err := KeepBallast(dir, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
		}
		withBallast, _, _ = Available(dir)
		if err := os.Remove(filepath.Join(dir, BallastFile)); err != nil {
			t.Fatal(err)
		}
		without, _, _ = Available(dir)
		if d := int64(without) - int64(withBallast); d <= 4<<20 && d >= -4<<20 {
			return
		}
	}
	t.Errorf("Available with the ballast %d, without %d (5 tries): releasing the ballast changed what ingest may use", withBallast, without)
}
