package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
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

// merger runs the full-text indexes' merges between the writer's
// transactions.
type merger struct {
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	waiting atomic.Int32 // transactions waiting for the writer
	// quiet has a value after each round that ended with nothing left to
	// merge (tests wait for it).
	quiet chan struct{}
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
	for {
		select {
		case <-m.stop:
			return
		case <-m.wake:
		}
		for m.waiting.Load() == 0 {
			select {
			case <-m.stop:
				return
			default:
			}
			did, err := s.mergeStep(ctx)
			if err != nil {
				if err.Error() != failed {
					s.log.Error("full-text index merge; FTS5 merges a level of 64 segments in the writer's commit", slog.Any("error", err))
					failed = err.Error()
				}
				break
			}
			failed = ""
			if !did {
				select {
				case m.quiet <- struct{}{}:
				default:
				}
				break
			}
		}
	}
}

// mergeStep does one step of merging in each index of the newest part
// (a part no longer written keeps the segments it has), and reports
// whether there was any to do.
func (s *Store) mergeStep(ctx context.Context) (bool, error) {
	did := false
	err := s.tx(ctx, func(tx *wtx) error {
		ps, err := readParts(ctx, tx)
		if err != nil {
			return err
		}
		p := ps[len(ps)-1]
		for _, t := range []string{p.table(ftsBase), p.table(addrBase)} {
			var before, after int64
			if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (%s, rank) VALUES ('merge', %d)", t, t, mergePages)); err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
			if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
				return err
			}
			// FTS5's documented test: a difference under 2, no work done.
			did = did || after-before >= 2
		}
		return nil
	})
	return did, err
}
