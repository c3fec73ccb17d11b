package datadir

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelperHold is not a test: run as a child process by the tests below,
// it takes the lock named by VIGIL_LOCK_DIR, says so, and waits to be
// killed.
func TestHelperHold(t *testing.T) {
	dir := os.Getenv("VIGIL_LOCK_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	if _, err := Acquire(dir); err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("locked")
	select {}
}

// holdInChild starts a child process holding the lock of dir and returns
// it once the lock is taken.
func holdInChild(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHold$")
	cmd.Env = append(os.Environ(), "VIGIL_LOCK_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 64)
	n, _ := out.Read(buf) // the child's first line: blocks until it holds the lock
	if got := string(buf[:n]); !strings.HasPrefix(got, "locked") {
		t.Fatalf("child did not take the lock: %q", got)
	}
	return cmd
}

func TestAcquireRefusedWhileAnotherProcessHolds(t *testing.T) {
	dir := t.TempDir()
	child := holdInChild(t, dir)

	_, err := Acquire(dir)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire while a child holds the lock: %v, want ErrLocked", err)
	}
	if want := fmt.Sprintf("PID %d", child.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the holder (%s)", err, want)
	}

	// SIGKILL: the kernel drops the lock; no stale file blocks a restart.
	child.Process.Kill()
	child.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	defer l.Release()
}

func TestReleaseLetsAnotherProcessIn(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	holdInChild(t, dir) // fails the test if the child cannot lock
}
