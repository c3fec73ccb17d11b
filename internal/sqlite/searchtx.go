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
