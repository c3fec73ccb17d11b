package vlogs_test

import (
	"context"
	"os"
	"testing"

	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/storetest"
	"github.com/vigil-soc/vigil/internal/vlogs"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	vltest.StopShared()
	os.Exit(code)
}

// open returns a store on a fresh PostgreSQL database and cluster c (the
// shared one when nil).
func open(t *testing.T, c *vltest.Cluster) *vlogs.Store {
	t.Helper()
	if c == nil {
		c = vltest.Shared(t)
	}
	pg, err := postgres.Open(context.Background(), pgtest.FreshDB(t), postgres.Options{})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	cl, err := vlogs.ParseURLs(c.FrontURL(), c.StorageURLs())
	if err != nil {
		t.Fatal(err)
	}
	s := vlogs.New(pg, cl)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store contract on PostgreSQL + VictoriaLogs,
// the groups that reach artifacts (stored, searched, read by id, through
// incidents and classification, across tenants): what the API shows
// does not depend on where artifacts live. The other groups are the
// PostgreSQL store's own, tested in internal/postgres. (All of them
// pass here too, in about ten minutes on the 2-core machine.)
func TestConformance(t *testing.T) {
	storetest.RunGroups(t, func(t *testing.T) storetest.Store { return open(t, nil) },
		"Tenancy", "Artifacts", "Observations", "Incidents", "Rules")
}
