package vlogs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// openOn returns a store on a fresh PostgreSQL database and cluster c.
func openOn(t *testing.T, c *vltest.Cluster) *Store {
	t.Helper()
	pg, err := postgres.Open(context.Background(), pgtest.FreshDB(t), postgres.Options{})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	cl, err := ParseURLs(c.FrontURL(), c.StorageURLs())
	if err != nil {
		t.Fatal(err)
	}
	s := New(pg, cl)
	t.Cleanup(func() { s.Close() })
	return s
}

// batch returns n artifacts of the lines of sshd (one per second), each
// with its own words so that each is searchable alone.
func batch(n int, from time.Time) []*vigil.Artifact {
	arts := make([]*vigil.Artifact, n)
	for i := range arts {
		arts[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "sshd", CreatedAt: from,
			Timestamp: from.Add(time.Duration(i) * time.Second),
			Raw:       fmt.Sprintf("Failed password for invalid user u%d from 198.51.100.%d port %d ssh2", i, i%250, 40000+i)}
	}
	return arts
}

// countAll returns org's total and how many distinct ids its first pages
// hold.
func countAll(t *testing.T, s *Store, org string, n int) (total, distinct int) {
	t.Helper()
	seen := map[string]bool{}
	for off := 0; off < n+vigil.MaxLimit; off += vigil.MaxLimit {
		arts, tot, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Page: vigil.Page{Limit: vigil.MaxLimit, Offset: off}})
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		total = tot
		for _, a := range arts {
			seen[a.ID] = true
		}
		if len(arts) < vigil.MaxLimit {
			break
		}
	}
	return total, len(seen)
}

// TestAcknowledgedSurvivesStorageKill: once InsertArtifacts returns (a
// worker acknowledges the batch), the artifacts survive a SIGKILL of the
// storage node that took them, well within the node's own 5 s flush
// interval.
func TestAcknowledgedSurvivesStorageKill(t *testing.T) {
	c := vltest.Start(t, 1)
	s := openOn(t, c)
	org := vigil.NewID()
	arts := batch(2000, time.Now().Add(-time.Hour).Truncate(time.Second))
	for i := 0; i < len(arts); i += 500 {
		if err := s.InsertArtifacts(t.Context(), org, arts[i:i+500]); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	c.Storage[0].Kill()
	c.Storage[0].Start(t)
	if total, distinct := countAll(t, s, org, len(arts)); total != len(arts) || distinct != len(arts) {
		t.Fatalf("after SIGKILL of the storage node: total %d, %d distinct; want %d acknowledged artifacts", total, distinct, len(arts))
	}
	// A node stopped gracefully keeps them too, and a search while it is
	// down fails rather than answering without them.
	c.Storage[0].Stop()
	if _, _, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{}); vigil.ErrorCode(err) != vigil.EUNAVAILABLE {
		t.Fatalf("search with the storage node down: %v; want unavailable", err)
	}
	if err := s.Cluster().Ready(t.Context()); vigil.ErrorCode(err) != vigil.EUNAVAILABLE {
		t.Fatalf("readiness with the storage node down: %v; want unavailable", err)
	}
	if err := s.InsertArtifacts(t.Context(), org, batch(10, time.Now())); !vigil.Transient(err) {
		t.Fatalf("insert with the storage node down: %v; want a transient error (the queue keeps the batch)", err)
	}
	c.Storage[0].Start(t)
	if err := s.Cluster().Ready(t.Context()); err != nil {
		t.Fatalf("readiness after the restart: %v", err)
	}
	if total, _ := countAll(t, s, org, len(arts)); total != len(arts) {
		t.Fatalf("after a restart: total %d, want %d", total, len(arts))
	}
}

