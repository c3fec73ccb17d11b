package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// failingStore is a real store whose artifact writes fail with err while
// it is set, counting the refused tries.
type failingStore struct {
	pipeline.Store
	mu      sync.Mutex
	err     error
	refused int
}

func (s *failingStore) InsertArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	s.mu.Lock()
	err := s.err
	if err != nil {
		s.refused++
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("InsertArtifacts: %w", err)
	}
	return s.Store.InsertArtifacts(ctx, org, arts)
}

func (s *failingStore) set(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *failingStore) tries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// await polls cond until it holds or 15 s pass.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 15 s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling an observable condition
	}
}

// TestWorkerOutlastsFullStore: while the store refuses writes for lack of
// disk, the workers keep every queued message — far beyond MaxDeliver
// tries, nothing goes to the dead-letter stream — and readiness reports
// the failure; once there is room again every artifact is stored and
// readiness recovers.
func TestWorkerOutlastsFullStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "vigil.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := &failingStore{Store: db}
	store.set(&vigil.Error{Code: vigil.ENOSPACE, Message: "database disk is full"})

	const maxDeliver = 2
	// AckWait 600 ms: pauses of 200 ms between tries.
	q, err := queue.Open(ctx, queue.Config{Dir: filepath.Join(dir, "jetstream"), MaxDeliver: maxDeliver,
		AckWait: 600 * time.Millisecond, RetryBase: 5 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	metrics := pipeline.NewMetrics(nil)
	proc := pipeline.NewProcessor(store, nil, metrics)
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pipeline.NewWorker(q, proc, nil, metrics).Run(wctx); err != nil {
				t.Errorf("worker: %v", err)
			}
		}()
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	ingest := pipeline.NewQueued(q, 0, metrics)
	var ids []string
	for b := range 3 {
		now := time.Now().UTC()
		arts := make([]*vigil.Artifact, 4)
		for i := range arts {
			arts[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "test", Timestamp: now, CreatedAt: now,
				Raw: fmt.Sprintf("batch %d line %d", b, i), Metadata: json.RawMessage("{}")}
			ids = append(ids, arts[i].ID)
		}
		if err := ingest.Ingest(ctx, "org-1", arts); err != nil {
			t.Fatalf("Ingest: %v", err)
		}
	}

	await(t, "tries well beyond MaxDeliver", func() bool { return store.tries() >= 5*maxDeliver })
	err = proc.Ready(ctx)
	if vigil.ErrorCode(err) != vigil.ENOSPACE {
		t.Fatalf("Ready while the store is full: %v, want an %s error", err, vigil.ENOSPACE)
	}
	t.Logf("Ready while the store is full: %v", err)
	var dead dto.Metric
	if err := metrics.DeadLetters.Write(&dead); err != nil {
		t.Fatal(err)
	}
	if n := dead.GetCounter().GetValue(); n != 0 {
		t.Fatalf("%v dead letters while the store was full; a full disk is not the message's fault", n)
	}

	store.set(nil)
	await(t, "every artifact stored", func() bool {
		_, total, err := db.SearchArtifacts(ctx, "org-1", vigil.ArtifactFilter{})
		return err == nil && total == len(ids)
	})
	if got, err := db.GetArtifacts(ctx, "org-1", ids); err != nil || len(got) != len(ids) {
		t.Errorf("GetArtifacts of the %d ids: %d, %v", len(ids), len(got), err)
	}
	if err := proc.Ready(ctx); err != nil {
		t.Errorf("Ready after the store recovered: %v", err)
	}
	if n, err := q.DeadLetters(ctx); err != nil || n != 0 {
		t.Errorf("DeadLetters = %d, %v; want 0", n, err)
	}
	t.Logf("%d refused tries (MaxDeliver %d), then all %d artifacts stored", store.tries(), maxDeliver, len(ids))
}
