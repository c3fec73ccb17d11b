package api

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

type roleBody struct {
	Name        *string   `json:"name"`
	Permissions *[]string `json:"permissions"`
}

func (b *roleBody) validate(create bool) error {
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	if b.Name == nil && create {
		bad("name", "is required")
	} else if b.Name != nil {
		*b.Name = strings.TrimSpace(*b.Name)
		if n := utf8.RuneCountInString(*b.Name); n < 1 || n > vigil.MaxRoleNameLen {
			bad("name", "must be 1..100 characters")
		} else if strings.ContainsRune(*b.Name, 0) {
			bad("name", "must not contain NUL characters")
		}
	}
	if b.Permissions == nil && create {
		bad("permissions", "is required")
	} else if b.Permissions != nil {
		seen := map[string]bool{}
		perms := []string{}
		for i, p := range *b.Permissions {
			if !vigil.KnownPermission(p) {
				bad(fmt.Sprintf("permissions[%d]", i), fmt.Sprintf("unknown permission %q; known: %s", p, strings.Join(vigil.Catalog, ", ")))
				continue
			}
			if !seen[p] {
				seen[p] = true
				perms = append(perms, p)
			}
		}
		*b.Permissions = perms
	}
	if len(issues) > 0 {
		return vigil.Invalid(issues...)
	}
	return nil
}

func (s *Server) createRole(w http.ResponseWriter, r *http.Request) {
	var b roleBody
	if !s.decodeValid(w, r, &b, true) {
		return
	}
	now := s.now()
	role := &vigil.Role{ID: vigil.NewID(), Name: *b.Name, Permissions: *b.Permissions, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateRole(r.Context(), principal(r.Context()).OrgID, role); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusCreated, "Role created successfully", role)
}

func (s *Server) getRole(w http.ResponseWriter, r *http.Request) {
	role, err := s.store.GetRole(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Role retrieved successfully", role)
}

func (s *Server) listRoles(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, "roles", "Roles retrieved successfully", s.store.ListRoles)
}

func (s *Server) updateRole(w http.ResponseWriter, r *http.Request) {
	var b roleBody
	if !s.decodeValid(w, r, &b, false) {
		return
	}
	role, err := s.store.UpdateRole(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"),
		vigil.RoleUpdate{Name: b.Name, Permissions: b.Permissions}, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Role updated successfully", role)
}

func (s *Server) deleteRole(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeleteRole(r.Context(), principal(r.Context()).OrgID, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Role deleted successfully", nil)
}
