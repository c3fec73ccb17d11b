package queue

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// reopen opens the embedded queue in dir with a log it returns.
func reopen(t *testing.T, dir string) (*Queue, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	q, err := Open(context.Background(), Config{Dir: dir}, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return q, &logs
}

// lastBlock returns the path of the artifact stream's last message block.
func lastBlock(t *testing.T, dir string, q *Queue) string {
	t.Helper()
	blks, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", q.names.Stream, "msgs", "*.blk"))
	if err != nil || len(blks) == 0 {
		t.Fatalf("message blocks: %v, %v", blks, err)
	}
	return blks[len(blks)-1]
}

// TestTornStreamReported: JetStream recovers a message block whose last
// record was torn by dropping it silently; the queue tells, from its mark
// of what it acknowledged, that an acknowledged message is gone — once,
// and not after a clean restart.
func TestTornStreamReported(t *testing.T) {
	dir := t.TempDir()
	q1, _ := reopen(t, dir)
	for range 3 {
		mustPublish(t, q1, "org-1", artifacts(50, 100))
	}
	blk := lastBlock(t, dir, q1)
	q1.Close()

	// A clean restart reports nothing.
	q2, logs := reopen(t, dir)
	q2.Close()
	if strings.Contains(logs.String(), "acknowledged_up_to") {
		t.Fatalf("a clean restart reported a loss:\n%s", logs)
	}

	// A crash of the machine: the last record torn, and the stream's
	// state file (written at a clean stop, else now and then) older than
	// it — here, gone. The stream comes back with two messages.
	fi, err := os.Stat(blk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blk, fi.Size()-100); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(filepath.Dir(blk), "index.db")); err != nil {
		t.Fatal(err)
	}
	q3, logs := reopen(t, dir)
	n, err := q3.Backlog(context.Background())
	q3.Close()
	if err != nil || n != 2 {
		t.Fatalf("backlog after the tear: %d, %v; want the 2 whole messages", n, err)
	}
	out := logs.String()
	if !strings.Contains(out, `"level":"ERROR"`) || !strings.Contains(out, `"messages_gone":1`) || !strings.Contains(out, `"acknowledged_up_to":3`) {
		t.Fatalf("the torn message was not reported as lost:\n%s", out)
	}

	// Reported once: the next start is quiet.
	q4, logs := reopen(t, dir)
	q4.Close()
	if strings.Contains(logs.String(), "acknowledged_up_to") {
		t.Errorf("the loss was reported again:\n%s", logs)
	}
}
