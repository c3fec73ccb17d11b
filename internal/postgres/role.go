package postgres

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

const roleCols = `id, org_id, name, permissions, created_at, updated_at`

func scanRole(row pgx.Row) (*vigil.Role, error) {
	var r vigil.Role
	var created, updated int64
	if err := row.Scan(&r.ID, &r.OrgID, &r.Name, &r.Permissions, &created, &updated); err != nil {
		return nil, err
	}
	if r.Permissions == nil {
		r.Permissions = []string{}
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &r, nil
}

// roleConflict turns a uniqueness violation into the conflict the API
// shows for a duplicate role name (the same as the SQLite store's).
func roleConflict(err error) error {
	if vigil.ErrorCode(wrap("", err)) == vigil.ECONFLICT {
		return &vigil.Error{Code: vigil.ECONFLICT, Message: "a role with this name already exists",
			Details: []vigil.FieldIssue{{Field: "name", Issue: "already used by another role"}}, Err: err}
	}
	return err
}

// perms returns p as a non-nil slice: NOT NULL TEXT[] takes an empty array.
func perms(p []string) []string {
	if p == nil {
		return []string{}
	}
	return p
}

// CreateRole stores a role of org; a name already used is ECONFLICT.
func (s *Store) CreateRole(ctx context.Context, org string, r *vigil.Role) error {
	r.OrgID = org
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO roles (`+roleCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			r.ID, org, r.Name, perms(r.Permissions), nanos(r.CreatedAt), nanos(r.UpdatedAt)); err != nil {
			return roleConflict(err)
		}
		return vigil.Audit(ctx, org, vigil.AuditRole, r.ID, nil, r)
	})
	return wrap("CreateRole", err)
}

// GetRole returns one role of org.
func (s *Store) GetRole(ctx context.Context, org, id string) (*vigil.Role, error) {
	r, err := scanRole(s.pool.QueryRow(ctx, `SELECT `+roleCols+` FROM roles WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, wrap("GetRole", notFound(err, "role"))
	}
	return r, nil
}

// ListRoles returns a page of org's roles by name.
func (s *Store) ListRoles(ctx context.Context, org string, p vigil.Page) ([]*vigil.Role, int, error) {
	out, total, err := orgPage(ctx, s.pool, "roles", roleCols, "name, id", scanRole, org, p)
	return out, total, wrap("ListRoles", err)
}

// UpdateRole applies a partial update to a role of org.
func (s *Store) UpdateRole(ctx context.Context, org, id string, u vigil.RoleUpdate, now time.Time) (*vigil.Role, error) {
	var out *vigil.Role
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanRole(tx.QueryRow(ctx, `SELECT `+roleCols+` FROM roles WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id))
		if err != nil {
			return notFound(err, "role")
		}
		before := *r
		u.Apply(r)
		r.UpdatedAt = now
		if _, err = tx.Exec(ctx, `UPDATE roles SET name = $1, permissions = $2, updated_at = $3 WHERE org_id = $4 AND id = $5`,
			r.Name, perms(r.Permissions), nanos(now), org, id); err != nil {
			return roleConflict(err)
		}
		out = r
		return vigil.Audit(ctx, org, vigil.AuditRole, id, &before, r)
	})
	return out, wrap("UpdateRole", err)
}

// DeleteRole removes a role of org; tokens naming it lose its permissions
// at once, since permissions are looked up per request.
func (s *Store) DeleteRole(ctx context.Context, org, id string) error {
	return wrap("DeleteRole", s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanRole(tx.QueryRow(ctx, `DELETE FROM roles WHERE org_id = $1 AND id = $2 RETURNING `+roleCols, org, id))
		if err != nil {
			return notFound(err, "role")
		}
		return vigil.Audit(ctx, org, vigil.AuditRole, id, r, nil)
	}))
}

// RolePermissions returns the union of the permissions of the named roles.
func (s *Store) RolePermissions(ctx context.Context, org string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT p FROM roles r, unnest(r.permissions) AS p
		WHERE r.org_id = $1 AND r.name = ANY($2)`, org, names)
	if err != nil {
		return nil, wrap("RolePermissions", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrap("RolePermissions", err)
	}
	if out == nil {
		out = []string{}
	}
	sort.Strings(out)
	return out, nil
}
