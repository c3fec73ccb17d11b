package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/search"
)

// Bounds of one INSERT statement: a batch of 1000 lines is one statement
// (one round trip, its columns sent as arrays), a batch of 1 MiB lines is
// cut into a few.
const (
	insertChunkRows  = 1000
	insertChunkBytes = 16 << 20
)

// insertArtifactsSQL inserts a chunk of artifacts given as parallel arrays.
// fresh claims each id in artifact_ids; only the rows whose claim
// succeeded reach artifacts, so an id already stored, in whatever
// partition, is left as it is (see the schema for why a side table).
const insertArtifactsSQL = `WITH input AS (
	SELECT * FROM unnest($2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[])
		AS t(id, source, raw, ts, metadata, created_at, event, search, enrichment)
), fresh AS (
	INSERT INTO artifact_ids (id, org_id, ts) SELECT id, $1, ts FROM input
	ON CONFLICT (id) DO NOTHING RETURNING id
)
INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at, event, search, enrichment)
SELECT i.id, $1, i.source, i.raw, i.ts, i.metadata::json, i.created_at, i.event::json, i.search::tsvector, i.enrichment::json
FROM input i JOIN fresh f ON f.id = i.id`

// InsertArtifacts stores arts and indexes their raw text, all in one
// transaction. An ID already stored is skipped, so a redelivered batch
// creates nothing twice. The first occurrence of an ID repeated within arts
// wins, as in the SQLite store.
func (s *Store) InsertArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	chunks, months := columnsOf(arts)
	if err := s.ensurePartitions(ctx, months); err != nil {
		return wrap("InsertArtifacts", err)
	}
	stored := 0
	err := s.tx(ctx, func(tx pgx.Tx) error {
		stored = 0
		for _, c := range chunks {
			tag, err := tx.Exec(ctx, insertArtifactsSQL, org, c.ids, c.sources, c.raws, c.tss, c.metas, c.created, c.events, c.vectors, c.enrichments)
			if err != nil {
				return err
			}
			stored += int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return wrap("InsertArtifacts", err)
	}
	s.stored(stored)
	return nil
}

// artifactColumns is a chunk of artifacts as the columns of their rows.
type artifactColumns struct {
	ids, sources, metas, vectors []string
	raws                         [][]byte
	tss, created                 []int64
	events, enrichments          []*string
}

// columnsOf returns arts, each ID once (its first occurrence), as chunks
// of at most insertChunkRows rows and about insertChunkBytes of raw text,
// and the months their timestamps fall in. Tokenizing is the costly part;
// it is done here, outside any transaction.
func columnsOf(arts []*vigil.Artifact) ([]*artifactColumns, map[int]bool) {
	seen := make(map[string]bool, len(arts))
	uniq := make([]*vigil.Artifact, 0, len(arts))
	months := map[int]bool{}
	for _, a := range arts {
		if seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		uniq = append(uniq, a)
		if m, ok := monthOf(a.Timestamp.UnixNano()); ok {
			months[m] = true
		}
	}
	var chunks []*artifactColumns
	for start := 0; start < len(uniq); {
		c := &artifactColumns{}
		size := 0
		end := start
		for end < len(uniq) && end-start < insertChunkRows && (end == start || size+len(uniq[end].Raw) <= insertChunkBytes) {
			a := uniq[end]
			meta := string(a.Metadata)
			if len(a.Metadata) == 0 {
				meta = "{}"
			}
			c.ids = append(c.ids, a.ID)
			c.sources = append(c.sources, a.Source)
			c.raws = append(c.raws, []byte(a.Raw))
			c.tss = append(c.tss, nanos(a.Timestamp))
			c.metas = append(c.metas, meta)
			c.created = append(c.created, nanos(a.CreatedAt))
			c.events = append(c.events, jsonOrNull(a.Event))
			c.enrichments = append(c.enrichments, jsonOrNull(a.Enrichment))
			c.vectors = append(c.vectors, search.TSVector(parse.SearchText(a.Raw)))
			size += len(a.Raw)
			end++
		}
		chunks = append(chunks, c)
		start = end
	}
	return chunks, months
}

// Monthly partitions exist for timestamps in [1900, 2200), the range the
// API accepts; anything else lands in the DEFAULT partition.
var (
	minPartitioned = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	maxPartitioned = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
)

// monthOf returns the month (year*100 + month) of a timestamp in
// nanoseconds, and whether it has a monthly partition.
func monthOf(ts int64) (int, bool) {
	if ts < minPartitioned || ts >= maxPartitioned {
		return 0, false
	}
	t := fromNanos(ts)
	return t.Year()*100 + int(t.Month()), true
}

// monthBounds returns the half-open range [lo, hi) of month m in nanoseconds.
func monthBounds(m int) (lo, hi int64) {
	start := time.Date(m/100, time.Month(m%100), 1, 0, 0, 0, 0, time.UTC)
	return start.UnixNano(), start.AddDate(0, 1, 0).UnixNano()
}

func partitionName(m int) string { return fmt.Sprintf("artifacts_p%06d", m) }

var partitionNameRE = regexp.MustCompile(`^artifacts_p(\d{6})$`)

// ensurePartitions creates the monthly partitions of months that this
// process has not seen yet.
func (s *Store) ensurePartitions(ctx context.Context, months map[int]bool) error {
	var missing []int
	s.mu.Lock()
	for m := range months {
		if !s.months[m] {
			missing = append(missing, m)
		}
	}
	s.mu.Unlock()
	for _, m := range missing {
		if err := s.createPartition(ctx, m); err != nil {
			return err
		}
		s.mu.Lock()
		s.months[m] = true
		s.mu.Unlock()
	}
	return nil
}

// createPartition creates the partition of month m unless it exists. It
// runs in its own short transaction, before the insert that needs it, and
// under an advisory lock so that processes creating the same month do not
// race. The table is created alone and then attached, which locks the
// parent in SHARE UPDATE EXCLUSIVE mode only, so inserts and searches go on
// (only the DEFAULT partition, normally empty, is locked while it is
// checked for rows of the new month).
//
// If the DEFAULT partition already holds rows of that month (the month was
// dropped by retention while a late artifact of it was being stored), the
// partition cannot be attached; the month's rows then keep going to
// DEFAULT, where searches and retention still find them.
func (s *Store) createPartition(ctx context.Context, m int) error {
	name := partitionName(m)
	lo, hi := monthBounds(m)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLockKey)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		ident := pgx.Identifier{name}.Sanitize()
		if _, err := tx.Exec(ctx, `CREATE TABLE `+ident+` (LIKE artifacts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
			return err
		}
		// The bounds are integers computed here, not user input.
		_, err := tx.Exec(ctx, `ALTER TABLE artifacts ATTACH PARTITION `+ident+
			` FOR VALUES FROM (`+strconv.FormatInt(lo, 10)+`) TO (`+strconv.FormatInt(hi, 10)+`)`)
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" { // check_violation: DEFAULT holds rows of m
		return nil
	}
	return err
}

// DropArtifactsBefore applies retention: it drops every monthly partition
// of artifacts that lies entirely before t and returns how many it
// dropped. Rows of the DEFAULT partition are deleted month by month on the
// same terms (those before the start of t's month, or before t when t
// starts a month). Observations and incidents keep naming the artifacts
// they were built from. Retention spans every org: it is an operator's
// task, not a request of one tenant. Dropping a partition locks the
// artifacts table for a moment (ACCESS EXCLUSIVE), so run it off-peak,
// once a day rather than once a minute.
func (s *Store) DropArtifactsBefore(ctx context.Context, t time.Time) (int, error) {
	cutoff := t.UnixNano()
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'artifacts'::regclass ORDER BY c.relname`)
	if err != nil {
		return 0, wrap("DropArtifactsBefore", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, wrap("DropArtifactsBefore", err)
	}
	dropped := 0
	for _, name := range names {
		sub := partitionNameRE.FindStringSubmatch(name)
		if sub == nil {
			continue
		}
		m, _ := strconv.Atoi(sub[1])
		lo, hi := monthBounds(m)
		if hi > cutoff {
			continue
		}
		err := s.tx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLockKey)); err != nil {
				return err
			}
			// Drop first: it waits for inserts into the partition in
			// flight, whose claims the delete then sees.
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM artifact_ids WHERE ts >= $1 AND ts < $2`, lo, hi)
			return err
		})
		if err != nil {
			return dropped, wrap("DropArtifactsBefore", err)
		}
		s.mu.Lock()
		delete(s.months, m)
		s.mu.Unlock()
		dropped++
	}

	// DEFAULT: the same month granularity, row by row.
	ct := fromNanos(cutoff)
	monthStart := time.Date(ct.Year(), ct.Month(), 1, 0, 0, 0, 0, time.UTC).UnixNano()
	_, err = s.pool.Exec(ctx, `WITH gone AS (DELETE FROM artifacts_default WHERE ts < $1 RETURNING id)
		DELETE FROM artifact_ids WHERE id IN (SELECT id FROM gone)`, monthStart)
	return dropped, wrap("DropArtifactsBefore", err)
}

const artifactCols = `id, org_id, source, raw, ts, metadata::text, created_at, event::text, enrichment::text`

// previewCols are the columns scanPreview reads: those of artifactCols
// with raw cut, metadata and event left out when larger than their
// previews, then the size of raw and whether the others were left out.
// The cutting happens in the server, so that a page of large artifacts
// never reaches Go whole.
var previewCols = fmt.Sprintf(`id, org_id, source, substring(raw from 1 for %[1]d), ts,
	CASE WHEN octet_length(metadata::text) <= %[2]d THEN metadata::text ELSE '{}' END, created_at,
	CASE WHEN octet_length(event::text) <= %[3]d THEN event::text END, enrichment::text,
	octet_length(raw), octet_length(metadata::text) > %[2]d, COALESCE(octet_length(event::text) > %[3]d, false)`,
	vigil.PreviewRawBytes, vigil.PreviewMetadataBytes, vigil.PreviewEventBytes)

// scanPreview reads a row of previewCols.
func scanPreview(row pgx.Row) (*vigil.Artifact, error) {
	var a vigil.Artifact
	var ts, created int64
	var raw []byte
	var meta string
	var event, enrich *string
	if err := row.Scan(&a.ID, &a.OrgID, &a.Source, &raw, &ts, &meta, &created, &event, &enrich,
		&a.RawBytes, &a.MetadataTruncated, &a.EventTruncated); err != nil {
		return nil, err
	}
	a.Raw = string(raw)
	a.Timestamp, a.CreatedAt = fromNanos(ts), fromNanos(created)
	a.Metadata = json.RawMessage(meta)
	if event != nil {
		a.Event = json.RawMessage(*event)
	}
	if enrich != nil {
		a.Enrichment = json.RawMessage(*enrich)
	}
	if a.RawTruncated = a.RawBytes > vigil.PreviewRawBytes; a.RawTruncated {
		a.Raw = vigil.TrimPartialRune(a.Raw)
	} else {
		a.RawBytes = 0
	}
	return &a, nil
}

// scanArtifact reads a row of artifactCols.
func scanArtifact(row pgx.Row) (*vigil.Artifact, error) {
	var a vigil.Artifact
	var ts, created int64
	var raw []byte
	var meta string
	var event, enrich *string
	if err := row.Scan(&a.ID, &a.OrgID, &a.Source, &raw, &ts, &meta, &created, &event, &enrich); err != nil {
		return nil, err
	}
	a.Raw = string(raw)
	a.Timestamp, a.CreatedAt = fromNanos(ts), fromNanos(created)
	a.Metadata = json.RawMessage(meta)
	if event != nil {
		a.Event = json.RawMessage(*event)
	}
	if enrich != nil {
		a.Enrichment = json.RawMessage(*enrich)
	}
	return &a, nil
}

// GetArtifacts returns the artifacts of org named by ids, in the order of
// ids, each once; ids naming no artifact of org are skipped. artifact_ids
// gives each one's ts, so that the join reaches its partition through the
// (org_id, ts, id) index.
func (s *Store) GetArtifacts(ctx context.Context, org string, ids []string) ([]*vigil.Artifact, error) {
	ids = vigil.Dedupe(ids)
	if len(ids) == 0 {
		return []*vigil.Artifact{}, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT a.id, a.org_id, a.source, a.raw, a.ts, a.metadata::text, a.created_at, a.event::text, a.enrichment::text
		FROM artifact_ids k JOIN artifacts a ON a.org_id = k.org_id AND a.ts = k.ts AND a.id = k.id
		WHERE k.org_id = $1 AND k.id = ANY($2)`, org, ids)
	if err != nil {
		return nil, wrap("GetArtifacts", err)
	}
	byID := make(map[string]*vigil.Artifact, len(ids))
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			rows.Close()
			return nil, wrap("GetArtifacts", err)
		}
		byID[a.ID] = a
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap("GetArtifacts", err)
	}
	return vigil.InIDOrder(ids, byID), nil
}

// missingIDs returns those of ids that name no row of org in table
// (nodes, or artifact_ids for artifacts).
func missingIDs(ctx context.Context, q querier, table, org string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT id FROM `+table+` WHERE org_id = $1 AND id = ANY($2)`, org, ids)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(found))
	for _, id := range found {
		have[id] = true
	}
	var missing []string
	for _, id := range ids {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}
