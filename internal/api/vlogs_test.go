package api_test

import (
	"context"
	"os"
	"testing"

	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/vlogs"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	vltest.StopShared()
	os.Exit(code)
}

// openVLogs opens a store on a fresh PostgreSQL database with its
// artifacts in the shared VictoriaLogs cluster.
func openVLogs(t testing.TB) (*vlogs.Store, error) {
	t.Helper()
	c := vltest.Shared(t)
	pg, err := postgres.Open(context.Background(), pgtest.FreshDB(t), postgres.Options{})
	if err != nil {
		return nil, err
	}
	cl, err := vlogs.ParseURLs(c.FrontURL(), c.StorageURLs())
	if err != nil {
		pg.Close()
		return nil, err
	}
	return vlogs.New(pg, cl), nil
}
