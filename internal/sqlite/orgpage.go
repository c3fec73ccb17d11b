package sqlite

import (
	"context"

	"github.com/vigil-soc/vigil"
)

// rowScanner is a row to read: one of a query's rows, or its only one.
type rowScanner = interface{ Scan(...any) error }

// collect runs query and reads each of its rows with scan: an empty
// slice, not nil, when there is none.
func collect[T any](ctx context.Context, q querier, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// orgPage returns page p of org's rows of table, its columns cols read
// by scan, in order, and how many rows org has there in all.
func orgPage[T any](ctx context.Context, q querier, table, cols, order string, scan func(rowScanner) (T, error), org string, p vigil.Page) ([]T, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+` WHERE org_id = ?`, org).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := collect(ctx, q, scan, `SELECT `+cols+` FROM `+table+` WHERE org_id = ? ORDER BY `+order+` LIMIT ? OFFSET ?`,
		append([]any{org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}
