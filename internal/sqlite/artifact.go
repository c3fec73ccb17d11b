package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// InsertArtifacts stores arts and indexes their raw text, all in one
// transaction. An ID already stored is skipped, so a redelivered batch
// creates nothing twice.
func (s *Store) InsertArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	// The lines are compressed before the writer is taken: the workers
	// compress theirs at once, and the writer, which every worker waits
	// for, only writes.
	var train []dictKey // sources that just reached trainAfter lines without a dictionary
	raws := make([]any, len(arts))
	found := make([]string, len(arts)) // what search finds of each (parse.SearchText), made before the writer is taken too
	zbuf := make([]byte, 0, 128*len(arts))
	for i, a := range arts {
		var full bool
		raws[i], zbuf, full = s.raw.encode(dictKey{org, a.Source}, a.Raw, zbuf)
		if full {
			train = append(train, dictKey{org, a.Source})
		}
		found[i] = parse.SearchText(a.Raw)
	}
	// So are the address keys, and the text of each full-text entry.
	prefixes, err := s.prefixesOf(ctx, org, arts)
	if err != nil {
		return wrap("InsertArtifacts", err)
	}
	lines, texts := batchTexts(found, func(i int) string { return prefixes[arts[i].Source] })
	err = s.tx(ctx, func(tx *wtx) error {
		w := artifactWriter{store: s, tx: tx, org: org, arts: arts, raws: raws, rowids: make([]int64, len(arts)), texts: texts, prefixes: prefixes, wholeBelow: s.wholeBelow}
		if err := w.insert(ctx); err != nil {
			return err
		}
		rowids := w.rowids
		var keys addrRows
		for i, rowid := range rowids {
			switch {
			case rowid == 0: // already stored
			case rowid < s.wholeBelow: // indexed whole (migration 0035)
				keys.add(rowid, arts[i].Raw)
			default:
				keys.addKeys(rowid, lines.of(i))
			}
		}
		if err := keys.write(ctx, tx, w.parts, false); err != nil {
			return err
		}
		if err := recordSpans(ctx, tx, org, arts, rowids); err != nil {
			return err
		}
		return recordCounts(ctx, tx, org, arts, rowids)
	})
	if err == nil {
		s.merge.poke()
		s.markInserted(org, arts)
		for _, k := range train {
			s.train(ctx, k)
		}
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

// artifactCols are the columns scanArtifact reads, of artifacts a.
const artifactCols = `a.id, a.org_id, a.source, a.raw, a.ts, a.metadata, a.created_at, a.event, a.enrichment`

// previewCols are the columns scanPreview reads: those of artifactCols
// with raw cut (in bytes), metadata and event left out when larger than
// their previews, then the size of raw and whether the others were left
// out. The cutting happens in SQLite, so that a page of large artifacts
// never reaches Go whole, except for a compressed raw line (rawzstd.go),
// which reaches Go compressed, its size -1, and is cut once decompressed.
var previewCols = fmt.Sprintf(`a.id, a.org_id, a.source,
	CASE WHEN typeof(a.raw) = 'blob' THEN a.raw ELSE CAST(substr(CAST(a.raw AS BLOB), 1, %[1]d) AS TEXT) END, a.ts,
	CASE WHEN octet_length(a.metadata) <= %[2]d THEN a.metadata ELSE '{}' END, a.created_at,
	CASE WHEN octet_length(a.event) <= %[3]d THEN a.event END, a.enrichment,
	CASE WHEN typeof(a.raw) = 'blob' THEN -1 ELSE octet_length(a.raw) END, octet_length(a.metadata) > %[2]d, COALESCE(octet_length(a.event) > %[3]d, 0)`,
	vigil.PreviewRawBytes, vigil.PreviewMetadataBytes, vigil.PreviewEventBytes)

// scanPreview reads a row of previewCols.
func (s *Store) scanPreview(row interface{ Scan(...any) error }) (*vigil.Artifact, error) {
	var a vigil.Artifact
	var ts, created int64
	var meta string
	var raw rawValue
	var event, enrich sql.NullString
	if err := row.Scan(&a.ID, &a.OrgID, &a.Source, &raw, &ts, &meta, &created, &event, &enrich,
		&a.RawBytes, &a.MetadataTruncated, &a.EventTruncated); err != nil {
		return nil, err
	}
	var err error
	if a.Raw, err = s.raw.decode(raw.v); err != nil {
		return nil, err
	}
	if a.RawBytes < 0 {
		a.RawBytes = len(a.Raw)
		a.Raw = a.Raw[:min(len(a.Raw), vigil.PreviewRawBytes)]
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

func (s *Store) scanArtifact(row interface{ Scan(...any) error }) (*vigil.Artifact, error) {
	var a vigil.Artifact
	var ts, created int64
	var meta string
	var raw rawValue
	var event, enrich sql.NullString
	if err := row.Scan(&a.ID, &a.OrgID, &a.Source, &raw, &ts, &meta, &created, &event, &enrich); err != nil {
		return nil, err
	}
	var err error
	if a.Raw, err = s.raw.decode(raw.v); err != nil {
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

// missingIDs returns those of ids that name no row of table in org. The
// rows are found by id ("+org_id" keeps SQLite off an index of the org's
// rows, which it would walk: nodes_org_created).
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
		rows, err := q.QueryContext(ctx, missingIDsSQL(table, len(chunk)), args...)
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

// missingIDsSQL returns the query of those of n ids (the arguments after
// the org) that table has in the org.
func missingIDsSQL(table string, n int) string {
	return `SELECT id FROM ` + table + ` WHERE +org_id = ? AND id IN (` + placeholders(n) + `)`
}

// DropArtifactsBefore deletes every artifact (of every org) whose
// timestamp is before t, with its full-text entry, in chunks so that the
// writer is never held for long. It returns how many were deleted.
func (s *Store) DropArtifactsBefore(ctx context.Context, t time.Time) (int, error) {
	s.tail.forgetBefore(t) // its artifact may go: no evidence of a lost WAL then
	if err := s.tx(ctx, func(tx *wtx) error { return s.dropParts(ctx, tx, t) }); err != nil {
		return 0, wrap("DropArtifactsBefore", err)
	}
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
			if err := s.unindex(ctx, tx); err != nil {
				return err
			}
			if err := dropCounts(ctx, tx); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE rowid IN (SELECT rowid FROM doomed)`)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			return dropSpansBefore(ctx, tx, t)
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
			a, err := s.scanArtifact(rows)
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

// searchText returns the text the full-text index and the address keys
// took for the artifact rowid whose line is raw: parse.SearchText of it,
// or the line whole when rowid is below wholeBelow (migration 0035: it was
// indexed whole, or stored where such an artifact was).
func (s *Store) searchText(rowid int64, raw string) string {
	if rowid < s.wholeBelow {
		return raw
	}
	return parse.SearchText(raw)
}

// loadWholeBelow reads wholeBelow (migration 0035).
func (s *Store) loadWholeBelow(ctx context.Context) error {
	err := s.w.QueryRowContext(ctx, `SELECT below_rowid FROM search_text_whole`).Scan(&s.wholeBelow)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// unindex removes the artifacts of the temporary table doomed from the
// full-text index, which must be given each one's text as indexed
// (indexText): its searchText, of the line decompressed when stored
// compressed, with its org and source's prefix.
func (s *Store) unindex(ctx context.Context, tx *wtx) error {
	ps, err := readParts(ctx, tx)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT a.rowid, a.raw, a.org_id, a.source FROM artifacts a JOIN doomed d ON d.rowid = a.rowid`)
	if err != nil {
		return err
	}
	type doomed struct {
		rowid            int64
		raw, org, source string
	}
	var all []doomed
	for rows.Next() {
		var d doomed
		var raw rawValue
		if err := rows.Scan(&d.rowid, &raw, &d.org, &d.source); err != nil {
			rows.Close()
			return err
		}
		if ps[ps.of(d.rowid)].dropped {
			continue // its part was emptied whole (dropParts)
		}
		if d.raw, err = s.raw.decode(raw.v); err != nil {
			rows.Close()
			return err
		}
		d.raw = s.searchText(d.rowid, d.raw)
		all = append(all, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// The address keys likewise, where the artifact has some (Open has
	// indexed those of every artifact stored before migration 0033).
	var keys addrRows
	for _, d := range all {
		p, ok := s.prefixes.get(d.org, d.source)
		if !ok {
			return fmt.Errorf("artifact %d: no id of its org and source in fts_sources", d.rowid)
		}
		t := ps[ps.of(d.rowid)].table(ftsBase)
		del, err := tx.stmt(ctx, `INSERT INTO `+t+` (`+t+`, rowid, raw) VALUES ('delete', ?, ?)`)
		if err != nil {
			return err
		}
		if _, err := del.ExecContext(ctx, d.rowid, indexText(d.raw, p)); err != nil {
			return err
		}
		keys.add(d.rowid, d.raw)
	}
	return keys.write(ctx, tx, ps, true)
}
