// Package postgres implements vigil.Store on PostgreSQL (13 or later)
// with pgx: the shared database of a scaled-out deployment, where several
// `vigil serve` and `vigil worker` processes write at once. It answers
// exactly as the SQLite store does (both run internal/storetest):
//
//   - Times are BIGINT nanoseconds since the epoch, as in SQLite, so a
//     client's timestamp with nanoseconds, a range bound or a tie comes
//     back the same on both engines (vigil_time(ns) shows one as a
//     timestamptz).
//   - Artifacts are partitioned by month of their timestamp; an id is
//     claimed in a side table so that inserts stay idempotent across
//     partitions; DropArtifactsBefore drops whole months (retention).
//   - Full-text search runs over a tsvector built by Vigil's own tokenizer
//     (search.TSVector) with queries rendered by search.TSQuery, never by
//     PostgreSQL's text parser, so "10.0.0.1" matches what it matches in
//     SQLite.
//   - Correlation and windowed detection are serialized across processes
//     by transaction-scoped advisory locks on the key nodes and on the
//     (detector, key) pairs, where SQLite relies on its single writer.
//   - Migrations are embedded and applied under an advisory lock.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vigil-soc/vigil"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Advisory lock keys of the whole database (pg_advisory_xact_lock takes a
// bigint). Correlation and detection lock hashes of what they serialize:
// see lockKey.
const (
	migrationLockKey = 0x76696769_6c000001 // "vigil" + 1
	partitionLockKey = 0x76696769_6c000002
)

// Store is a vigil.Store on PostgreSQL.
type Store struct {
	pool *pgxpool.Pool

	applied []string // migrations applied by Open

	// months caches the monthly artifact partitions known to exist (or
	// known to be impossible to create), so that InsertArtifacts asks the
	// catalog only for months it has not seen yet.
	mu     sync.Mutex
	months map[int]bool // year*100 + month

	// searches holds a token per artifact search running, so that
	// searches never take every connection of the pool.
	searches chan struct{}
	// searchHook, when set (tests), runs inside each search while it
	// holds its token and connection.
	searchHook func(context.Context)
	// sampleRows is how many rows an estimated total samples
	// (sampleRows; tests make it small).
	sampleRows int
	// newestRows is how many of a filter's newest rows a search tests
	// at most (newestRows; tests make it small).
	newestRows int
	// addr: whether searches read addresses as keys (addresses.go).
	addr addrKeys
	// analyze: the rows stored since the statistics of artifacts were
	// last looked at (analyze.go), under mu.
	analyze analyzeState
	// analyzeMin is the fewest rows stored that may make the statistics
	// of artifacts stale (analyzeMinRows; tests make it small).
	analyzeMin int
	// upkeep: the background upkeep of artifacts (analyze.go).
	upkeep upkeep
}

var _ vigil.Store = (*Store)(nil)

// Options tune the connection pool. Durability is the server's business
// (synchronous_commit, on by default: a commit is on disk before it
// returns).
type Options struct {
	// MaxConns bounds the pool; 0 keeps pgxpool's default (4 or the number
	// of CPUs, whichever is more).
	MaxConns int32
	// MaxSearches is how many artifact searches run at once; more wait
	// (within their deadline), so that searches, however costly, leave
	// connections to every other read. 0: half the pool, at least 1.
	MaxSearches int
	// Schema, when set, is the only schema on the connections' search
	// path: the store's tables, its migrations included, live there
	// instead of in the database's default schema. The schema must exist.
	Schema string
}

// Open connects to the database at url (postgres://…) and applies pending
// migrations. Its errors never show a password of url (parseConfig).
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	cfg, err := parseConfig(url)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, cfg, opt)
	return s, scrub(err, url, cfg)
}

// open is Open once the connection string is read.
func open(ctx context.Context, cfg *pgxpool.Config, opt Options) (*Store, error) {
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	if opt.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opt.Schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	searches := opt.MaxSearches
	if searches <= 0 {
		searches = max(1, int(cfg.MaxConns)/2)
	}
	s := &Store{pool: pool, months: map[int]bool{}, searches: make(chan struct{}, searches), sampleRows: sampleRows, newestRows: newestRows,
		analyze: analyzeState{counted: -1}, analyzeMin: analyzeMinRows}
	if s.applied, err = s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if pending, err := s.addressKeysPending(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: address keys: %w", err)
	} else if len(pending) == 0 {
		s.addr.ready.Store(true)
	}
	s.addr.checked.Store(time.Now().UnixNano())
	s.upkeep.ctx, s.upkeep.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Migrate connects to the database at url, applies pending migrations and
// disconnects. It returns the names of the migrations it applied (none
// when the schema was current).
func Migrate(ctx context.Context, url string) ([]string, error) {
	s, err := Open(ctx, url, Options{MaxConns: 1})
	if err != nil {
		return nil, err
	}
	return s.applied, s.Close()
}

// Close stops the store's upkeep (waiting for its statements to end)
// and closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.stopUpkeep()
	s.pool.Close()
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return wrap("Ping", s.pool.Ping(ctx))
}

