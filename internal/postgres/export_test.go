package postgres

import (
	"context"
	"math"
	"testing"

	"github.com/vigil-soc/vigil/internal/search"
)

// SetSearchHook makes every search call hook while it holds its token and
// connection, and returns how many searches may hold them at once.
func SetSearchHook(s *Store, hook func(context.Context)) int {
	s.searchHook = hook
	return cap(s.searches)
}

// CorrelationReads are the queries of a correlation that find incidents by
// the key nodes or ids it names, for their plans.
var CorrelationReads = map[string]string{"open incidents": openIncidentsSQL, "hub nodes": hubNodesSQL, "lock incidents": lockIncidentsSQL}

// SetSampleRows sets how many rows an estimated total samples.
func SetSampleRows(s *Store, n int) { s.sampleRows = n }

// SetAddressKeys makes the searches of s read addresses as their keys
// (true) or as the phrases of their parts (false, as before migration
// 0022, never looking again), for tests comparing the two.
func SetAddressKeys(s *Store, on bool) {
	s.addr.ready.Store(on)
	s.addr.checked.Store(math.MaxInt64)
}

// AddressKeysReady reports whether searches of s read addresses as keys,
// looking at the pending partitions now.
func AddressKeysReady(ctx context.Context, s *Store) bool {
	s.addr.checked.Store(0)
	return s.addressKeysReady(ctx)
}

// SearchTSQuery is the tsquery a search of s binds for query.
func SearchTSQuery(ctx context.Context, s *Store, query string) (string, error) {
	q, err := search.Parse(query)
	if err != nil {
		return "", err
	}
	if s.addressKeysReady(ctx) {
		return q.TSQueryAddressKeys(), nil
	}
	return q.TSQuery(), nil
}

// BackendPID is the server process of the store's one connection (a
// store opened with MaxConns 1).
func BackendPID(ctx context.Context, t testing.TB, s *Store) int {
	var pid int
	if err := s.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}
