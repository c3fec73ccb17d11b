package sqlite

import (
	"context"
	"database/sql"
)

// stx is a search's read transaction: one snapshot for its counts and its
// page. hook, when set (tests), is told each statement it runs, so that
// tests can check the plan of every one.
type stx struct {
	*sql.Tx
	hook func(query string, args []any)
	// index is the full-text index the search's expression is for:
	// artifacts_fts, or artifacts_addr for a query of addresses.
	index string
	// parts are the index's parts in the transaction's snapshot
	// (ftsparts.go).
	parts ftsParts
}

// match is the statement selecting the rowids of index matching expr
// among the rowids [lo, hi], and its arguments (ftsParts.match).
func (t *stx) match(expr string, lo, hi int64) (string, []any) {
	return t.parts.match(t.index, expr, lo, hi)
}

func (t *stx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if t.hook != nil {
		t.hook(query, args)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

func (t *stx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if t.hook != nil {
		t.hook(query, args)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}
