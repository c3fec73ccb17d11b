package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// TestEventTimesMigration: a store whose incidents were recorded before
// they kept event times gets, from the migration, the event times
// correlation keeps as it goes.
func TestEventTimesMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vigil.db")
	s := openAt(t, path)
	check := storetest.EventTimesBackfill(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before the migration.
	db := sqlite.OpenDB(path)
	if _, err := db.Exec(`DROP INDEX incidents_org_first_event; DROP INDEX incidents_org_last_event;
		ALTER TABLE incidents DROP COLUMN first_event_at; ALTER TABLE incidents DROP COLUMN last_event_at;
		DELETE FROM schema_migrations WHERE name LIKE '0028_incident_event_times%'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = openAt(t, path)
	defer s.Close()
	check(t, s)
}
