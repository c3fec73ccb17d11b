package auth

import (
	"strings"

	"github.com/vigil-soc/vigil"
)

// Actions of a "resource:action" permission, weakest first: within one
// resource a stronger action grants the weaker ones.
var actionRank = map[string]int{"read": 1, "write": 2, "manage": 3}

// observerResource names the resource whose read permission,
// vigil.PermObserverRead, grants read on every resource.
const observerResource = "observer"

// Implies reports whether holding the permission granted also grants
// required (docs/api.md, Authentication and permissions):
//   - equal permissions imply each other;
//   - admin grants everything;
//   - within one resource, manage grants write and read, write grants read;
//   - observer:read grants every "*:read" (and what grants observer:read,
//     such as a hypothetical observer:manage, grants them too).
//
// Nothing else is implied; names are compared exactly, without case
// folding. An empty required permission is granted by nothing, so that a
// missing requirement fails closed.
func Implies(granted, required string) bool {
	if required == "" {
		return false
	}
	if granted == required || granted == vigil.PermAdmin {
		return true
	}
	gRes, gAct, ok := strings.Cut(granted, ":")
	if !ok || gRes == "" || actionRank[gAct] == 0 {
		return false
	}
	rRes, rAct, ok := strings.Cut(required, ":")
	if !ok || rRes == "" || actionRank[rAct] == 0 {
		return false
	}
	if gRes == rRes {
		return actionRank[gAct] >= actionRank[rAct]
	}
	return gRes == observerResource && rAct == "read"
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
