package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestLostWALTailReported: when the database comes back without the last
// transaction that inserted artifacts (the end of its WAL lost to a crash
// of the machine), Open says so in the log — once — naming the artifact;
// a clean restart says nothing.
func TestLostWALTailReported(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vigil.db")
	open := func() (*sqlite.Store, string) {
		var logs bytes.Buffer
		s, err := sqlite.Open(ctx, path, sqlite.Options{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s, logs.String()
	}
	insert := func(s *sqlite.Store, tag string) []*vigil.Artifact {
		now := time.Now().UTC()
		arts := make([]*vigil.Artifact, 3)
		for i := range arts {
			arts[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "test", Timestamp: now, CreatedAt: now,
				Raw: fmt.Sprintf("%s %d", tag, i), Metadata: json.RawMessage("{}")}
		}
		if err := s.InsertArtifacts(ctx, "org-1", arts); err != nil {
			t.Fatal(err)
		}
		return arts
	}
	closeStore := func(s *sqlite.Store) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	s, _ := open()
	insert(s, "first")
	closeStore(s) // checkpointed: the database file holds "first"
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	s, logs := open()
	if strings.Contains(logs, "lacks") {
		t.Fatalf("a clean restart reported a lost WAL:\n%s", logs)
	}
	lost := insert(s, "second")
	closeStore(s)

	// The machine crashed before "second" reached the disk: the database
	// is as it was, the small record of the last insert survived.
	if err := os.WriteFile(path, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	s, logs = open()
	closeStore(s)
	if !strings.Contains(logs, `"level":"ERROR"`) || !strings.Contains(logs, lost[len(lost)-1].ID) {
		t.Fatalf("the lost transaction was not reported:\n%s", logs)
	}
	s, logs = open()
	closeStore(s)
	if strings.Contains(logs, "lacks") {
		t.Errorf("the lost WAL was reported again:\n%s", logs)
	}
}
