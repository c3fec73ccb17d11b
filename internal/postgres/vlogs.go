package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vigil-soc/vigil"
)

// What the VictoriaLogs artifact store (internal/vlogs) keeps here
// (migrations 0023, 0024): the tenant of each org, the claims of
// artifact ids with the write each is in (artifact_writes), enrichment recorded after an artifact was
// stored, and raw lines too long for one VictoriaLogs entry.

// dbNanos is the database's clock in nanoseconds: leases are compared on
// one clock whatever the clocks of the workers.
const dbNanos = `(EXTRACT(EPOCH FROM clock_timestamp()) * 1e9)::bigint`

// ArtifactTenant returns org's VictoriaLogs tenant (AccountID, ProjectID),
// assigning it on first use: the deployment's AccountID and a ProjectID of
// org's own. Concurrent first calls agree.
func (s *Store) ArtifactTenant(ctx context.Context, org string) (account, project uint32, err error) {
	var acc, proj int64
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var b [4]byte
		rand.Read(b[:])
		if _, err := tx.Exec(ctx, `INSERT INTO artifact_account (singleton, account_id) VALUES (1, $1) ON CONFLICT DO NOTHING`,
			int64(binary.BigEndian.Uint32(b[:])|1)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO artifact_tenants (org_id, project_id, created_at)
			SELECT $1, nextval('artifact_projects'), $2 WHERE NOT EXISTS (SELECT 1 FROM artifact_tenants WHERE org_id = $1)
			ON CONFLICT (org_id) DO NOTHING`, org, nanos(vigil.Now())); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT a.account_id, t.project_id FROM artifact_account a, artifact_tenants t WHERE t.org_id = $1`,
			org).Scan(&acc, &proj)
	})
	return uint32(acc), uint32(proj), wrap("ArtifactTenant", err)
}

// ArtifactTenants returns the tenants of every org that has one.
func (s *Store) ArtifactTenants(ctx context.Context) (account uint32, projects []uint32, err error) {
	var acc int64
	err = s.pool.QueryRow(ctx, `SELECT account_id FROM artifact_account`).Scan(&acc)
	if errNoRows(err) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, wrap("ArtifactTenants", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT project_id FROM artifact_tenants ORDER BY project_id`)
	if err != nil {
		return 0, nil, wrap("ArtifactTenants", err)
	}
	ps, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	for _, p := range ps {
		projects = append(projects, uint32(p))
	}
	return uint32(acc), projects, wrap("ArtifactTenants", err)
}

// ArtifactClaim is what ClaimArtifacts got of the ids asked for.
type ArtifactClaim struct {
	// Token names this claim's write; ReleaseArtifacts takes it.
	Token int64
	// Fresh are the ids claimed now: nobody wrote them before.
	Fresh []string
	// Doubt are ids taken over from a write whose lease expired: it may
	// have reached VictoriaLogs before its writer died.
	Doubt []string
	// Busy counts the ids another live write holds now.
	Busy int
}

// ClaimArtifacts claims for org the ids not yet claimed (ts their
// timestamps in nanoseconds, parallel to ids, each id once), and takes
// over those whose write's lease expired, for one write of its own
// leased until lease from now. Ids stored already, or claimed by another
// org, are left out. The claim costs one row per new id (the id's own
// row, which reads by id and incidents need anyway) and one for the
// write: ReleaseArtifacts deletes that one row, and touches no id's.
func (s *Store) ClaimArtifacts(ctx context.Context, org string, ids []string, ts []int64, lease time.Duration) (*ArtifactClaim, error) {
	var b [8]byte
	rand.Read(b[:])
	c := &ArtifactClaim{Token: int64(binary.BigEndian.Uint64(b[:]) >> 1)}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		c.Fresh, c.Doubt, c.Busy = nil, nil, 0
		if _, err := tx.Exec(ctx, `INSERT INTO artifact_writes (token, lease_until) VALUES ($1, `+dbNanos+` + $2)`,
			c.Token, lease.Nanoseconds()); err != nil {
			return err
		}
		// Most batches are new ids only: COPY takes them for about half
		// the server's CPU of INSERT … ON CONFLICT (docs/benchmarks.md).
		// One id stored before fails it (unique violation), and the
		// batch is claimed id by id instead.
		if copied, err := copyClaims(ctx, tx, org, ids, ts, c.Token); err != nil {
			return err
		} else if copied {
			c.Fresh = ids
			return nil
		}
		tag, err := tx.Exec(ctx, `INSERT INTO artifact_ids (id, org_id, ts, writer)
			SELECT id, $1, ts, $4 FROM unnest($2::text[], $3::bigint[]) AS t(id, ts)
			ON CONFLICT (id) DO NOTHING`, org, ids, ts, c.Token)
		if err != nil {
			return err
		}
		if int(tag.RowsAffected()) == len(ids) {
			c.Fresh = ids
			return nil
		}
		// Some were there before: stored (no live write), another org's,
		// held by a live write, or left by a write whose lease ended.
		rows, err := tx.Query(ctx, `SELECT k.id, k.org_id = $1 AND w.token IS NOT NULL, COALESCE(w.lease_until < `+dbNanos+`, false)
			FROM artifact_ids k LEFT JOIN artifact_writes w ON w.token = k.writer
			WHERE k.id = ANY($2) AND k.writer IS DISTINCT FROM $3`, org, ids, c.Token)
		if err != nil {
			return err
		}
		old := map[string]bool{}
		var expired []string
		var id string
		var held, ended bool
		if _, err := pgx.ForEachRow(rows, []any{&id, &held, &ended}, func() error {
			old[id] = true
			if held && ended {
				expired = append(expired, id)
			} else if held {
				c.Busy++
			}
			return nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			if !old[id] {
				c.Fresh = append(c.Fresh, id)
			}
		}
		if len(expired) == 0 {
			return nil
		}
		// Take over what no other writer took over meanwhile.
		rows, err = tx.Query(ctx, `UPDATE artifact_ids k SET writer = $3 FROM artifact_writes w
			WHERE k.id = ANY($2) AND k.org_id = $1 AND w.token = k.writer AND w.lease_until < `+dbNanos+` RETURNING k.id`,
			org, expired, c.Token)
		if err != nil {
			return err
		}
		if c.Doubt, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		c.Busy += len(expired) - len(c.Doubt)
		return nil
	})
	if err != nil {
		return nil, wrap("ClaimArtifacts", err)
	}
	return c, nil
}

// copyClaims copies the rows of ids (each new, claimed by token) into
// artifact_ids within a savepoint of tx, and reports false, the savepoint
// rolled back, when one of them was there already.
func copyClaims(ctx context.Context, tx pgx.Tx, org string, ids []string, ts []int64, token int64) (bool, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, err
	}
	rows := pgx.CopyFromSlice(len(ids), func(i int) ([]any, error) { return []any{ids[i], org, ts[i], token}, nil })
	if _, err = sp.CopyFrom(ctx, pgx.Identifier{"artifact_ids"}, []string{"id", "org_id", "ts", "writer"}, rows); err == nil {
		return true, sp.Commit(ctx)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return false, sp.Rollback(ctx)
	}
	return false, err
}

// ReleaseArtifacts records that the ids of claim token are stored for
// good: it ends the write, one row whatever the number of ids. Ids
// another writer took over since (the lease expired) are its own.
func (s *Store) ReleaseArtifacts(ctx context.Context, token int64) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM artifact_writes WHERE token = $1`, token)
	return wrap("ReleaseArtifacts", err)
}

