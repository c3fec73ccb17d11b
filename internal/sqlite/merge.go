package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// FTS5 merges each full-text index's segments in the transaction that
// wrote the last of a level's 16 (automerge): the merge is work of the
// one writer, ingest waits for it, and its share grows as the index
// climbs levels (the third level's merges, from about five million
// artifacts, made the edge mix's writer 25 % busier: docs/benchmarks.md,
// issue 34). The merger does that work instead when no transaction waits
// for the writer (+5 to 6 % end to end on the edge mix): automerge is
// off, usermerge 16 (a level is merged once
// it holds 16 segments, as before), and after each batch stored the
// merger runs the 'merge' command a few pages at a time, each step a
// transaction of its own, until no work is left or a transaction waits.
// If ingest leaves it no room, a level reaching crisismerge (64)
// segments is merged in the writer's commit as before: bounded either
// way.

// mergePages is the work of one merge step, in leaf pages written, and
// a step is the longest a transaction waits for the merger: 37 ms at the
// median, 149 at the 99th percentile on a store of a few million edge
// artifacts (docs/benchmarks.md, session 14).
const mergePages = 64

// A part of the indexes no longer written to (ftsparts.go) keeps the
// segments it had, up to fifteen on each level: a search of the whole
// store read each of them (three parts of 55 segments at 10 M took single
// words' and prefixes' searches up to twice the CPU of one index of 52).
// The merger merges such a part into one segment, a step at a time
// ('merge' with a negative count), but only while the writer is busy less
// than half the time: at full ingest (the edge mix keeps it busy 80 to 90
// %) it stays out of ingest's way, and merges once ingest slows. A part
// of 4 M artifacts took 10-12 s of CPU with the C library.
const idleBusy = 0.5

// merger runs the full-text indexes' merges between the writer's
// transactions.
type merger struct {
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	waiting atomic.Int32 // transactions waiting for the writer
	// busy is the time the writer was held, in nanoseconds (held).
	busy atomic.Int64
	// quiet has a value after each round that ended with nothing left to
	// merge (tests wait for it).
	quiet chan struct{}
	// load is how busy the writer was lately (idle), and at and was the
	// time and busy of its last sample.
	load float64
	at   time.Time
	was  int64
}

// held counts the time from since as the writer's.
func (m *merger) held(since time.Time) {
	m.busy.Add(int64(time.Since(since)))
}

// idle reports whether the writer was held less than idleBusy of the
// time lately (an average over about ten seconds, sampled at most once a
// second); the sealed parts' own steps are not counted (sealedStep takes
// them back).
func (m *merger) idle() bool {
	now := time.Now()
	if m.at.IsZero() {
		m.at, m.was, m.load = now, m.busy.Load(), 1
		return false
	}
	if d := now.Sub(m.at); d >= time.Second {
		b := m.busy.Load()
		frac := max(float64(b-m.was), 0) / float64(d)
		m.load = 0.9*m.load + 0.1*min(frac, 1)
		m.at, m.was = now, b
	}
	return m.load < idleBusy
}

// startMerger turns FTS5's automerge off for every part of the indexes
// (ftsparts.go) and starts the merger; not in background, it turns
// automerge on (16, as before).
func (s *Store) startMerger(ctx context.Context, background bool) error {
	ps, err := readParts(ctx, s.w)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	for _, p := range ps {
		for _, t := range []string{p.table(ftsBase), p.table(addrBase)} {
			for _, q := range mergeSettings(t, background) {
				if _, err := s.w.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("sqlite: %s: %w", t, err)
				}
			}
		}
	}
	if !background {
		return nil
	}
	m := &merger{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), quiet: make(chan struct{}, 1)}
	s.merge = m
	go s.mergeLoop(m)
	return nil
}

// mergeSettings are the statements that set how the full-text index t is
// merged: by the merger (background) or in the writer's commits.
func mergeSettings(t string, background bool) []string {
	automerge := 16
	if background {
		automerge = 0
	}
	return []string{
		fmt.Sprintf("INSERT INTO %[1]s (%[1]s, rank) VALUES ('automerge', %[2]d)", t, automerge),
		fmt.Sprintf("INSERT INTO %[1]s (%[1]s, rank) VALUES ('usermerge', 16)", t),
		fmt.Sprintf("INSERT INTO %[1]s (%[1]s, rank) VALUES ('crisismerge', 64)", t),
	}
}

