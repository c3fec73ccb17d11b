package postgres

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Autovacuum analyzes each partition of artifacts as it grows, never the
// partitioned table itself, whose statistics (those of its partitions
// together) the planner reads for every search across them: without
// them it takes each search's words and source for a default share of
// the rows and plans as for a few, which took seconds a search at 10 M
// artifacts until someone ran ANALYZE artifacts by hand. So the store
// analyzes it after large loads itself: once this process has stored
// analyzeCheckRows rows since it last looked, it compares the rows the
// partitions hold now with those the last ANALYZE of artifacts counted
// (by whichever process), and analyzes it again when they differ by
// more than analyzeFraction of them and at least Store.analyzeMin
// (analyzeMinRows). The planner takes the rows of each partition from
// the partition; what it reads of the whole is shares (of a word, of a
// source), which a load of half as many again changes little, so that
// the store analyzes a growing table a dozen times on its way to 10 M
// (0.6 s each there), not once per tenth as autovacuum would.
const (
	analyzeCheckRows = 10000
	analyzeMinRows   = 100000
	analyzeFraction  = 0.5
	// analyzeLockKey makes one process analyze at a time; the others
	// skip it.
	analyzeLockKey = 0x76696769_6c000003
)

// analyzeState is what the store knows of its own stores since it last
// looked at the statistics of artifacts.
type analyzeState struct {
	// stored: rows stored since the last look.
	stored int
	// since: rows stored since this process last analyzed artifacts (or
	// opened the store), counted here: the server's count of the
	// partitions' rows lags its commits by a second or more.
	since float64
	// counted: rows the last ANALYZE by this process counted, for a
	// server (before 14) that keeps no count of a partitioned table's
	// rows; -1 for none.
	counted float64
}

// upkeepTimeout bounds one pass of the store's upkeep (summarize and
// analyzeIfStale): an ANALYZE waiting for a lock another session holds
// gives up then, and the next look tries again.
const upkeepTimeout = 5 * time.Minute

// upkeep is the store's background upkeep of artifacts: at most one
// goroutine runs a pass at a time, and a look asked for while it runs
// makes it run one more pass after, however many were asked for.
type upkeep struct {
	// ctx is cancelled by Close; wg counts the running goroutine.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// running and again, under Store.mu: a goroutine runs; another
	// pass is asked for.
	running, again bool
}

// stored notes n rows stored, and, once they may make the statistics of
// artifacts stale, has them looked at in the background (startUpkeep):
// an ANALYZE took 0.6 s at 10 M artifacts, which the inserting call,
// the pipeline's batch, waited for. Its errors are not the store's: the
// rows are stored, and the next look tries again.
func (s *Store) stored(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.analyze.stored += n
	s.analyze.since += float64(n)
	if s.analyze.stored < analyzeCheckRows {
		return
	}
	s.analyze.stored = 0
	s.startUpkeep()
}

// startUpkeep starts a pass of upkeep, or asks the running one for
// another; s.mu is held.
func (s *Store) startUpkeep() {
	u := &s.upkeep
	switch {
	case u.ctx.Err() != nil:
		// Closed.
	case u.running:
		u.again = true
	default:
		u.running = true
		u.wg.Go(func() {
			for {
				ctx, cancel := context.WithTimeout(u.ctx, upkeepTimeout)
				_ = s.summarize(ctx)
				_, _ = s.analyzeIfStale(ctx)
				cancel()
				s.mu.Lock()
				if !u.again || u.ctx.Err() != nil {
					u.running, u.again = false, false
					s.mu.Unlock()
					return
				}
				u.again = false
				s.mu.Unlock()
			}
		})
	}
}

// stopUpkeep cancels the upkeep running and waits for it to end.
func (s *Store) stopUpkeep() {
	s.mu.Lock()
	s.upkeep.cancel()
	s.mu.Unlock()
	s.upkeep.wg.Wait()
}

// summarize summarizes the ranges of blocks of artifacts that its BRIN
// index of timestamps (migration 0026) has not summarized yet: the
// smallest and largest timestamp of each. A search within a time window
// reads every block of a range without a summary, whatever its times.
// autovacuum summarizes each range once the next one starts
// (autosummarize), but keeps at most 256 such requests, and drops the
// rest while it is busy: after a load at thousands of artifacts a
// second, none of a 1 M load's ranges had a summary, and "udp" within
// the firewall over a day read every block of the month (11,455 blocks,
// 101,739 rows tested for 3,085 matches; 2,220 blocks once summarized).
// Done at each look (analyzeCheckRows), it reads the blocks stored since
// the last, and waits for no lock that autovacuum holds.
func (s *Store) summarize(ctx context.Context) error {
	return wrap("summarize artifacts_ts_brin", pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', '100', true)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT brin_summarize_new_values(i.inhrelid) FROM pg_inherits i WHERE i.inhparent = 'artifacts_ts_brin'::regclass`)
		return err
	}))
}

// analyzeIfStale analyzes artifacts when its statistics are missing or
// stale (see analyzeFraction), and reports whether it did.
func (s *Store) analyzeIfStale(ctx context.Context) (bool, error) {
	// reltuples of a partitioned table: what its last ANALYZE counted
	// (-1: never analyzed; 0 before PostgreSQL 14, which does not keep
	// it). n_live_tup of each partition: its rows, as the server's
	// statistics have counted the commits of every process.
	var counted, now float64
	err := s.pool.QueryRow(ctx, `SELECT p.reltuples, COALESCE(SUM(st.n_live_tup), 0)
		FROM pg_class p LEFT JOIN pg_inherits i ON i.inhparent = p.oid
		LEFT JOIN pg_stat_user_tables st ON st.relid = i.inhrelid
		WHERE p.oid = 'artifacts'::regclass GROUP BY p.reltuples`).Scan(&counted, &now)
	if err != nil {
		return false, wrap("analyze artifacts", err)
	}
	s.mu.Lock()
	if counted <= 0 && s.analyze.counted >= 0 {
		counted = s.analyze.counted
	}
	counted = max(counted, 0)
	// The change since: by every process as the server counts it, or at
	// least this process's own.
	changed := max(math.Abs(now-counted), s.analyze.since)
	s.mu.Unlock()
	if changed < max(float64(s.analyzeMin), analyzeFraction*counted) {
		return false, nil
	}
	done := false
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(analyzeLockKey)).Scan(&done); err != nil || !done {
			return err
		}
		_, err := tx.Exec(ctx, `ANALYZE artifacts`)
		return err
	})
	if err != nil {
		return false, wrap("analyze artifacts", err)
	}
	if done {
		s.mu.Lock()
		s.analyze.counted, s.analyze.since = max(now, counted+changed), 0
		s.mu.Unlock()
	}
	return done, nil
}