// ExpireArtifacts ends the lease of claim token at once: its write
// failed, perhaps after VictoriaLogs took some of it, so the next writer
// of its ids must take them over and look them up first.
func (s *Store) ExpireArtifacts(ctx context.Context, token int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE artifact_writes SET lease_until = 0 WHERE token = $1`, token)
	return wrap("ExpireArtifacts", err)
}

// ArtifactTimes returns the timestamps (nanoseconds) of the ids that name
// artifacts of org.
func (s *Store) ArtifactTimes(ctx context.Context, org string, ids []string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, ts FROM artifact_ids WHERE org_id = $1 AND id = ANY($2)`, org, ids)
	if err != nil {
		return nil, wrap("ArtifactTimes", err)
	}
	out := make(map[string]int64, len(ids))
	var id string
	var ts int64
	_, err = pgx.ForEachRow(rows, []any{&id, &ts}, func() error { out[id] = ts; return nil })
	return out, wrap("ArtifactTimes", err)
}

// IncidentArtifactRefs returns a page of the artifacts of incident id of
// org, newest first (ties by id, descending), as ids and timestamps
// (nanoseconds), and their total; ENOTFOUND if org has no incident id.
func (s *Store) IncidentArtifactRefs(ctx context.Context, org, id string, p vigil.Page) ([]string, []int64, int, error) {
	if err := incidentOf(ctx, s.pool, org, id); err != nil {
		return nil, nil, 0, wrap("IncidentArtifactRefs", err)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM incident_artifacts x JOIN artifact_ids k ON k.id = x.artifact_id
		WHERE x.incident_id = $1 AND k.org_id = $2`, id, org).Scan(&total); err != nil {
		return nil, nil, 0, wrap("IncidentArtifactRefs", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT k.id, k.ts FROM incident_artifacts x JOIN artifact_ids k ON k.id = x.artifact_id
		WHERE x.incident_id = $1 AND k.org_id = $2 ORDER BY k.ts DESC, k.id DESC LIMIT $3 OFFSET $4`,
		append([]any{id, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, nil, 0, wrap("IncidentArtifactRefs", err)
	}
	var ids []string
	var tss []int64
	var aid string
	var ts int64
	_, err = pgx.ForEachRow(rows, []any{&aid, &ts}, func() error { ids, tss = append(ids, aid), append(tss, ts); return nil })
	return ids, tss, total, wrap("IncidentArtifactRefs", err)
}

// PutArtifactEnrichment records enrichment found for artifact id of org
// after it was stored; ArtifactEnrichments reads it back.
func (s *Store) PutArtifactEnrichment(ctx context.Context, org, id string, enrichment json.RawMessage) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO artifact_enrichment (org_id, id, enrichment) SELECT $1, $2, $3
		WHERE EXISTS (SELECT 1 FROM artifact_ids WHERE org_id = $1 AND id = $2)
		ON CONFLICT (org_id, id) DO UPDATE SET enrichment = excluded.enrichment`, org, id, jsonOrNull(enrichment))
	return wrap("PutArtifactEnrichment", err)
}

// ArtifactEnrichments returns the enrichment recorded by
// PutArtifactEnrichment for those of ids that have one (null as nil).
func (s *Store) ArtifactEnrichments(ctx context.Context, org string, ids []string) (map[string]json.RawMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, enrichment FROM artifact_enrichment WHERE org_id = $1 AND id = ANY($2)`, org, ids)
	if err != nil {
		return nil, wrap("ArtifactEnrichments", err)
	}
	out := map[string]json.RawMessage{}
	var id string
	var e *string
	_, err = pgx.ForEachRow(rows, []any{&id, &e}, func() error {
		out[id] = nil
		if e != nil {
			out[id] = json.RawMessage(*e)
		}
		return nil
	})
	return out, wrap("ArtifactEnrichments", err)
}

