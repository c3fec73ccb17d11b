package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/vigil-soc/vigil/internal/search"
)

// Address keys (migration 0033, search.AddressKeys): artifacts_addr holds
// the keys of every artifact that has one, written with the artifact and
// deleted with it, so that a query made only of address terms
// (search.Query.AddressesOnly) reads one key's doclist there instead of
// the phrase of its parts in artifacts_fts.

// addrRows gathers the rows of artifacts_addr of a transaction's
// artifacts (rowid, keys space-separated: the text the table indexes) as
// a JSON array of pairs, so that one statement writes or deletes them all:
// a statement per artifact cost the writer 20 % more CPU per artifact.
type addrRows struct {
	b      []byte
	lo, hi int64 // the least and the greatest rowid added
}

// add adds the keys of the artifact rowid, whose line is raw, if it has.
func (r *addrRows) add(rowid int64, raw string) {
	mark, keys := r.begin(rowid)
	r.b = search.AppendAddressKeys(r.b, raw) // digits, dots and spaces
	r.end(mark, keys)
}

// addKeys adds the keys of the artifact rowid found before (lineKeys).
func (r *addrRows) addKeys(rowid int64, keys []byte) {
	if len(keys) == 0 {
		return
	}
	mark, start := r.begin(rowid)
	r.b = append(r.b, keys...)
	r.end(mark, start)
}

// begin opens the row of rowid: mark is where it begins, keys where its
// keys do.
func (r *addrRows) begin(rowid int64) (mark, keys int) {
	mark = len(r.b)
	if mark == 0 || rowid < r.lo {
		r.lo = rowid
	}
	if mark == 0 || rowid > r.hi {
		r.hi = rowid
	}
	if mark == 0 {
		r.b = append(r.b, '[')
	} else {
		r.b = append(r.b, ',')
	}
	r.b = append(r.b, '[')
	r.b = strconv.AppendInt(r.b, rowid, 10)
	r.b = append(r.b, ',', '"')
	return mark, len(r.b)
}

// end closes the row begun at mark, or takes it back if no keys followed.
func (r *addrRows) end(mark, keys int) {
	if len(r.b) == keys {
		r.b = r.b[:mark]
		return
	}
	r.b = append(r.b, '"', ']')
}

// lineKeys are the address keys of a batch's lines, found before the
// writer is taken (InsertArtifacts, batchTexts): finding them is the
// workers' work, not the one writer's.
type lineKeys struct {
	b   []byte
	end []int // the end of line i's keys in b
}

// of returns line i's keys (empty if it has none).
func (k lineKeys) of(i int) []byte {
	start := 0
	if i > 0 {
		start = k.end[i-1]
	}
	return k.b[start:k.end[i]]
}

// write inserts the rows gathered into the parts of artifacts_addr their
// rowids lie in, or with del gives them to its 'delete' command (an
// artifact's keys as written): one statement a part.
func (r *addrRows) write(ctx context.Context, tx *wtx, ps ftsParts, del bool) error {
	if len(r.b) == 0 {
		return nil
	}
	rows := string(append(r.b, ']'))
	return ps.span(r.lo, r.hi, func(p ftsPart, from, to int64, whole bool) error {
		t := p.table(addrBase)
		cmd, val, where := "", "", ""
		if del {
			cmd, val = t+", ", "'delete', "
		}
		args := []any{rows}
		if !whole {
			where = ` WHERE json_extract(value, '$[0]') BETWEEN ? AND ?`
			args = append(args, from, to)
		}
		st, err := tx.stmt(ctx, `INSERT INTO `+t+` (`+cmd+`rowid, keys)
		SELECT `+val+`json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)`+where)
		if err != nil {
			return err
		}
		_, err = st.ExecContext(ctx, args...)
		return err
	})
}

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
	var keys addrRows
	var n int64
	for rows.Next() {
		var rowid int64
		var raw rawValue
		if err := rows.Scan(&rowid, &raw); err != nil {
			rows.Close()
			return 0, err
		}
		n++
		text, err := s.raw.decode(raw.v)
		if err != nil {
			rows.Close()
			return 0, err
		}
		keys.add(rowid, s.searchText(rowid, text))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	ps, err := readParts(ctx, tx)
	if err != nil {
		return 0, err
	}
	return n, keys.write(ctx, tx, ps, false)
}