// poke tells the merger that a transaction wrote to the indexes.
func (m *merger) poke() {
	if m == nil {
		return
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *merger) close() {
	if m == nil {
		return
	}
	close(m.stop)
	<-m.done
}

func (s *Store) mergeLoop(m *merger) {
	defer close(m.done)
	ctx := context.Background()
	failed := "" // the last error logged: one a batch would flood the log
	logErr := func(err error) {
		if err.Error() != failed {
			s.log.Error("full-text index merge; FTS5 merges a level of 64 segments in the writer's commit", slog.Any("error", err))
			failed = err.Error()
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		poked := false
		select {
		case <-m.stop:
			return
		case <-m.wake:
			poked = true
		case <-tick.C:
			// Without a batch since: only a part left to merge, read
			// without the writer.
			if !s.sealedLeft(ctx) {
				continue
			}
		}
		quiet := !poked
		for poked && m.waiting.Load() == 0 {
			select {
			case <-m.stop:
				return
			default:
			}
			did, err := s.mergeStep(ctx)
			if err != nil {
				logErr(err)
				break
			}
			failed = ""
			if !did {
				quiet = true
				break
			}
		}
		// Then the parts no longer written to, while the writer idles.
		for quiet && m.waiting.Load() == 0 && m.idle() {
			select {
			case <-m.stop:
				return
			default:
			}
			t0 := time.Now()
			did, err := s.sealedStep(ctx)
			m.busy.Add(-int64(time.Since(t0))) // not ingest's: idle stays idle
			if err != nil {
				logErr(err)
				break
			}
			if !did {
				break
			}
		}
		if quiet {
			select {
			case m.quiet <- struct{}{}:
			default:
			}
		}
	}
}

// sealedLeft reports whether a part no longer written to is left to
// merge into one segment.
func (s *Store) sealedLeft(ctx context.Context) bool {
	var left bool
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM fts_parts
		WHERE merged = 0 AND dropped = 0 AND first_rowid < (SELECT MAX(first_rowid) FROM fts_parts))`).Scan(&left)
	return err == nil && left
}

// sealedStep does one step of merging the oldest part no longer written
// to that is not yet one segment, and reports whether there was one; a
// part found merged is marked so.
func (s *Store) sealedStep(ctx context.Context) (bool, error) {
	did := false
	err := s.tx(ctx, func(tx *wtx) error {
		ps, err := readParts(ctx, tx)
		if err != nil {
			return err
		}
		for _, p := range ps[:len(ps)-1] {
			if p.dropped || p.merged {
				continue
			}
			for _, t := range []string{p.table(ftsBase), p.table(addrBase)} {
				w, err := mergeWork(ctx, tx, t, -mergePages)
				if err != nil {
					return err
				}
				did = did || w
			}
			if !did {
				if _, err := tx.ExecContext(ctx, `UPDATE fts_parts SET merged = 1 WHERE part = ?`, p.n); err != nil {
					return err
				}
				s.log.Info("full-text part merged into one segment", "part", p.n)
			}
			did = true // a part looked at: perhaps the next
			return nil
		}
		return nil
	})
	return did, err
}

// mergeStep does one step of merging in each index of the newest part
// (a part no longer written is merged by sealedStep), and reports whether
// there was any to do.
func (s *Store) mergeStep(ctx context.Context) (bool, error) {
	did := false
	err := s.tx(ctx, func(tx *wtx) error {
		ps, err := readParts(ctx, tx)
		if err != nil {
			return err
		}
		p := ps[len(ps)-1]
		for _, t := range []string{p.table(ftsBase), p.table(addrBase)} {
			w, err := mergeWork(ctx, tx, t, mergePages)
			if err != nil {
				return err
			}
			did = did || w
		}
		return nil
	})
	return did, err
}

// mergeWork runs FTS5's 'merge' command of pages on the index t (a
// negative count merges every segment into one), and reports whether it
// did any work.
func mergeWork(ctx context.Context, tx *wtx, t string, pages int) (bool, error) {
	var before, after int64
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (%s, rank) VALUES ('merge', %d)", t, t, pages)); err != nil {
		return false, fmt.Errorf("%s: %w", t, err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
		return false, err
	}
	// FTS5's documented test: a difference under 2, no work done.
	return after-before >= 2, nil
}
