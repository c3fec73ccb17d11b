package postgres

import (
	"context"
	"io/fs"
	"path"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
)

// TestMigration0024: claims held when the upgrade runs become writes in
// doubt (whoever takes them over looks them up in VictoriaLogs), ids
// stored stay stored, and entries written so far are before the time
// from which every entry holds its address keys.
func TestMigration0024(t *testing.T) {
	ctx := context.Background()
	url := pgtest.FreshDB(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	sort.Strings(names)
	for _, name := range names {
		if path.Base(name) >= "0024" {
			break
		}
		body, _ := migrations.ReadFile(name)
		if _, err := conn.Exec(ctx, string(body)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, 0)`, path.Base(name)); err != nil {
			t.Fatal(err)
		}
	}
	// As 0023 left them: one id stored, one claimed by a live writer.
	far := time.Now().Add(time.Hour).UnixNano()
	if _, err := conn.Exec(ctx, `INSERT INTO artifact_account VALUES (1, 7); INSERT INTO artifact_tenants VALUES ('o', 1, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO artifact_ids (id, org_id, ts, writer, lease_until)
		VALUES ('stored', 'o', 100, NULL, NULL), ('held', 'o', 300, 42, $1)`, far); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.ClaimArtifacts(ctx, "o", []string{"stored", "held", "new"}, []int64{100, 300, 400}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Fresh, []string{"new"}) || !slices.Equal(c.Doubt, []string{"held"}) || c.Busy != 0 {
		t.Fatalf("after the upgrade: fresh %v, doubt %v, busy %d; want [new], [held], 0", c.Fresh, c.Doubt, c.Busy)
	}
	if from, err := s.ArtifactAddressKeysFrom(ctx); err != nil || from != 301 {
		t.Fatalf("address keys from %d, %v; want 301 (after the newest artifact stored before)", from, err)
	}
}
