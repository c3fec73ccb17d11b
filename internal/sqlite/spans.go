package sqlite

import (
	"context"
	"database/sql"
	"math"
	"time"

	"github.com/vigil-soc/vigil"
)

// The rowids of each org's artifacts per spanBucket of their timestamps
// are kept in artifact_spans (migration 0019): a search bounds the rowids
// of its full-text matches to those its time window can hold, so that
// FTS5 reads only that part of each term's doclist (it seeks to a rowid
// bound) and the matches SQLite gathers for the walk or the count are
// those of the window, not those of the whole store.
const spanBucket = 10 * time.Minute

// bucketOf is the span bucket of a timestamp in nanoseconds, as the
// migration computes it (integer division, truncating toward zero: the
// buckets are monotonic in ts, which is all a range needs).
func bucketOf(ns int64) int64 { return ns / int64(spanBucket) }

// recordSpans widens the spans of the buckets of the artifacts just
// inserted (rowids[i] of arts[i], 0 when skipped as already stored).
func recordSpans(ctx context.Context, tx *wtx, org string, arts []*vigil.Artifact, rowids []int64) error {
	type span struct{ lo, hi int64 }
	spans := map[int64]span{}
	for i, a := range arts {
		id := rowids[i]
		if id == 0 {
			continue
		}
		b := bucketOf(nanos(a.Timestamp))
		sp, ok := spans[b]
		if !ok {
			sp = span{id, id}
		}
		spans[b] = span{min(sp.lo, id), max(sp.hi, id)}
	}
	if len(spans) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO artifact_spans (org_id, bucket, min_rowid, max_rowid) VALUES (?, ?, ?, ?)
		ON CONFLICT (org_id, bucket) DO UPDATE SET min_rowid = min(min_rowid, excluded.min_rowid), max_rowid = max(max_rowid, excluded.max_rowid)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for b, sp := range spans {
		if _, err := st.ExecContext(ctx, org, b, sp.lo, sp.hi); err != nil {
			return err
		}
	}
	return nil
}

// rowidSpan returns bounds [lo, hi] of the rowids of org's artifacts
// whose timestamps are in r: every such artifact's rowid is within them
// (others may be too). lo > hi when there is none.
func rowidSpan(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, org string, r vigil.TimeRange) (lo, hi int64, err error) {
	from, to := int64(math.MinInt64), int64(math.MaxInt64)
	if !r.Start.IsZero() {
		from = bucketOf(nanos(r.Start))
	}
	if !r.End.IsZero() {
		to = bucketOf(nanos(r.End)) // End is exclusive: its bucket may hold earlier ones
	}
	var l, h sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT MIN(min_rowid), MAX(max_rowid) FROM artifact_spans
		WHERE org_id = ? AND bucket BETWEEN ? AND ?`, org, from, to).Scan(&l, &h)
	if err != nil || !l.Valid {
		return 1, 0, err
	}
	return l.Int64, h.Int64, nil
}

// dropSpansBefore forgets the spans of buckets wholly before t, whose
// artifacts retention deleted.
func dropSpansBefore(ctx context.Context, tx *wtx, t time.Time) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM artifact_spans WHERE bucket < ?`, bucketOf(nanos(t))-1)
	return err
}