// migrate applies every embedded migration not yet recorded, each in its
// own transaction. The transaction first takes an advisory lock, so that
// processes starting at once apply each migration exactly once: the
// second waits for the first to commit and then finds it recorded.
func (s *Store) migrate(ctx context.Context) ([]string, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("postgres: list migrations: %w", err)
	}
	sort.Strings(names)
	var applied []string
	for _, name := range names {
		done := false
		base := path.Base(name)
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE name = $1)`, base).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			body, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			// Without arguments pgx uses the simple protocol, which runs a
			// script of several statements.
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)`, base, time.Now().UnixNano())
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("postgres: migration %s: %w", base, err)
		}
		if !done {
			applied = append(applied, base)
		}
	}
	return applied, nil
}

// maxAttempts bounds how often tx runs a transaction that failed on a
// deadlock or a serialization failure, both of which PostgreSQL resolves by
// aborting one of the transactions involved.
const maxAttempts = 4

// tx runs fn in a READ COMMITTED transaction, committing if it returns
// nil, and runs it again when the server aborted it as a deadlock victim.
// fn must therefore only set its results, never accumulate them. The
// changes fn noted in the audit trail of ctx's request are recorded in
// the transaction before it commits.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	trail := vigil.AuditTrailFrom(ctx)
	var err error
	for attempt := 1; ; attempt++ {
		trail.Begin()
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			return insertAudit(ctx, tx, trail.Take())
		})
		if err == nil || attempt == maxAttempts || !retryable(err) {
			return err
		}
	}
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// querier is what a *pgxpool.Pool and a pgx.Tx have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// wrap gives an error from the driver its Vigil code and the operation's
// name; a *vigil.Error passes through unchanged. Driver errors are told
// apart by type and SQLSTATE, never by their text.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ve *vigil.Error
	if errors.As(err, &ve) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "request cancelled", Op: op, Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return &vigil.Error{Code: vigil.ECONFLICT, Message: "already exists", Op: op, Err: err}
		case "22021", "22P05": // character_not_in_repertoire (a NUL in text), untranslatable_character
			return &vigil.Error{Code: vigil.EINVALID, Message: "text must not contain NUL characters", Op: op, Err: err}
		case "57014": // query_canceled: statement_timeout or a cancel request
			return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "request cancelled", Op: op, Err: err}
		}
	}
	if ve := unavailable(op, err); ve != nil {
		return ve
	}
	return &vigil.Error{Code: vigil.EINTERNAL, Op: op, Err: err}
}

// notFound turns pgx.ErrNoRows into vigil.NotFound(kind).
func notFound(err error, kind string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return vigil.NotFound(kind)
	}
	return err
}

// jsonOrNull returns raw as text for a JSON column, or nil (NULL) when it
// is empty, which is not JSON.
func jsonOrNull(raw []byte) *string {
	if len(raw) == 0 {
		return nil
	}
	s := string(raw)
	return &s
}

// errNoRows reports whether err is pgx.ErrNoRows.
func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// pageArgs returns the LIMIT and OFFSET of p.
func pageArgs(p vigil.Page) []any {
	limit := p.Limit
	if limit <= 0 {
		limit = vigil.DefaultLimit
	}
	return []any{limit, p.Offset}
}

// conds builds a WHERE clause with numbered placeholders.
type conds struct {
	where string
	args  []any
}

// add appends the condition expr, in which "?" stands for arg.
func (c *conds) add(expr string, arg any) {
	c.args = append(c.args, arg)
	ph := fmt.Sprintf("$%d", len(c.args))
	out := make([]byte, 0, len(expr)+len(ph))
	for i := 0; i < len(expr); i++ {
		if expr[i] == '?' {
			out = append(out, ph...)
			continue
		}
		out = append(out, expr[i])
	}
	c.addExpr(string(out))
}

// addExpr ANDs expr, which takes no argument.
func (c *conds) addExpr(expr string) {
	if c.where != "" {
		c.where += " AND "
	}
	c.where += expr
}

// timeRange adds the conditions of r on column col.
func (c *conds) timeRange(col string, r vigil.TimeRange) {
	if !r.Start.IsZero() {
		c.add(col+" >= ?", nanos(r.Start))
	}
	if !r.End.IsZero() {
		c.add(col+" < ?", nanos(r.End))
	}
}

// page returns " LIMIT $n OFFSET $m" and the arguments with p's appended.
func (c *conds) page(p vigil.Page) (string, []any) {
	args := append(append([]any{}, c.args...), pageArgs(p)...)
	return fmt.Sprintf(" LIMIT $%d OFFSET $%d", len(c.args)+1, len(c.args)+2), args
}
