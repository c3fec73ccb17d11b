// Package sqlite implements vigil.Store on an embedded SQLite database:
// WAL journal, one writer connection and a pool of readers, FTS5 for
// artifact search, migrations embedded in the binary.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a vigil.Store on SQLite.
type Store struct {
	w      *sql.DB // the one writer connection
	r      *sql.DB // readers
	search *sql.DB // readers of artifact searches only
	c      *sql.DB // the checkpointer's connection

	// searchHook, when set (tests), runs inside each search while it
	// holds its connection.
	searchHook func(context.Context)
	// statementHook, when set (tests), is told each statement a search
	// runs.
	statementHook func(query string, args []any)
	// drivenHook, when set (tests), is told the rowids of each count that
	// reads the matching rows.
	drivenHook func(lo, hi int64)

	plan searchPlan
	// addrReady: every artifact's address keys are in artifacts_addr
	// (addresses.go), so queries of addresses are answered there.
	addrReady bool
	// prefixes: the prefix of each org's sources in the full-text index
	// (source.go).
	prefixes sourcePrefixes
	// wholeBelow: the artifacts whose rowid is below it are indexed by
	// their whole line, the others by their search text (searchText).
	wholeBelow int64

	applied []string // migrations applied by Open
	raw     *rawCodec
	trainMu sync.Mutex // one dictionary trained at a time
	log     *slog.Logger
	tail    *tailMark

	stopCheckpoint chan struct{}
	checkpointDone chan struct{}

	// tally counts detection signals in memory until they may fire: one
	// process alone writes this database (its data directory's lock).
	tally *correlate.Tally
	// tallyPath is where the tally spills and saves (loadTally).
	tallyPath string
	// merge merges the full-text indexes between transactions (merge.go).
	merge *merger
	// partRows: a part of the full-text indexes holds this many rowids
	// (ftsparts.go).
	partRows int64
	// newest caches the newest signals of growing bursts, grown the
	// nodes of growing observations (grownnodes.go); wmu holds write
	// transactions one at a time from begin to commit, so that they
	// change in their order.
	newest *newestCache
	grown  grownNodes
	wmu    sync.Mutex
	// stmts are the writer's prepared statements (tx.go), used by its
	// transactions under wmu.
	stmts stmtCache
	// cacheGet is CacheGet's statement on the readers, once prepared.
	cacheGet struct {
		once sync.Once
		st   *sql.Stmt
	}
}

var _ vigil.Store = (*Store)(nil)

// Options tune the database.
type Options struct {
	// FsyncAlways selects synchronous=FULL: every commit reaches the disk
	// before it returns, at a cost measured in docs/benchmarks.md.
	FsyncAlways bool
	// Log receives the report of a WAL whose end was lost (see tail.go).
	Log *slog.Logger
	// DetectionMemory bounds the detection signals counted in memory
	// until they may fire (correlate.Tally): 0 is
	// correlate.DefaultTallyLimit; negative records every signal in the
	// database, as several processes sharing one database would need.
	DetectionMemory int
	// MaxSearches is how many artifact searches run at once; more wait
	// (within their deadline). They have connections of their own, so
	// that searches, however costly, never hold the readers that every
	// other read (incidents, observations, /readyz) uses. 0: the number
	// of CPUs, at least 2.
	MaxSearches int
	// WriterMerges leaves the full-text indexes' merges to the writer's
	// commits (FTS5's automerge), as before the merger (merge.go).
	WriterMerges bool
	// FTSPartRows is how many artifacts a part of the full-text indexes
	// holds before the next batch starts a new one (ftsparts.go); 0 is
	// 4,194,304.
	FTSPartRows int
}

