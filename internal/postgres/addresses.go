package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil/internal/search"
)

// Address keys (migration 0022): every vector written by this build holds
// the keys of its line's addresses (search.TSVector), and a search renders
// an address term as its key (search.Query.TSQueryAddressKeys) once no
// artifact without keys is left: until then, as the phrase of its parts.

// addrKeys says whether every artifact's vector holds its address keys.
type addrKeys struct {
	ready   atomic.Bool
	checked atomic.Int64 // unix nanoseconds of the last look while not ready
}

// addrRecheck is how often a store not ready looks again: another process
// may have dropped the last partition without keys, or written their keys.
const addrRecheck = time.Minute

// addressKeysReady reports whether searches may read address keys,
// looking at address_keys_pending at most once per addrRecheck until they
// may (an error is taken as not yet).
func (s *Store) addressKeysReady(ctx context.Context) bool {
	if s.addr.ready.Load() {
		return true
	}
	now := time.Now().UnixNano()
	last := s.addr.checked.Load()
	if now-last < int64(addrRecheck) || !s.addr.checked.CompareAndSwap(last, now) {
		return false
	}
	pending, err := s.addressKeysPending(ctx)
	if err == nil && len(pending) == 0 {
		s.addr.ready.Store(true)
	}
	return s.addr.ready.Load()
}

// pendingPart is a partition whose artifacts may lack address keys: all
// of them, or for the DEFAULT partition those created before.
type pendingPart struct {
	name   string
	before int64
}

// addressKeysPending returns the partitions listed by migration 0022 that
// still hold artifacts without keys, and takes the others off the list.
func (s *Store) addressKeysPending(ctx context.Context) ([]pendingPart, error) {
	rows, err := s.pool.Query(ctx, `SELECT p.part, p.before, to_regclass(quote_ident(p.part)) IS NOT NULL
		FROM address_keys_pending p ORDER BY p.part DESC`)
	if err != nil {
		return nil, err
	}
	type listed struct {
		pendingPart
		exists bool
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (listed, error) {
		var l listed
		err := r.Scan(&l.name, &l.before, &l.exists)
		return l, err
	})
	if err != nil {
		return nil, err
	}
	var out []pendingPart
	for _, l := range all {
		held := l.exists
		if held && l.name == "artifacts_default" {
			if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM artifacts_default WHERE created_at < $1)`, l.before).Scan(&held); err != nil {
				return nil, err
			}
		}
		if held {
			out = append(out, l.pendingPart)
			continue
		}
		if _, err := s.pool.Exec(ctx, `DELETE FROM address_keys_pending WHERE part = $1`, l.name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addrBlocks is how many of a partition's blocks (8 KiB pages, about
// 15 artifacts each) WriteAddressKeys rewrites per transaction.
const addrBlocks = 128

// WriteAddressKeys adds their address keys to the vectors of the
// artifacts stored before migration 0022 (newest partition first, each
// in transactions of addrBlocks blocks, taken off the list when done),
// after which searches read addresses as keys. It rewrites every row of
// those partitions: an UPDATE of each artifact, long on a large store,
// which retention makes unnecessary once it has dropped them. An
// interrupted run starts the partition it was in again (adding keys a
// vector holds changes nothing). progress, if not nil, is told each
// partition done and how many artifacts it rewrote.
func (s *Store) WriteAddressKeys(ctx context.Context, progress func(part string, n int64)) error {
	pending, err := s.addressKeysPending(ctx)
	if err != nil {
		return wrap("WriteAddressKeys", err)
	}
	for _, p := range pending {
		n, err := s.writePartKeys(ctx, p)
		if err != nil {
			return wrap("WriteAddressKeys", fmt.Errorf("%s: %w", p.name, err))
		}
		if _, err := s.pool.Exec(ctx, `DELETE FROM address_keys_pending WHERE part = $1`, p.name); err != nil {
			return wrap("WriteAddressKeys", err)
		}
		if progress != nil {
			progress(p.name, n)
		}
	}
	s.addr.ready.Store(true)
	return nil
}

// WriteAddressKeys connects to the database at url, writes the address
// keys of the artifacts stored before migration 0022 (Store.WriteAddressKeys)
// and disconnects.
func WriteAddressKeys(ctx context.Context, url string, progress func(part string, n int64)) error {
	s, err := Open(ctx, url, Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.WriteAddressKeys(ctx, progress)
}

// writePartKeys adds the keys of the artifacts of partition p created
// before p.before, reading its blocks in order up to its size when it
// starts (the new versions the updates write go to free space or beyond:
// one met again is rewritten to the same vector), and returns how many it
// rewrote.
func (s *Store) writePartKeys(ctx context.Context, p pendingPart) (int64, error) {
	part := pgx.Identifier{p.name}.Sanitize()
	var blocks int64
	if err := s.pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass) / current_setting('block_size')::bigint`, part).Scan(&blocks); err != nil {
		return 0, err
	}
	var total int64
	for b := int64(0); b < blocks; b += addrBlocks {
		rows, err := s.pool.Query(ctx, `SELECT org_id, ts, id, raw FROM `+part+`
			WHERE ctid >= format('(%s,0)', $1::bigint)::tid AND ctid < format('(%s,0)', $2::bigint)::tid AND created_at < $3`,
			b, b+addrBlocks, p.before)
		if err != nil {
			return total, err
		}
		var orgs, ids, keys []string
		var tss []int64
		for rows.Next() {
			var org, id string
			var ts int64
			var raw []byte
			if err := rows.Scan(&org, &ts, &id, &raw); err != nil {
				rows.Close()
				return total, err
			}
			if k := search.AddressKeysTSVector(string(raw)); k != "" {
				orgs, tss, ids, keys = append(orgs, org), append(tss, ts), append(ids, id), append(keys, k)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return total, err
		}
		if len(ids) == 0 {
			continue
		}
		_, err = s.pool.Exec(ctx, `UPDATE `+part+` a SET search = a.search || k.keys::tsvector
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS k(org_id, ts, id, keys)
			WHERE a.org_id = k.org_id AND a.ts = k.ts AND a.id = k.id`, orgs, tss, ids, keys)
		if err != nil {
			return total, err
		}
		total += int64(len(ids))
	}
	return total, nil
}
