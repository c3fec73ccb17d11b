package sqlite

import (
	"context"
	"encoding/hex"
	"database/sql"
	"encoding/json"
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
	return wrap("InsertArtifacts", s.tx(ctx, func(tx *wtx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO artifacts (id, org_id, source, raw, ts, metadata, created_at, event, enrichment)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		fts, err := tx.PrepareContext(ctx, `INSERT INTO artifacts_fts (rowid, org_token, raw) VALUES (?, ?, ?)`)
		if err != nil {
			return err
		}
		defer fts.Close()
		tok := orgToken(org)
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
			if _, err := fts.ExecContext(ctx, rowid, tok, a.Raw); err != nil {
				return err
			}
		}
		return nil
	}))
}

// nullJSON returns b as text, or NULL when empty.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// SetArtifactEvent records the normalized event of a parsed artifact.
func (s *Store) SetArtifactEvent(ctx context.Context, org, id string, event json.RawMessage) error {
	_, err := s.w.ExecContext(ctx, `UPDATE artifacts SET event = ? WHERE org_id = ? AND id = ?`, string(event), org, id)
	return wrap("SetArtifactEvent", err)
}

// orgToken is the org's single full-text token, the artifacts table's
// generated org_token column ('o' || lower(hex(org_id))).
func orgToken(org string) string {
	return "o" + hex.EncodeToString([]byte(org))
}

// denseMatches is the share of stored artifacts (1 in denseMatches or
// more) from which a query's matches are listed by walking the time index
// newest first, testing each entry against the matches, rather than by
// reading every match and sorting: either way about denseMatches × limit
// entries at most are touched.
const denseMatches = 200

// SearchArtifacts returns a page of org's artifacts matching f, newest
// first by timestamp, and the number of all matches.
//
// A full-text query is scoped to the org inside the index (the org_token
// column), so that without source or time filters the total is counted
// from the index alone. The page then comes either from the matches
// (sparse: read each, sort by time) or from the time index walked newest
// first (dense: stops after limit+offset matches).
func (s *Store) SearchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int, error) {
	q, err := search.Parse(f.Query)
	if err != nil {
		return nil, 0, err
	}
	where := []string{"a.org_id = ?"}
	args := []any{org}
	if f.Source != "" {
		where = append(where, "a.source = ?")
		args = append(args, f.Source)
	}
	where, args = rangeClause("a.ts", f.Range, where, args)
	filtered := len(where) > 1
	match, not := q.FTS5()
	scope := "org_token : " + orgToken(org)
	var expr string
	switch {
	case match != "" && not != "":
		expr = scope + " AND (raw : (" + match + ") NOT raw : (" + not + "))"
	case match != "":
		expr = scope + " AND raw : (" + match + ")"
	case not != "":
		expr = scope + " NOT raw : (" + not + ")"
	}

	var total int
	if expr != "" && !filtered {
		err = s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts_fts WHERE artifacts_fts MATCH ?`, expr).Scan(&total)
	}
	// rowid IN (…) uses the matches to find rows; +rowid IN (…) only tests
	// them, so that the time index drives the walk.
	in := "a.rowid IN"
	if expr != "" {
		if !filtered {
			var stored int
			if err == nil {
				err = s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(rowid), 0) FROM artifacts`).Scan(&stored)
			}
			if total*denseMatches >= stored {
				in = "+a.rowid IN"
			}
		}
		where = append(where, in+" (SELECT rowid FROM artifacts_fts WHERE artifacts_fts MATCH ?)")
		args = append(args, expr)
	}
	if err != nil {
		return nil, 0, wrap("SearchArtifacts", err)
	}
	cond := strings.Join(where, " AND ")
	if expr == "" || filtered {
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts a WHERE `+cond, args...).Scan(&total); err != nil {
			return nil, 0, wrap("SearchArtifacts", err)
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT a.id, a.org_id, a.source, a.raw, a.ts, a.metadata, a.created_at, a.event, a.enrichment
		FROM artifacts a WHERE `+cond+` ORDER BY a.ts DESC, a.id DESC LIMIT ? OFFSET ?`, append(args, pageArgs(f.Page)...)...)
	if err != nil {
		return nil, 0, wrap("SearchArtifacts", err)
	}
	defer rows.Close()
	out := []*vigil.Artifact{}
	for rows.Next() {
		var a vigil.Artifact
		var ts, created int64
		var meta string
		var event, enrich sql.NullString
		if err := rows.Scan(&a.ID, &a.OrgID, &a.Source, &a.Raw, &ts, &meta, &created, &event, &enrich); err != nil {
			return nil, 0, wrap("SearchArtifacts", err)
		}
		a.Timestamp, a.CreatedAt = fromNanos(ts), fromNanos(created)
		a.Metadata = json.RawMessage(meta)
		if event.Valid {
			a.Event = json.RawMessage(event.String)
		}
		if enrich.Valid {
			a.Enrichment = json.RawMessage(enrich.String)
		}
		out = append(out, &a)
	}
	return out, total, wrap("SearchArtifacts", rows.Err())
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
			if _, err := tx.ExecContext(ctx, `INSERT INTO artifacts_fts (artifacts_fts, rowid, org_token, raw)
				SELECT 'delete', a.rowid, a.org_token, a.raw FROM artifacts a JOIN doomed d ON d.rowid = a.rowid`); err != nil {
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
