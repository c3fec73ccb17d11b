package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// collect runs query and reads each of its rows with scan: an empty
// slice, not nil, when there is none.
func collect[T any](ctx context.Context, q querier, scan func(pgx.Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if out == nil {
		out = []T{}
	}
	return out, err
}

// orgPage returns page p of org's rows of table, its columns cols read
// by scan, in order, and how many rows org has there in all.
func orgPage[T any](ctx context.Context, q querier, table, cols, order string, scan func(pgx.Row) (T, error), org string, p vigil.Page) ([]T, int, error) {
	var total int
	if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM `+table+` WHERE org_id = $1`, org).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := collect(ctx, q, scan, `SELECT `+cols+` FROM `+table+` WHERE org_id = $1 ORDER BY `+order+` LIMIT $2 OFFSET $3`,
		append([]any{org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}
