package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// reindexBatch is how many rowids the reindex reads per transaction
// (tests lower it).
var reindexBatch int64 = 20000

// reindex writes the full-text entries of the artifacts stored before
// migration 0036 (their tokens with their pair's prefix, source.go), in
// transactions of reindexBatch rowids, each recording how far it got: a
// store closed halfway goes on from there at its next Open.
func (s *Store) reindex(ctx context.Context) error {
	start := time.Now()
	logged := start
	var total int64
	for {
		var from, last int64
		done := false
		err := s.tx(ctx, func(tx *wtx) error {
			err := tx.QueryRowContext(ctx, `SELECT next_rowid, last_rowid FROM fts_reindex`).Scan(&from, &last)
			if errors.Is(err, sql.ErrNoRows) {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			to := min(from+reindexBatch-1, last)
			n, err := s.reindexRows(ctx, tx, from, to)
			if err != nil {
				return err
			}
			total += n
			if to >= last {
				_, err = tx.ExecContext(ctx, `DELETE FROM fts_reindex`)
				done = true
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE fts_reindex SET next_rowid = ?`, to+1)
			return err
		})
		if err != nil {
			// The pairs the transaction made are gone with it.
			if lerr := s.prefixes.load(ctx, s.w); lerr != nil {
				err = errors.Join(err, lerr)
			}
			return fmt.Errorf("sqlite: full-text index of stored artifacts: %w", err)
		}
		if done {
			if total > 0 {
				s.log.Info("indexed the stored artifacts' text by source", "artifacts", total, "took", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if time.Since(logged) > 10*time.Second {
			logged = time.Now()
			s.log.Info("indexing the stored artifacts' text by source", "rowid", from, "of", last)
		}
	}
}

// reindexRows writes the full-text entries of the artifacts of rowids
// [from, to], rowids ascending, adding to s.prefixes the pairs it had to
// make (reindex reloads them if tx does not commit), and returns how many
// artifacts it read.
func (s *Store) reindexRows(ctx context.Context, tx *wtx, from, to int64) (int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, org_id, source, raw FROM artifacts WHERE rowid BETWEEN ? AND ? ORDER BY rowid`, from, to)
	if err != nil {
		return 0, err
	}
	type entry struct {
		rowid int64
		k     sourceKey
		text  string
	}
	var all []entry
	for rows.Next() {
		var e entry
		var raw rawValue
		if err := rows.Scan(&e.rowid, &e.k.org, &e.k.source, &raw); err != nil {
			rows.Close()
			return 0, err
		}
		if e.text, err = s.raw.decode(raw.v); err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	fts := make([]ftsRow, 0, len(all))
	for _, e := range all {
		p, ok := s.prefixes.get(e.k.org, e.k.source)
		if !ok {
			if p, err = sourcePrefixIn(ctx, tx, e.k.org, e.k.source); err != nil {
				return 0, err
			}
			s.prefixes.add(e.k, p)
		}
		fts = append(fts, ftsRow{e.rowid, indexText(s.searchText(e.rowid, e.text), p)})
	}
	ps, err := readParts(ctx, tx)
	if err != nil {
		return 0, err
	}
	if err := writeFTS(ctx, tx, ps, fts); err != nil {
		return 0, err
	}
	return int64(len(all)), nil
}
