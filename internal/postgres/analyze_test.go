package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/postgres"
)

// TestAnalyzesAfterLoads: after a load, the statistics of the
// partitioned table artifacts exist and see its rows, with nobody
// running ANALYZE: autovacuum analyzes its partitions only, never the
// table the planner reads for a search across them, and without its
// statistics searches at 10 M artifacts took seconds each. And every
// range of blocks has its summary in the BRIN index of timestamps, so
// that a search within a window reads the blocks of its window: after a
// fast load autovacuum had summarized none, and a window of a day read
// every block of the month.
func TestAnalyzesAfterLoads(t *testing.T) {
	requirePostgres(t)
	ctx := t.Context()
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	// 10,000 rows stand for the 100,000 that a deployment analyzes
	// after at least, to keep the test short.
	postgres.SetAnalyzeMinRows(s, 10000)
	conn := mustConn(t, dbURL)
	end := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	arts := planArtifacts(t, end)[:24000]
	firewall := 0
	for _, a := range arts {
		if a.Source == "firewall" {
			firewall++
		}
	}
	// Loads of both kinds: COPY and the pipeline's INSERT.
	for i := 0; i < len(arts); i += 3000 {
		batch := arts[i:min(i+3000, len(arts))]
		store := s.CopyArtifacts
		if i/3000%2 == 1 {
			store = s.InsertArtifacts
		}
		if err := store(ctx, "o1", batch); err != nil {
			t.Fatal(err)
		}
	}
	postgres.WaitUpkeep(s)
	var inherited int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_stats WHERE tablename = 'artifacts' AND inherited`).Scan(&inherited); err != nil {
		t.Fatal(err)
	}
	// What the planner expects of the firewall's rows across the
	// partitions (a search's source filter): near the truth.
	var raw []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT 1 FROM artifacts WHERE org_id = 'o1' AND source = 'firewall'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	var unsummarized int
	if err := conn.QueryRow(ctx, `SELECT COALESCE(SUM(brin_summarize_new_values(i.inhrelid)), 0) FROM pg_inherits i WHERE i.inhparent = 'artifacts_ts_brin'::regclass`).Scan(&unsummarized); err != nil {
		t.Fatal(err)
	}
	if unsummarized > 0 {
		t.Errorf("after storing %d artifacts, %d ranges of blocks without a summary in the BRIN index", len(arts), unsummarized)
	}
	if got := plan[0].Plan.Rows; inherited == 0 || got < 0.8*float64(firewall) || got > 1.25*float64(firewall) {
		t.Errorf("after storing %d artifacts: %d statistics of artifacts as a whole; the planner expects %.0f firewall rows of %d", len(arts), inherited, got, firewall)
	}
}

// TestUpkeepBesideTheBatch: the store's upkeep of artifacts (its
// ANALYZE, its BRIN summaries) runs beside the batches whose rows ask
// for it, not in them: a batch returns while an ANALYZE waits for a
// lock another session holds, and the ANALYZE is done once it has the
// lock. Before, InsertArtifacts ran it before returning: the pipeline's
// batch waited for it (0.6 s at 10 M artifacts), and here for as long as
// the lock was held.
func TestUpkeepBesideTheBatch(t *testing.T) {
	requirePostgres(t)
	ctx := t.Context()
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	postgres.SetAnalyzeMinRows(s, 10000)
	arts := planArtifacts(t, time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC))[:14000]
	// The first rows create the month's partition, which the lock below
	// would hold off.
	if err := s.InsertArtifacts(ctx, "o1", arts[:2000]); err != nil {
		t.Fatal(err)
	}
	lock, err := mustConn(t, dbURL).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// ANALYZE takes this lock of each table it reads, and waits for it.
	if _, err := lock.Exec(ctx, `LOCK TABLE artifacts IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := 2000; i < len(arts); i += 3000 {
			if err := s.InsertArtifacts(ctx, "o1", arts[i:min(i+3000, len(arts))]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("storing 12,000 artifacts took more than a minute while an ANALYZE of artifacts waited for a lock")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	postgres.WaitUpkeep(s)
	var inherited int
	if err := mustConn(t, dbURL).QueryRow(ctx, `SELECT COUNT(*) FROM pg_stats WHERE tablename = 'artifacts' AND inherited`).Scan(&inherited); err != nil {
		t.Fatal(err)
	}
	if inherited == 0 {
		t.Error("no statistics of artifacts as a whole after storing 14,000 artifacts and the lock released")
	}
}
