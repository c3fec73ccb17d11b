package vlogs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// openWithDB is openOn that also returns a connection to the store's
// database, to look at its claims.
func openWithDB(t *testing.T, c *vltest.Cluster) (*Store, *pgx.Conn) {
	t.Helper()
	url := pgtest.FreshDB(t)
	pg, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	cl, err := ParseURLs(c.FrontURL(), c.StorageURLs())
	if err != nil {
		t.Fatal(err)
	}
	s := New(pg, cl)
	t.Cleanup(func() { s.Close() })
	db, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	return s, db
}

// idRows returns the physical place (ctid) of each id's row.
func idRows(t *testing.T, db *pgx.Conn, arts []*vigil.Artifact) map[string]string {
	t.Helper()
	ids := make([]string, len(arts))
	for i, a := range arts {
		ids[i] = a.ID
	}
	rows, err := db.Query(t.Context(), `SELECT id, ctid::text FROM artifact_ids WHERE id = ANY($1)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var id, ctid string
	if _, err := pgx.ForEachRow(rows, []any{&id, &ctid}, func() error { out[id] = ctid; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClaimCostIsPerWrite: storing a batch writes each new id's row once
// and one row for the write; ending the write deletes that one row and
// touches no id's row (an UPDATE, HOT or not, would move it to a new
// place). A second batch finds the first's ids stored.
func TestClaimCostIsPerWrite(t *testing.T) {
	s, db := openWithDB(t, vltest.Shared(t))
	org := vigil.NewID()
	arts := batch(500, time.Now().Add(-time.Hour).Truncate(time.Second))
	var during map[string]string
	writes := -1
	s.dies = func() bool {
		during = idRows(t, db, arts)
		if err := db.QueryRow(t.Context(), `SELECT COUNT(*) FROM artifact_writes`).Scan(&writes); err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	s.dies = nil
	if len(during) != len(arts) || writes != 1 {
		t.Fatalf("while writing: %d id rows, %d write rows; want %d and 1", len(during), writes, len(arts))
	}
	after := idRows(t, db, arts)
	moved := 0
	for id, ctid := range during {
		if after[id] != ctid {
			moved++
		}
	}
	if moved > 0 {
		t.Fatalf("ending the write rewrote %d of %d id rows; want none (one row per write)", moved, len(arts))
	}
	if err := db.QueryRow(t.Context(), `SELECT COUNT(*) FROM artifact_writes`).Scan(&writes); err != nil || writes != 0 {
		t.Fatalf("after the write: %d write rows (%v); want 0", writes, err)
	}
	if err := s.InsertArtifacts(t.Context(), org, arts[:100]); err != nil {
		t.Fatal(err)
	}
	if total, distinct := countAll(t, s, org, len(arts)); total != len(arts) || distinct != len(arts) {
		t.Fatalf("total %d, %d distinct; want %d", total, distinct, len(arts))
	}
}

// TestResentIDsInOtherBatches: an id is stored once whatever batch it
// comes in — a client re-sending an `_id` (esbulk names it by a hash of
// org, index and _id) puts it in a batch of its own, with other ids and
// another text, and a batch whose writer died may come back split
// differently. A design that dedupes whole batches (by message or by the
// hash of its ids) stores these twice.
func TestResentIDsInOtherBatches(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	from := time.Now().Add(-5 * time.Hour).Truncate(time.Second)
	first := batch(200, from)
	if err := s.InsertArtifacts(t.Context(), org, first); err != nil {
		t.Fatal(err)
	}
	// Half of them re-sent with new ids, another text: the stored stay.
	fresh := batch(100, from.Add(time.Hour))
	var resent []*vigil.Artifact
	for _, a := range first[:100] {
		b := *a
		b.Raw = "resent text that must not be stored"
		resent = append(resent, &b)
	}
	if err := s.InsertArtifacts(t.Context(), org, append(append([]*vigil.Artifact{}, fresh[:50]...), resent...)); err != nil {
		t.Fatal(err)
	}
	// A writer that dies after VictoriaLogs took its batch; the batch
	// comes back in two halves, each with ids already stored.
	s.Lease = time.Nanosecond
	s.dies = func() bool { return true }
	if err := s.InsertArtifacts(t.Context(), org, fresh[50:]); !errors.Is(err, errDied) {
		t.Fatalf("insert with the writer dying: %v", err)
	}
	s.dies = nil
	if err := s.InsertArtifacts(t.Context(), org, append(append([]*vigil.Artifact{}, fresh[50:75]...), first[150:]...)); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertArtifacts(t.Context(), org, append(append([]*vigil.Artifact{}, fresh[75:]...), fresh[:10]...)); err != nil {
		t.Fatal(err)
	}
	want := len(first) + len(fresh)
	if total, distinct := countAll(t, s, org, want); total != want || distinct != want {
		t.Fatalf("total %d, %d distinct; want each of %d once", total, distinct, want)
	}
	if _, n, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: "resent"}); err != nil || n != 0 {
		t.Fatalf("the re-sent text: %d matches, %v; want none", n, err)
	}
}
