package auth

import (
	"strings"

	"github.com/vigil-soc/vigil"
)

// Implies reports whether holding the permission granted also grants
// required (docs/api.md, Authentication and permissions). The model is
// least privilege:
//   - a permission grants itself;
//   - admin grants everything;
//   - observer:read grants every "*:read";
//   - X:manage grants X:write and X:read (who manages a resource's rules
//     reads and edits them, as DESIGN.md's manage ⊇ write has it).
//
// Nothing else is implied: write does not grant read (signals:write, a
// sensor's permission, reads nothing). Names are compared exactly,
// without case folding. An empty required permission is granted by
// nothing, so that a missing requirement fails closed.
func Implies(granted, required string) bool {
	if required == "" {
		return false
	}
	if granted == required || granted == vigil.PermAdmin {
		return true
	}
	rRes, rAct, ok := strings.Cut(required, ":")
	if !ok || rRes == "" {
		return false
	}
	if granted == vigil.PermObserverRead && rAct == "read" {
		return true
	}
	return granted == rRes+":manage" && (rAct == "write" || rAct == "read")
}

// Allowed reports whether any of the granted permissions implies required.
func Allowed(granted []string, required string) bool {
	for _, g := range granted {
		if Implies(g, required) {
			return true
		}
	}
	return false
}