// PutArtifactRaws keeps the raw lines of arts (of org) here, each once.
func (s *Store) PutArtifactRaws(ctx context.Context, org string, arts []*vigil.Artifact) error {
	ids, tss, raws := make([]string, len(arts)), make([]int64, len(arts)), make([][]byte, len(arts))
	for i, a := range arts {
		ids[i], tss[i], raws[i] = a.ID, nanos(a.Timestamp), []byte(a.Raw)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO artifact_raws (org_id, id, ts, raw)
		SELECT $1, id, ts, raw FROM unnest($2::text[], $3::bigint[], $4::bytea[]) AS t(id, ts, raw) ON CONFLICT DO NOTHING`,
		org, ids, tss, raws)
	return wrap("PutArtifactRaws", err)
}

// ArtifactRaws returns the raw lines PutArtifactRaws kept for those of
// ids of org, each cut to its first limit bytes when limit > 0, with its
// whole length.
func (s *Store) ArtifactRaws(ctx context.Context, org string, ids []string, limit int) (map[string]string, map[string]int, error) {
	cut := `raw`
	args := []any{org, ids}
	if limit > 0 {
		cut = `substring(raw from 1 for $3)`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, `+cut+`, octet_length(raw) FROM artifact_raws WHERE org_id = $1 AND id = ANY($2)`, args...)
	if err != nil {
		return nil, nil, wrap("ArtifactRaws", err)
	}
	raws, sizes := map[string]string{}, map[string]int{}
	var id string
	var raw []byte
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &raw, &n}, func() error { raws[id], sizes[id] = string(raw), n; return nil })
	return raws, sizes, wrap("ArtifactRaws", err)
}

// DropArtifactClaimsBefore applies retention to what this file keeps:
// the claims, late enrichment and long raw lines of artifacts stamped
// before t, in every org. It returns how many claims it deleted.
func (s *Store) DropArtifactClaimsBefore(ctx context.Context, t time.Time) (int, error) {
	cutoff := nanos(t)
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM artifact_enrichment e USING artifact_ids k
			WHERE k.id = e.id AND k.org_id = e.org_id AND k.ts < $1`, cutoff); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM artifact_raws WHERE ts < $1`, cutoff); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM artifact_ids WHERE ts < $1`, cutoff)
		n = tag.RowsAffected()
		return err
	})
	return int(n), wrap("DropArtifactClaimsBefore", err)
}

// ArtifactAddressKeysFrom returns the time (nanoseconds) from which every
// VictoriaLogs entry holds its address keys (migration 0024): 0 when all
// do.
func (s *Store) ArtifactAddressKeysFrom(ctx context.Context) (int64, error) {
	var from int64
	err := s.pool.QueryRow(ctx, `SELECT address_keys_from FROM artifact_account`).Scan(&from)
	if errNoRows(err) {
		return 0, nil
	}
	return from, wrap("ArtifactAddressKeysFrom", err)
}
