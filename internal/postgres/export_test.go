package postgres

import (
	"context"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"

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

// SetAnalyzeMinRows sets the fewest rows stored that may make the
// statistics of artifacts stale.
func SetAnalyzeMinRows(s *Store, n int) { s.analyzeMin = n }

// WaitUpkeep waits for the store's upkeep of artifacts running, if any,
// to end (no rows may be stored meanwhile).
func WaitUpkeep(s *Store) { s.upkeep.wg.Wait() }

// SetNewestRows sets how many of a filter's newest rows a search tests
// at most.
func SetNewestRows(s *Store, n int) { s.newestRows = n }

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

// OpenTraced opens the store at url as Open does, telling hook every
// statement its connections run (batched or not) with its arguments, in
// the order they run, for tests that replay a search's statements.
func OpenTraced(ctx context.Context, url string, opt Options, hook func(sql string, args []any)) (*Store, error) {
	cfg, err := parseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.Tracer = statementTracer{hook}
	return open(ctx, cfg, opt)
}

type statementTracer struct{ hook func(string, []any) }

func (t statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.hook(d.SQL, d.Args)
	return ctx
}

func (statementTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (statementTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t statementTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	t.hook(d.SQL, d.Args)
}

func (statementTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