// TestRedeliveryAfterWriterDied: a writer that died after VictoriaLogs
// took its batch, before recording so in PostgreSQL, leaves claims that
// the redelivered batch takes over; it finds the artifacts there and
// writes none twice. While the dead writer's lease runs, the batch is
// refused as transient (the queue retries it).
func TestRedeliveryAfterWriterDied(t *testing.T) {
	c := vltest.Shared(t)
	s := openOn(t, c)
	org := vigil.NewID()
	arts := batch(300, time.Now().Add(-2*time.Hour).Truncate(time.Second))

	s.dies = func() bool { return true }
	if err := s.InsertArtifacts(t.Context(), org, arts); !errors.Is(err, errDied) {
		t.Fatalf("insert with the writer dying: %v", err)
	}
	s.dies = nil
	// Its lease (2 minutes) still runs: the redelivery must wait.
	if err := s.InsertArtifacts(t.Context(), org, arts); !vigil.Transient(err) {
		t.Fatalf("redelivery during the dead writer's lease: %v; want a transient error", err)
	}

	// Another org's batch, with leases that end at once, as if the 2
	// minutes had passed; half of it sent again with the other half.
	org = vigil.NewID()
	s.Lease = time.Nanosecond
	s.dies = func() bool { return true }
	more := batch(300, time.Now().Add(-3*time.Hour).Truncate(time.Second))
	if err := s.InsertArtifacts(t.Context(), org, more[:150]); !errors.Is(err, errDied) {
		t.Fatalf("insert with the writer dying: %v", err)
	}
	s.dies = nil
	all := more
	if err := s.InsertArtifacts(t.Context(), org, all); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	if err := s.InsertArtifacts(t.Context(), org, all); err != nil { // and once more, all stored now
		t.Fatalf("second redelivery: %v", err)
	}
	if total, distinct := countAll(t, s, org, len(all)); total != len(all) || distinct != len(all) {
		t.Fatalf("after redeliveries: total %d, %d distinct; want each of %d once", total, distinct, len(all))
	}
	if _, n, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: `"user u7"`}); err != nil || n != 1 {
		t.Fatalf(`search "user u7": %d, %v; want 1`, n, err)
	}
}

// TestIngestGoesOnWithANodeDown: with one of two storage nodes down,
// every write goes to the other and is acknowledged; searches fail
// (they would miss the down node's artifacts) until it is back, and then
// find every artifact once.
func TestIngestGoesOnWithANodeDown(t *testing.T) {
	c := vltest.Start(t, 2)
	s := openOn(t, c)
	org := vigil.NewID()
	arts := batch(400, time.Now().Add(-time.Hour).Truncate(time.Second))
	if err := s.InsertArtifacts(t.Context(), org, arts[:100]); err != nil {
		t.Fatal(err)
	}
	c.Storage[1].Kill()
	for i := 100; i < len(arts); i += 50 {
		if err := s.InsertArtifacts(t.Context(), org, arts[i:i+50]); err != nil {
			t.Fatalf("insert with a storage node down: %v", err)
		}
	}
	if _, _, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{}); vigil.ErrorCode(err) != vigil.EUNAVAILABLE {
		t.Fatalf("search with a storage node down: %v; want unavailable", err)
	}
	c.Storage[1].Start(t)
	if total, distinct := countAll(t, s, org, len(arts)); total != len(arts) || distinct != len(arts) {
		t.Fatalf("total %d, %d distinct; want %d", total, distinct, len(arts))
	}
}

// TestRetention: DropArtifactsBefore forgets the claims of the artifacts
// stamped before its time and has VictoriaLogs delete them, in every org;
// the newer stay.
func TestRetention(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	now := time.Now().Truncate(time.Second)
	orgs := []string{vigil.NewID(), vigil.NewID()}
	for _, org := range orgs {
		for _, from := range []time.Time{now.Add(-40 * 24 * time.Hour), now.Add(-2 * time.Hour)} {
			if err := s.InsertArtifacts(t.Context(), org, batch(50, from)); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := s.DropArtifactsBefore(t.Context(), now.Add(-30*24*time.Hour))
	if err != nil || n != 100 {
		t.Fatalf("DropArtifactsBefore = %d, %v; want the 100 claims of both orgs' old artifacts", n, err)
	}
	// VictoriaLogs deletes in the background: polled until it is done.
	for _, org := range orgs {
		deadline := time.Now().Add(60 * time.Second)
		for {
			_, total, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if total == 50 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("org %s: %d artifacts 60 s after retention, want the 50 newer", org, total)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if _, old, _ := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Range: vigil.TimeRange{End: now.Add(-30 * 24 * time.Hour)}}); old != 0 {
			t.Fatalf("org %s: %d old artifacts remain", org, old)
		}
	}
}
