package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/vigil-soc/vigil"
)

const roleCols = `id, org_id, name, permissions, created_at, updated_at`

func scanRole(row interface{ Scan(...any) error }) (*vigil.Role, error) {
	var r vigil.Role
	var perms string
	var created, updated int64
	if err := row.Scan(&r.ID, &r.OrgID, &r.Name, &perms, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(perms), &r.Permissions); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &r, nil
}

func roleConflict(err error) error {
	if vigil.ErrorCode(wrap("", err)) == vigil.ECONFLICT {
		return &vigil.Error{Code: vigil.ECONFLICT, Message: "a role with this name already exists",
			Details: []vigil.FieldIssue{{Field: "name", Issue: "already used by another role"}}, Err: err}
	}
	return err
}

// CreateRole stores a role of org; a name already used is ECONFLICT.
func (s *Store) CreateRole(ctx context.Context, org string, r *vigil.Role) error {
	r.OrgID = org
	perms, _ := json.Marshal(r.Permissions)
	err := s.tx(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO roles (`+roleCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
			r.ID, org, r.Name, string(perms), nanos(r.CreatedAt), nanos(r.UpdatedAt)); err != nil {
			return roleConflict(err)
		}
		return vigil.Audit(ctx, org, vigil.AuditRole, r.ID, nil, r)
	})
	return wrap("CreateRole", err)
}

// GetRole returns one role of org.
func (s *Store) GetRole(ctx context.Context, org, id string) (*vigil.Role, error) {
	r, err := scanRole(s.r.QueryRowContext(ctx, `SELECT `+roleCols+` FROM roles WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("role")
	}
	return r, wrap("GetRole", err)
}

// ListRoles returns a page of org's roles by name.
func (s *Store) ListRoles(ctx context.Context, org string, p vigil.Page) ([]*vigil.Role, int, error) {
	out, total, err := orgPage(ctx, s.r, "roles", roleCols, "name, id", scanRole, org, p)
	return out, total, wrap("ListRoles", err)
}

// UpdateRole applies a partial update to a role of org.
func (s *Store) UpdateRole(ctx context.Context, org, id string, u vigil.RoleUpdate, now time.Time) (*vigil.Role, error) {
	var out *vigil.Role
	err := s.tx(ctx, func(tx *wtx) error {
		r, err := scanRole(tx.QueryRowContext(ctx, `SELECT `+roleCols+` FROM roles WHERE org_id = ? AND id = ?`, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("role")
		}
		if err != nil {
			return err
		}
		before := *r
		u.Apply(r)
		r.UpdatedAt = now
		perms, _ := json.Marshal(r.Permissions)
		if _, err = tx.ExecContext(ctx, `UPDATE roles SET name = ?, permissions = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
			r.Name, string(perms), nanos(now), org, id); err != nil {
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
	return wrap("DeleteRole", s.tx(ctx, func(tx *wtx) error {
		r, err := scanRole(tx.QueryRowContext(ctx, `DELETE FROM roles WHERE org_id = ? AND id = ? RETURNING `+roleCols, org, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("role")
		}
		if err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditRole, id, r, nil)
	}))
}

// RolePermissions returns the union of the permissions of the named roles.
func (s *Store) RolePermissions(ctx context.Context, org string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	args := []any{org}
	for _, n := range names {
		args = append(args, n)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT permissions FROM roles WHERE org_id = ? AND name IN (`+placeholders(len(names))+`)`, args...)
	if err != nil {
		return nil, wrap("RolePermissions", err)
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var perms string
		if err := rows.Scan(&perms); err != nil {
			return nil, wrap("RolePermissions", err)
		}
		var ps []string
		if err := json.Unmarshal([]byte(perms), &ps); err != nil {
			return nil, wrap("RolePermissions", err)
		}
		for _, p := range ps {
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, wrap("RolePermissions", rows.Err())
}
