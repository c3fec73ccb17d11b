package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A cut CPU profile is one valid profile a period, numbered from 1, the
// last ended by stop: what `go tool pprof -diff_base F.1 F.3` reads.
func TestCPUProfileEvery(t *testing.T) {
	name := filepath.Join(t.TempDir(), "cpu")
	b := &bench{f: Config{CPUProfile: name, CPUProfileEvery: time.Hour}}
	p, err := b.startCPUProfile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		ended, err := p.rotate()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%s.%d", name, i); ended != want {
			t.Errorf("rotation %d ended %s, want %s", i, ended, want)
		}
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(); err != nil { // twice: the deferred stop after the explicit one
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		data, err := os.ReadFile(fmt.Sprintf("%s.%d", name, i))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("profile %d: %v", i, err)
		}
		if body, err := io.ReadAll(zr); err != nil || len(body) == 0 {
			t.Errorf("profile %d: %d bytes, %v", i, len(body), err)
		}
	}
	if _, err := os.Stat(name + ".4"); !os.IsNotExist(err) {
		t.Errorf("a fourth profile after stop: %v", err)
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("the uncut name written too: %v", err)
	}
}
