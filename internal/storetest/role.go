package storetest

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func roleTests() []test {
	return []test{
		{"CRUD", testRoleCRUD},
		{"List", testRoleList},
		{"DuplicateNameConflict", testRoleConflict},
		{"SameNameOtherOrg", testRoleOtherOrg},
		{"RolePermissions", testRolePermissions},
	}
}

func testRoleCRUD(t *testing.T, s Store) {
	org := vigil.NewID()
	r := &vigil.Role{
		ID: vigil.NewID(), Name: "tier-1 analyst",
		Permissions: []string{vigil.PermIncidentsWrite, vigil.PermObservationsRead, vigil.PermSignalsRead},
		CreatedAt:   at(time.Minute), UpdatedAt: at(2 * time.Minute),
	}
	if err := s.CreateRole(t.Context(), org, r); err != nil {
		t.Fatalf("CreateRole: %v", err)
	}
	check := func(what string, g *vigil.Role, name string, perms []string, updated time.Time) {
		t.Helper()
		if g.ID != r.ID || g.OrgID != org || g.Name != name || !sameSet(g.Permissions, perms) {
			t.Errorf("%s: %s org %s %q %v; want %s %s %q %v", what, g.ID, g.OrgID, g.Name, g.Permissions, r.ID, org, name, perms)
		}
		if !g.CreatedAt.Equal(r.CreatedAt) || !g.UpdatedAt.Equal(updated) {
			t.Errorf("%s: created %v updated %v, want %v %v", what, g.CreatedAt, g.UpdatedAt, r.CreatedAt, updated)
		}
	}
	check("GetRole", mustGetRole(t, s, org, r.ID), r.Name, r.Permissions, r.UpdatedAt)
	list, total := mustListRoles(t, s, org, vigil.Page{})
	if total != 1 || len(list) != 1 {
		t.Fatalf("ListRoles: %d roles, total %d; want 1", len(list), total)
	}
	check("ListRoles", list[0], r.Name, r.Permissions, r.UpdatedAt)

	// Partial updates: name only, then permissions only.
	name := "tier-2 analyst"
	got, err := s.UpdateRole(t.Context(), org, r.ID, vigil.RoleUpdate{Name: &name}, at(time.Hour))
	if err != nil {
		t.Fatalf("UpdateRole(name): %v", err)
	}
	check("UpdateRole(name) returned", got, name, r.Permissions, at(time.Hour))
	check("GetRole after name update", mustGetRole(t, s, org, r.ID), name, r.Permissions, at(time.Hour))
	perms := []string{vigil.PermIncidentsManage}
	got, err = s.UpdateRole(t.Context(), org, r.ID, vigil.RoleUpdate{Permissions: &perms}, at(2*time.Hour))
	if err != nil {
		t.Fatalf("UpdateRole(permissions): %v", err)
	}
	check("UpdateRole(permissions) returned", got, name, perms, at(2*time.Hour))
	check("GetRole after permissions update", mustGetRole(t, s, org, r.ID), name, perms, at(2*time.Hour))
	// Renaming a role to its own name is no conflict.
	if _, err := s.UpdateRole(t.Context(), org, r.ID, vigil.RoleUpdate{Name: &name}, at(3*time.Hour)); err != nil {
		t.Errorf("UpdateRole to its own name: %v", err)
	}

	if err := s.DeleteRole(t.Context(), org, r.ID); err != nil {
		t.Fatalf("DeleteRole: %v", err)
	}
	_, err = s.GetRole(t.Context(), org, r.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetRole after delete")
	err = s.DeleteRole(t.Context(), org, r.ID)
	wantCode(t, err, vigil.ENOTFOUND, "DeleteRole twice")
	_, err = s.UpdateRole(t.Context(), org, r.ID, vigil.RoleUpdate{Name: &name}, at(4*time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateRole after delete")
	if _, total := mustListRoles(t, s, org, vigil.Page{}); total != 0 {
		t.Errorf("ListRoles after delete: total %d, want 0", total)
	}
	// The name is free again.
	mustCreateRole(t, s, org, name, vigil.PermSignalsRead)
}

func testRoleList(t *testing.T, s Store) {
	org := vigil.NewID()
	var all []string
	for _, name := range []string{"charlie", "alpha", "echo", "bravo", "delta"} {
		all = append(all, mustCreateRole(t, s, org, name, vigil.PermSignalsRead).ID)
	}
	var paged []string
	for off := 0; off < 6; off += 2 {
		list, total := mustListRoles(t, s, org, vigil.Page{Limit: 2, Offset: off})
		if total != 5 {
			t.Errorf("ListRoles offset %d: total %d, want 5", off, total)
		}
		if want := min(2, max(0, 5-off)); len(list) != want {
			t.Errorf("ListRoles offset %d: %d roles, want %d", off, len(list), want)
		}
		paged = append(paged, roleIDs(list)...)
	}
	if !sameSet(paged, all) {
		t.Errorf("pages of 2 gave %v, want each role once: %v", paged, all)
	}
	if list, _ := mustListRoles(t, s, org, vigil.Page{Limit: 2, Offset: 10}); len(list) != 0 {
		t.Errorf("past the end: %d roles, want 0", len(list))
	}
}

func testRoleConflict(t *testing.T, s Store) {
	org := vigil.NewID()
	analyst := mustCreateRole(t, s, org, "analyst", vigil.PermIncidentsRead)
	dup := &vigil.Role{ID: vigil.NewID(), Name: "analyst", Permissions: []string{vigil.PermAdmin}, CreatedAt: base, UpdatedAt: base}
	wantCode(t, s.CreateRole(t.Context(), org, dup), vigil.ECONFLICT, "CreateRole with a name already used")
	if _, total := mustListRoles(t, s, org, vigil.Page{}); total != 1 {
		t.Errorf("%d roles after a refused duplicate, want 1", total)
	}
	if perms := mustRolePermissions(t, s, org, "analyst"); !sameSet(perms, ids(vigil.PermIncidentsRead)) {
		t.Errorf("analyst grants %v after a refused duplicate, want %v", perms, []string{vigil.PermIncidentsRead})
	}

	viewer := mustCreateRole(t, s, org, "viewer", vigil.PermObserverRead)
	name := "analyst"
	perms := []string{vigil.PermAdmin}
	_, err := s.UpdateRole(t.Context(), org, viewer.ID, vigil.RoleUpdate{Name: &name, Permissions: &perms}, at(time.Hour))
	wantCode(t, err, vigil.ECONFLICT, "UpdateRole renaming to a name already used")
	if g := mustGetRole(t, s, org, viewer.ID); g.Name != "viewer" || !sameSet(g.Permissions, ids(vigil.PermObserverRead)) || !g.UpdatedAt.Equal(base) {
		t.Errorf("refused rename changed the role: %q %v updated %v", g.Name, g.Permissions, g.UpdatedAt)
	}
	if g := mustGetRole(t, s, org, analyst.ID); g.Name != "analyst" || !sameSet(g.Permissions, ids(vigil.PermIncidentsRead)) {
		t.Errorf("refused rename changed the other role: %q %v", g.Name, g.Permissions)
	}
}

func testRoleOtherOrg(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	a := mustCreateRole(t, s, orgA, "analyst", vigil.PermIncidentsRead)
	b := mustCreateRole(t, s, orgB, "analyst", vigil.PermAdmin)
	if a.ID == b.ID {
		t.Fatal("two roles share an id")
	}
	// Renaming into a name used only by another org is fine too.
	c := mustCreateRole(t, s, orgB, "responder", vigil.PermIncidentsWrite)
	mustCreateRole(t, s, orgA, "hunter", vigil.PermSignalsRead)
	name := "hunter"
	if _, err := s.UpdateRole(t.Context(), orgB, c.ID, vigil.RoleUpdate{Name: &name}, at(time.Hour)); err != nil {
		t.Errorf("UpdateRole to a name used in another org: %v", err)
	}
	if perms := mustRolePermissions(t, s, orgA, "analyst"); !sameSet(perms, ids(vigil.PermIncidentsRead)) {
		t.Errorf("org A's analyst grants %v, want %v", perms, []string{vigil.PermIncidentsRead})
	}
	if perms := mustRolePermissions(t, s, orgB, "analyst"); !sameSet(perms, ids(vigil.PermAdmin)) {
		t.Errorf("org B's analyst grants %v, want %v", perms, []string{vigil.PermAdmin})
	}
}

func testRolePermissions(t *testing.T, s Store) {
	org := vigil.NewID()
	mustCreateRole(t, s, org, "reader", vigil.PermIncidentsRead, vigil.PermSignalsRead)
	writer := mustCreateRole(t, s, org, "writer", vigil.PermSignalsRead, vigil.PermSignalsWrite)
	boss := mustCreateRole(t, s, org, "boss", vigil.PermAdmin)

	for _, tc := range []struct {
		names []string
		want  []string
	}{
		{ids("reader"), ids(vigil.PermIncidentsRead, vigil.PermSignalsRead)},
		{ids("reader", "writer"), ids(vigil.PermIncidentsRead, vigil.PermSignalsRead, vigil.PermSignalsWrite)},
		{ids("reader", "writer", "boss"), ids(vigil.PermIncidentsRead, vigil.PermSignalsRead, vigil.PermSignalsWrite, vigil.PermAdmin)},
		{ids("reader", "no-such-role"), ids(vigil.PermIncidentsRead, vigil.PermSignalsRead)},
		{ids("no-such-role"), nil},
		{ids("Reader"), nil}, // names are exact
		{nil, nil},
		{ids("writer", "writer"), ids(vigil.PermSignalsRead, vigil.PermSignalsWrite)},
	} {
		got := mustRolePermissions(t, s, org, tc.names...)
		if !sameSet(got, tc.want) {
			t.Errorf("RolePermissions(%v) = %v, want each of %v once", tc.names, got, tc.want)
		}
	}

	// Changes apply at once.
	perms := []string{vigil.PermObservationsWrite}
	if _, err := s.UpdateRole(t.Context(), org, writer.ID, vigil.RoleUpdate{Permissions: &perms}, at(time.Hour)); err != nil {
		t.Fatalf("UpdateRole: %v", err)
	}
	if got := mustRolePermissions(t, s, org, "writer"); !sameSet(got, perms) {
		t.Errorf("after update, writer grants %v, want %v", got, perms)
	}
	if err := s.DeleteRole(t.Context(), org, boss.ID); err != nil {
		t.Fatalf("DeleteRole: %v", err)
	}
	if got := mustRolePermissions(t, s, org, "boss"); len(got) != 0 {
		t.Errorf("deleted role still grants %v", got)
	}
	if got := mustRolePermissions(t, s, org, "boss", "reader"); !sameSet(got, ids(vigil.PermIncidentsRead, vigil.PermSignalsRead)) {
		t.Errorf("deleted role plus reader grants %v, want only reader's", got)
	}
	name := "renamed"
	if _, err := s.UpdateRole(t.Context(), org, writer.ID, vigil.RoleUpdate{Name: &name}, at(2*time.Hour)); err != nil {
		t.Fatalf("UpdateRole(name): %v", err)
	}
	if got := mustRolePermissions(t, s, org, "writer"); len(got) != 0 {
		t.Errorf("old name of a renamed role still grants %v", got)
	}
	if got := mustRolePermissions(t, s, org, "renamed"); !sameSet(got, perms) {
		t.Errorf("new name of a renamed role grants %v, want %v", got, perms)
	}
}
