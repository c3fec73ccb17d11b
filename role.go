package vigil

import "time"

// Permission names, as tokens and roles spell them. Catalog lists every
// permission a role may grant.
const (
	PermObservationsRead   = "observations:read"
	PermObservationsWrite  = "observations:write"
	PermObservationsManage = "observations:manage"
	PermIncidentsRead      = "incidents:read"
	PermIncidentsWrite     = "incidents:write"
	PermIncidentsManage    = "incidents:manage"
	PermSignalsRead        = "signals:read"
	PermSignalsWrite       = "signals:write"
	PermSignalsManage      = "signals:manage"
	PermObserverRead       = "observer:read"
	PermAdmin              = "admin"
)

// Catalog is the set of known permissions.
var Catalog = []string{
	PermObservationsRead, PermObservationsWrite, PermObservationsManage,
	PermIncidentsRead, PermIncidentsWrite, PermIncidentsManage,
	PermSignalsRead, PermSignalsWrite, PermSignalsManage,
	PermObserverRead, PermAdmin,
}

// KnownPermission reports whether p is in the catalog.
func KnownPermission(p string) bool {
	for _, c := range Catalog {
		if c == p {
			return true
		}
	}
	return false
}

// Role groups permissions under a name unique within its org.
type Role struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"org_id"`
	Name        string    `json:"name"`
	Permissions []string  `json:"permissions"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// RoleUpdate lists the fields of a partial update; nil = unchanged.
type RoleUpdate struct {
	Name        *string
	Permissions *[]string
}

// Apply sets the fields present in u on r.
func (u RoleUpdate) Apply(r *Role) {
	set(&r.Name, u.Name)
	set(&r.Permissions, u.Permissions)
}

// MaxRoleNameLen bounds a role's name.
const MaxRoleNameLen = 100
