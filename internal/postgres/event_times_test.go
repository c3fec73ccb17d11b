package postgres_test

import (
	"testing"

	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// TestEventTimesMigration: a store whose incidents were recorded before
// they kept event times gets, from the migration, the event times
// correlation keeps as it goes.
func TestEventTimesMigration(t *testing.T) {
	requirePostgres(t)
	dbURL := freshDB(t)
	s, err := postgres.Open(t.Context(), dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check := storetest.EventTimesBackfill(t, s)
	s.Close()
	// Back to the schema before the migration.
	if _, err := mustConn(t, dbURL).Exec(t.Context(), `ALTER TABLE incidents DROP COLUMN first_event_at, DROP COLUMN last_event_at;
		DELETE FROM schema_migrations WHERE name LIKE '0019_incident_event_times%'`); err != nil {
		t.Fatal(err)
	}
	check(t, mustOpen(t, dbURL, postgres.Options{}))
}
