package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

// InsertArtifacts stores arts and indexes their raw text, all in one
// transaction. An ID already stored is skipped, so a redelivered batch
// creates nothing twice.
func (s *Store) InsertArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx *wtx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at, event, enrichment)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		fts, err := tx.PrepareContext(ctx, `INSERT INTO artifacts_fts (rowid, raw) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer fts.Close()
		for _, a := range arts {
			meta := a.Metadata
			if len(meta) == 0 {
				meta = json.RawMessage("{}")
			}
			res, err := ins.ExecContext(ctx, a.ID, org, a.Source, a.Raw, nanos(a.Timestamp), string(meta), nanos(a.CreatedAt),
				nullJSON(a.Event), nullJSON(a.Enrichment))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue // already stored
			}
			rowid, err := res.LastInsertId()
			if err != nil {
				return err
			}
			if _, err := fts.ExecContext(ctx, rowid, a.Raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.markInserted(org, arts)
	}
	return wrap("InsertArtifacts", err)
}

// nullJSON returns b as text, or NULL when empty.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// Matches of a full-text query are listed and counted in one of two ways:
// driven by the matches (read each matching row for its org, source and
// time, then sort) or by an index (walk the org's time index, newest
// first, testing each entry's rowid against the matches, without reading
// rows). The cheaper way is picked from sizes that cost little to learn,
// so that each query touches about denseMatches × (limit+offset), or
// windowScan, entries at most in the cases below; totals are exact in
// every case.
const (
	// denseMatches: matches that are 1 in denseMatches stored artifacts or
	// more are listed by walking the time index.
	denseMatches = 200
	// windowScan: a filter (org, source, time window) selecting fewer
	// artifacts than this, or a time window leaving fewer than this outside
	// it, is walked in the index to count the matches.
	windowScan = 50000
)

// searchPlan holds the thresholds above (tests change them to run every
// way on small data).
type searchPlan struct{ denseMatches, windowScan int }

// SearchArtifacts returns a page of org's artifacts matching f, newest
// first by timestamp, and the number of all matches.
//
// When the org is the only one with artifacts in the store, a query's
// matches in the full-text index are all its own: without filters the
// total is counted from the index alone, and with a wide time window as
// those matches less the ones outside it. Otherwise the filter's entries
// in the time index are walked when they are few, and only a query with
// many matches in a large filter reads every match.
func (s *Store) SearchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int, error) {
	q, err := search.Parse(f.Query)
	if err != nil {
		return nil, 0, err
	}
	// One snapshot for the counts and the page, on a connection of the
	// searches' own pool.
	tx, err := s.search.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, wrap("SearchArtifacts", err)
	}
	defer tx.Rollback()
	if s.searchHook != nil {
		s.searchHook(ctx)
	}
	base := []string{"a.org_id = ?"}
	baseArgs := []any{org}
	if f.Source != "" {
		base = append(base, "a.source = ?")
		baseArgs = append(baseArgs, f.Source)
	}
	where, args := rangeClause("a.ts", f.Range, slices.Clone(base), slices.Clone(baseArgs))
	timed := len(where) > len(base)
	cond := strings.Join(where, " AND ")
	match, not := q.FTS5()
	var expr string
	switch {
	case match != "" && not != "":
		expr = "(" + match + ") NOT (" + not + ")"
	case match != "":
		expr = match
	}
	count := func(cond string, args ...any) (n int, err error) {
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts a WHERE `+cond, args...).Scan(&n)
		return n, err
	}
	// bounded counts rows of cond, stopping at windowScan.
	bounded := func(cond string, args ...any) (n int, err error) {
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM artifacts a WHERE `+cond+` LIMIT ?)`,
			append(slices.Clone(args), s.plan.windowScan)...).Scan(&n)
		return n, err
	}
	const (
		walk  = " AND +a.rowid IN (SELECT rowid FROM artifacts_fts WHERE artifacts_fts MATCH ?)"
		drive = " AND a.rowid IN (SELECT rowid FROM artifacts_fts WHERE artifacts_fts MATCH ?)"
	)

	var total int
	page := cond
	switch {
	case match == "" && not != "":
		// Only exclusions: everything of the filter but the matches.
		page = cond + " AND a.rowid NOT IN (SELECT rowid FROM artifacts_fts WHERE artifacts_fts MATCH ?)"
		args = append(args, not)
		total, err = count(page, args...)
	case expr == "":
		total, err = count(cond, args...)
	default:
		var matches, stored int
		var alone bool
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts_fts WHERE artifacts_fts MATCH ?`, expr).Scan(&matches)
		if err == nil {
			err = tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(rowid), 0) FROM artifacts`).Scan(&stored)
		}
		if err == nil {
			err = tx.QueryRowContext(ctx, `SELECT NOT (EXISTS (SELECT 1 FROM artifacts WHERE org_id < ?1)
				OR EXISTS (SELECT 1 FROM artifacts WHERE org_id > ?1))`, org).Scan(&alone)
		}
		if err != nil {
			break
		}
		page = cond + drive
		if matches*s.plan.denseMatches >= stored {
			page = cond + walk
		}
		args = append(args, expr)
		if alone && f.Source == "" && !timed {
			total = matches
			break
		}
		filterArgs := args[:len(args)-1]
		var n int
		if n, err = bounded(cond, filterArgs...); err != nil {
			break
		}
		if n < s.plan.windowScan {
			page = cond + walk
			total, err = count(cond+walk, args...)
			break
		}
		if alone && f.Source == "" {
			// A wide window: the matches less those outside it, where
			// each side (before its start, from its end on) is an index
			// range of its own.
			sides := outsideWindow(f.Range, base, baseArgs)
			outside := 0
			for _, side := range sides {
				if n, err = bounded(side.cond, side.args...); err != nil {
					break
				}
				outside += n
			}
			if err == nil && outside < s.plan.windowScan {
				total = matches
				for _, side := range sides {
					if n, err = count(side.cond+walk, append(slices.Clone(side.args), expr)...); err != nil {
						break
					}
					total -= n
				}
				break
			}
			if err != nil {
				break
			}
		}
		total, err = count(cond+drive, args...)
	}
	if err != nil {
		return nil, 0, wrap("SearchArtifacts", err)
	}
	cols, scan := artifactCols, scanArtifact
	if f.Preview {
		cols, scan = previewCols, scanPreview
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+cols+` FROM artifacts a WHERE `+page+` ORDER BY a.ts DESC, a.id DESC LIMIT ? OFFSET ?`, append(args, pageArgs(f.Page)...)...)
	if err != nil {
		return nil, 0, wrap("SearchArtifacts", err)
	}
	defer rows.Close()
	out := []*vigil.Artifact{}
	for rows.Next() {
		a, err := scan(rows)
		if err != nil {
			return nil, 0, wrap("SearchArtifacts", err)
		}
		out = append(out, a)
	}
	return out, total, wrap("SearchArtifacts", rows.Err())
}

// artifactCols are the columns scanArtifact reads, of artifacts a.
const artifactCols = `a.id, a.org_id, a.source, a.raw, a.ts, a.metadata, a.created_at, a.event, a.enrichment`

// previewCols are the columns scanPreview reads: those of artifactCols
// with raw cut (in bytes), metadata and event left out when larger than
// their previews, then the size of raw and whether the others were left
// out. The cutting happens in SQLite, so that a page of large artifacts
// never reaches Go whole.
var previewCols = fmt.Sprintf(`a.id, a.org_id, a.source, CAST(substr(CAST(a.raw AS BLOB), 1, %[1]d) AS TEXT), a.ts,
	CASE WHEN octet_length(a.metadata) <= %[2]d THEN a.metadata ELSE '{}' END, a.created_at,
	CASE WHEN octet_length(a.event) <= %[3]d THEN a.event END, a.enrichment,
	octet_length(a.raw), octet_length(a.metadata) > %[2]d, COALESCE(octet_length(a.event) > %[3]d, 0)`,
	vigil.PreviewRawBytes, vigil.PreviewMetadataBytes, vigil.PreviewEventBytes)

// scanPreview reads a row of previewCols.
func scanPreview(row interface{ Scan(...any) error }) (*vigil.Artifact, error) {
	var a vigil.Artifact
	var ts, created int64
	var meta string
	var event, enrich sql.NullString
	if err := row.Scan(&a.ID, &a.OrgID, &a.Source, &a.Raw, &ts, &meta, &created, &event, &enrich,
		&a.RawBytes, &a.MetadataTruncated, &a.EventTruncated); err != nil {
		return nil, err
	}
	a.Timestamp, a.CreatedAt = fromNanos(ts), fromNanos(created)
	a.Metadata = json.RawMessage(meta)
	if event.Valid {
		a.Event = json.RawMessage(event.String)
	}
	if enrich.Valid {
		a.Enrichment = json.RawMessage(enrich.String)
	}
	if a.RawTruncated = a.RawBytes > vigil.PreviewRawBytes; a.RawTruncated {
		a.Raw = vigil.TrimPartialRune(a.Raw)
	} else {
		a.RawBytes = 0
	}
	return &a, nil
}

func scanArtifact(row interface{ Scan(...any) error }) (*vigil.Artifact, error) {
	var a vigil.Artifact
	var ts, created int64
	var meta string
	var event, enrich sql.NullString
	if err := row.Scan(&a.ID, &a.OrgID, &a.Source, &a.Raw, &ts, &meta, &created, &event, &enrich); err != nil {
		return nil, err
	}
	a.Timestamp, a.CreatedAt = fromNanos(ts), fromNanos(created)
	a.Metadata = json.RawMessage(meta)
	if event.Valid {
		a.Event = json.RawMessage(event.String)
	}
	if enrich.Valid {
		a.Enrichment = json.RawMessage(enrich.String)
	}
	return &a, nil
}

// side is one part of the outside of a time window: a condition on
// artifacts a and its arguments.
type side struct {
	cond string
	args []any
}

// outsideWindow returns the parts of org's artifacts (base and its args) that lie
// outside the window r: before its start, and from its end on.
func outsideWindow(r vigil.TimeRange, base []string, args []any) []side {
	var out []side
	if !r.Start.IsZero() {
		out = append(out, side{strings.Join(append(slices.Clone(base), "a.ts < ?"), " AND "), append(slices.Clone(args), nanos(r.Start))})
	}
	if !r.End.IsZero() {
		out = append(out, side{strings.Join(append(slices.Clone(base), "a.ts >= ?"), " AND "), append(slices.Clone(args), nanos(r.End))})
	}
	return out
}

// missingIDs returns those of ids that name no row of table in org.
func missingIDs(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, table, org string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found := make(map[string]bool, len(ids))
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := []any{org}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := q.QueryContext(ctx, `SELECT id FROM `+table+` WHERE org_id = ? AND id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			found[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// DropArtifactsBefore deletes every artifact (of every org) whose
// timestamp is before t, with its full-text entry, in chunks so that the
// writer is never held for long. It returns how many were deleted.
func (s *Store) DropArtifactsBefore(ctx context.Context, t time.Time) (int, error) {
	s.tail.forgetBefore(t) // its artifact may go: no evidence of a lost WAL then
	total := 0
	for {
		var n int64
		err := s.tx(ctx, func(tx *wtx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS doomed (rowid INTEGER PRIMARY KEY)`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM doomed`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO doomed SELECT rowid FROM artifacts WHERE ts < ? LIMIT 5000`, nanos(t)); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO artifacts_fts (artifacts_fts, rowid, raw)
				SELECT 'delete', a.rowid, a.raw FROM artifacts a JOIN doomed d ON d.rowid = a.rowid`); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE rowid IN (SELECT rowid FROM doomed)`)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			return nil
		})
		if err != nil {
			return total, wrap("DropArtifactsBefore", err)
		}
		total += int(n)
		if n == 0 {
			return total, nil
		}
	}
}

// GetArtifacts returns the artifacts of org named by ids, in the order of
// ids, each once; ids naming no artifact of org are skipped.
func (s *Store) GetArtifacts(ctx context.Context, org string, ids []string) ([]*vigil.Artifact, error) {
	ids = vigil.Dedupe(ids)
	byID := make(map[string]*vigil.Artifact, len(ids))
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := []any{org}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT `+artifactCols+` FROM artifacts a
			WHERE a.org_id = ? AND a.id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, wrap("GetArtifacts", err)
		}
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
	}
	return vigil.InIDOrder(ids, byID), nil
}
