package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestFullDatabaseIsTransient: a write refused because the database is
// full is a transient ENOSPACE error (the pipeline keeps the message and
// retries it), leaves what was committed intact, and succeeds once there
// is room again.
func TestFullDatabaseIsTransient(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	const org = "org-full"
	batch := func(n int, tag string) []*vigil.Artifact {
		now := time.Now().UTC()
		out := make([]*vigil.Artifact, n)
		for i := range out {
			out[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "test", Timestamp: now, CreatedAt: now,
				Raw: fmt.Sprintf("%s %d %s", tag, i, strings.Repeat("x", 500)), Metadata: json.RawMessage("{}")}
		}
		return out
	}
	first := batch(10, "before")
	if err := s.InsertArtifacts(ctx, org, first); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.LimitPages(s, 2); err != nil {
		t.Fatal(err)
	}
	refused := batch(200, "refused")
	err := s.InsertArtifacts(ctx, org, refused)
	if code := vigil.ErrorCode(err); code != vigil.ENOSPACE || !vigil.Transient(err) {
		t.Fatalf("insert into a full database: %v (code %q), want a transient %s", err, code, vigil.ENOSPACE)
	}
	if msg := vigil.ErrorMessage(err); msg != "database disk is full" {
		t.Errorf("message %q, want %q", msg, "database disk is full")
	}
	if _, total, err := s.SearchArtifacts(ctx, org, vigil.ArtifactFilter{}); err != nil || total != len(first) {
		t.Fatalf("after the refused insert: %d artifacts (%v), want the %d committed before", total, err, len(first))
	}

	if err := sqlite.LimitPages(s, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertArtifacts(ctx, org, refused); err != nil {
		t.Fatalf("insert once there is room: %v", err)
	}
	if _, total, err := s.SearchArtifacts(ctx, org, vigil.ArtifactFilter{}); err != nil || total != len(first)+len(refused) {
		t.Fatalf("after the retried insert: %d artifacts (%v), want %d", total, err, len(first)+len(refused))
	}
}
