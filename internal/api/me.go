package api

import (
	"net/http"
	"slices"
	"time"
)

// meView is the caller as the API sees it: who, of which org, and the
// effective permissions (the token's and its roles') that every route
// checks. A client such as the console shows only what these allow.
type meView struct {
	Subject     string    `json:"subject"`
	OrgID       string    `json:"org_id"`
	Roles       []string  `json:"roles"`
	Permissions []string  `json:"permissions"`
	ExpiresAt   time.Time `json:"expires_at"`
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	claims := s.authenticate(w, r)
	if claims == nil {
		return
	}
	r = asCaller(r, claims)
	perms := append([]string{}, claims.Permissions...)
	if len(claims.Roles) > 0 {
		rolePerms, err := s.store.RolePermissions(r.Context(), claims.OrgID, claims.Roles)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		perms = append(perms, rolePerms...)
	}
	slices.Sort(perms)
	perms = slices.Compact(perms)
	roles := append([]string{}, claims.Roles...)
	ok(w, http.StatusOK, "Caller retrieved successfully", meView{
		Subject: claims.Subject, OrgID: claims.OrgID, Roles: roles, Permissions: perms, ExpiresAt: claims.ExpiresAt.UTC(),
	})
}