// Open opens (creating if needed) the database file at path and applies
// pending migrations.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	sync := "NORMAL"
	if opt.FsyncAlways {
		sync = "FULL"
	}
	// busy_timeout first, so that the pragmas after it wait for a lock
	// instead of failing.
	pragmas := []string{
		"busy_timeout(10000)",
		"journal_mode(WAL)",
		"synchronous(" + sync + ")",
		"foreign_keys(ON)",
		"temp_store(MEMORY)",
		"cache_size(-65536)",
		"journal_size_limit(67108864)",
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := createPrivate(abs); err != nil {
		return nil, err
	}
	// open is a pool of the database with the common pragmas, an extra
	// one replacing the common one of its name in its place, run in that
	// order on each connection.
	open := func(params string, extra ...string) *sql.DB {
		ps := slices.Clone(pragmas)
		for _, e := range extra {
			if i := slices.IndexFunc(ps, func(p string) bool { return pragmaName(p) == pragmaName(e) }); i >= 0 {
				ps[i] = e
			} else {
				ps = append(ps, e)
			}
		}
		return OpenDB(abs+params, ps...)
	}
	w := open("?_txlock=immediate", "wal_autocheckpoint(0)") // see checkpoint.go
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	s := &Store{w: w, newest: newNewestCache(newestTotal), plan: searchPlan{denseMatches: denseMatches, windowScan: windowScan, walkWindow: walkWindow, driveMatches: driveMatches},
		raw: newRawCodec(), log: opt.Log, partRows: defaultPartRows}
	if opt.FTSPartRows > 0 {
		s.partRows = int64(opt.FTSPartRows)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.applied, err = s.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.loadWholeBelow(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: search text: %w", err)
	}
	if err := s.raw.load(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: compression dictionaries: %w", err)
	}
	if err := s.prefixes.load(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: source ids: %w", err)
	}
	if err := s.reindex(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if s.addrReady, err = s.backfillAddresses(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if s.tail, err = openTail(abs + "-last"); err != nil {
		w.Close()
		return nil, err
	}
	if _, err := s.checkTail(ctx, opt.Log); err != nil {
		w.Close()
		s.tail.close()
		return nil, err
	}
	// Readers keep 16 MiB of pages each (the writer 64), the checkpointer 2.
	r := open("", "query_only(1)", "cache_size(-16384)")
	n := max(4, runtime.GOMAXPROCS(0)*2)
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.r = r
	search := open("", "query_only(1)", "cache_size(-16384)")
	n = opt.MaxSearches
	if n <= 0 {
		n = max(2, runtime.GOMAXPROCS(0))
	}
	search.SetMaxOpenConns(n)
	search.SetMaxIdleConns(n)
	s.search = search
	c := open("", fmt.Sprintf("busy_timeout(%d)", restartWait.Milliseconds()), "cache_size(-2048)")
	c.SetMaxOpenConns(1)
	if opt.DetectionMemory >= 0 {
		s.tallyPath = abs + "-tally"
		if s.tally, err = loadTally(ctx, w, opt.DetectionMemory, s.tallyPath, s.log); err != nil {
			w.Close()
			r.Close()
			search.Close()
			c.Close()
			return nil, err
		}
	}
	if err := s.startMerger(ctx, !opt.WriterMerges); err != nil {
		if s.tally != nil {
			s.tally.Close()
		}
		w.Close()
		r.Close()
		search.Close()
		c.Close()
		return nil, err
	}
	s.c, s.stopCheckpoint, s.checkpointDone = c, make(chan struct{}), make(chan struct{})
	go checkpointLoop(c, s.stopCheckpoint, s.checkpointDone)
	return s, nil
}

// pragmaName is the name of a DSN pragma such as "cache_size(-2048)".
func pragmaName(p string) string {
	name, _, _ := strings.Cut(p, "(")
	return name
}

// createPrivate creates the database file, empty, readable and writable
// by its owner only, unless it exists. SQLite would create it 0644 (less
// the umask), and it creates the -wal and -shm files with the mode of the
// database file: so all three are 0600, and a mode the operator gave an
// existing database (0640 for a backup group) is the mode of all three.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	// Exactly 0600, whatever the umask took away.
	err = f.Chmod(0o600)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	return nil
}

// Migrate opens the database at path, applies pending migrations and
// closes it. It returns the names of the migrations it applied (none when
// the schema was current).
func Migrate(ctx context.Context, path string) ([]string, error) {
	s, err := Open(ctx, path, Options{})
	if err != nil {
		return nil, err
	}
	return s.applied, s.Close()
}

// Close closes both connection pools.
func (s *Store) Close() error {
	var errs []error
	s.merge.close()
	if s.tally != nil {
		errs = append(errs, s.saveTally(s.tallyPath+".snapshot"), s.tally.Close())
	}
	if s.cacheGet.st != nil {
		errs = append(errs, s.cacheGet.st.Close())
	}
	if s.r != nil {
		errs = append(errs, s.r.Close(), s.search.Close())
	}
	s.stmts.close()
	errs = append(errs, s.w.Close())
	if s.c != nil {
		close(s.stopCheckpoint)
		<-s.checkpointDone
		errs = append(errs, s.c.Close())
	}
	errs = append(errs, s.tail.close())
	return errors.Join(errs...)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

// migrate applies every embedded migration not yet recorded, each in its
// own transaction, and returns the names of those it applied.
func (s *Store) migrate(ctx context.Context) ([]string, error) {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return nil, fmt.Errorf("sqlite: migrations table: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("sqlite: list migrations: %w", err)
	}
	sort.Strings(names)
	var applied []string
	for _, name := range names {
		base := filepath.Base(name)
		err := s.tx(ctx, func(tx *wtx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE name = ?`, base).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			body, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			// Unprepared: a migration is several statements, which a
			// prepared statement of the C driver would stop after the first.
			if _, err := tx.Tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`, base, time.Now().UnixNano())
			if err == nil {
				applied = append(applied, base)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("sqlite: migration %s: %w", base, err)
		}
	}
	return applied, nil
}

// tx runs fn in a write transaction, committing if it returns nil; the
// changes fn noted in the audit trail of ctx's request are recorded in
// it as it commits.
func (s *Store) tx(ctx context.Context, fn func(*wtx) error) error {
	trail := vigil.AuditTrailFrom(ctx)
	trail.Begin()
	if s.merge != nil {
		s.merge.waiting.Add(1)
		s.wmu.Lock()
		s.merge.waiting.Add(-1)
	} else {
		s.wmu.Lock()
	}
	defer s.wmu.Unlock()
	if s.merge != nil {
		defer s.merge.held(time.Now())
	}
	// Begun without the context's cancellation, which its statements
	// check (uninterrupted).
	sqlTx, err := s.w.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return err
	}
	tx := &wtx{Tx: sqlTx, shared: &s.stmts}
	err = fn(tx)
	if err == nil {
		err = insertAudit(ctx, tx, trail.Take())
	}
	if err == nil {
		err = tx.Commit()
	} else {
		tx.Rollback()
	}
	if err != nil {
		// What the transaction put in the caches did not happen.
		s.newest.forget(tx.cached)
		s.grown.forget(tx.grown)
	} else if len(tx.fresh) > 0 {
		// Still the writer: its connection is free until the next
		// transaction begins.
		s.stmts.prepare(context.WithoutCancel(ctx), s.w, tx.fresh)
	}
	return err
}

// wrap gives an error from the driver its Vigil code and the operation's
// name; a *vigil.Error passes through unchanged.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ve *vigil.Error
	if errors.As(err, &ve) {
		return err
	}
	if rc, ok := resultCode(err); ok && (rc == codeConstraintUnique || rc == codeConstraintPK) {
		return &vigil.Error{Code: vigil.ECONFLICT, Message: "already exists", Op: op, Err: err}
	}
	if ve := unavailable(op, err); ve != nil {
		return ve
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "request cancelled", Op: op, Err: err}
	}
	return &vigil.Error{Code: vigil.EINTERNAL, Op: op, Err: err}
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// nullNanos is t in Unix nanoseconds, or NULL when t is nil.
func nullNanos(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixNano()
}

// placeholders returns "?, ?, …" with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// pageClause returns the LIMIT/OFFSET of p.
func pageArgs(p vigil.Page) []any {
	limit := p.Limit
	if limit <= 0 {
		limit = vigil.DefaultLimit
	}
	return []any{limit, p.Offset}
}

// rangeClause appends conditions of r on column col to where.
func rangeClause(col string, r vigil.TimeRange, where []string, args []any) ([]string, []any) {
	if !r.Start.IsZero() {
		where = append(where, col+" >= ?")
		args = append(args, nanos(r.Start))
	}
	if !r.End.IsZero() {
		where = append(where, col+" < ?")
		args = append(args, nanos(r.End))
	}
	return where, args
}
