package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-soc/vigil/internal/search"
)

// Address keys (migration 0033, search.AddressKeys): artifacts_addr holds
// the keys of every artifact that has one, written with the artifact and
// deleted with it, so that a query made only of address terms
// (search.Query.AddressesOnly) reads one key's doclist there instead of
// the phrase of its parts in artifacts_fts.

// addrKeys returns the text artifacts_addr indexes for raw: its keys,
// space-separated ("" for none).
func addrKeys(raw string) string { return string(search.AppendAddressKeys(nil, raw)) }

// addrBackfillBatch is how many rowids the backfill reads per transaction
// (tests lower it).
var addrBackfillBatch int64 = 20000

// backfillAddresses indexes the keys of the artifacts stored before
// migration 0033, in transactions of addrBackfillBatch rowids, each
// recording how far it got (a store closed halfway goes on from there at
// its next Open), and reports whether every artifact is indexed.
func (s *Store) backfillAddresses(ctx context.Context) (bool, error) {
	start := time.Now()
	logged := start
	var from, last int64
	var total int64
	for {
		done := false
		err := s.tx(ctx, func(tx *wtx) error {
			err := tx.QueryRowContext(ctx, `SELECT next_rowid, last_rowid FROM addr_backfill`).Scan(&from, &last)
			if errors.Is(err, sql.ErrNoRows) {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			to := min(from+addrBackfillBatch-1, last)
			n, err := s.indexAddresses(ctx, tx, from, to)
			if err != nil {
				return err
			}
			total += n
			if to >= last {
				_, err = tx.ExecContext(ctx, `DELETE FROM addr_backfill`)
				done = true
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE addr_backfill SET next_rowid = ?`, to+1)
			return err
		})
		if err != nil {
			return false, fmt.Errorf("sqlite: address keys of stored artifacts: %w", err)
		}
		if done {
			if total > 0 {
				s.log.Info("indexed the address keys of stored artifacts", "artifacts", total, "took", time.Since(start).Round(time.Millisecond))
			}
			return true, nil
		}
		if time.Since(logged) > 10*time.Second {
			logged = time.Now()
			s.log.Info("indexing the address keys of stored artifacts", "rowid", from, "of", last)
		}
	}
}

// indexAddresses writes the keys of the artifacts of rowids [from, to],
// and returns how many artifacts it read.
func (s *Store) indexAddresses(ctx context.Context, tx *wtx, from, to int64) (int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, raw FROM artifacts WHERE rowid BETWEEN ? AND ?`, from, to)
	if err != nil {
		return 0, err
	}
	type keyed struct {
		rowid int64
		keys  string
	}
	var all []keyed
	var n int64
	for rows.Next() {
		var k keyed
		var raw rawValue
		if err := rows.Scan(&k.rowid, &raw); err != nil {
			rows.Close()
			return 0, err
		}
		n++
		text, err := s.raw.decode(raw.v)
		if err != nil {
			rows.Close()
			return 0, err
		}
		if k.keys = addrKeys(text); k.keys != "" {
			all = append(all, k)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO artifacts_addr (rowid, keys) VALUES (?, ?)`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	for _, k := range all {
		if _, err := ins.ExecContext(ctx, k.rowid, k.keys); err != nil {
			return 0, err
		}
	}
	return n, nil
}
