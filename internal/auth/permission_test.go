package auth_test

import (
	"slices"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
)

func TestImplies(t *testing.T) {
	tests := []struct {
		granted, required string
		want              bool
	}{
		// admin grants everything.
		{vigil.PermAdmin, vigil.PermAdmin, true},
		{vigil.PermAdmin, vigil.PermSignalsManage, true},
		{vigil.PermAdmin, vigil.PermIncidentsWrite, true},
		{vigil.PermAdmin, vigil.PermObserverRead, true},
		{vigil.PermAdmin, "anything:else", true},

		// Within one resource manage grants write and read; write does not
		// grant read (least privilege: a sensor reads nothing).
		{vigil.PermSignalsManage, vigil.PermSignalsManage, true},
		{vigil.PermSignalsManage, vigil.PermSignalsWrite, true},
		{vigil.PermSignalsManage, vigil.PermSignalsRead, true},
		{vigil.PermSignalsWrite, vigil.PermSignalsWrite, true},
		{vigil.PermSignalsWrite, vigil.PermSignalsRead, false}, // a sensor reads nothing
		{vigil.PermSignalsWrite, vigil.PermSignalsManage, false},
		{vigil.PermSignalsRead, vigil.PermSignalsWrite, false},
		{vigil.PermSignalsRead, vigil.PermSignalsManage, false},
		{vigil.PermIncidentsManage, vigil.PermIncidentsWrite, true},
		{vigil.PermIncidentsManage, vigil.PermIncidentsRead, true},
		{vigil.PermIncidentsWrite, vigil.PermIncidentsRead, false},
		{vigil.PermIncidentsWrite, vigil.PermIncidentsManage, false},
		{vigil.PermIncidentsRead, vigil.PermIncidentsWrite, false},
		{vigil.PermObservationsManage, vigil.PermObservationsWrite, true},
		{vigil.PermObservationsManage, vigil.PermObservationsRead, true},
		{vigil.PermObservationsWrite, vigil.PermObservationsRead, false},
		{vigil.PermObservationsRead, vigil.PermObservationsWrite, false},
		{"rules:manage", "rules:write", true},
		{"rules:manage", "rules:read", true},
		{"rules:manage", "rules:delete", false}, // manage grants only write and read
		{"rules:write", "rules:read", false},

		// Not across resources.
		{vigil.PermSignalsManage, vigil.PermIncidentsRead, false},
		{vigil.PermSignalsManage, vigil.PermObservationsWrite, false},
		{vigil.PermIncidentsWrite, vigil.PermSignalsRead, false},
		{vigil.PermObservationsWrite, vigil.PermIncidentsWrite, false},

		// observer:read grants every *:read, nothing more.
		{vigil.PermObserverRead, vigil.PermObserverRead, true},
		{vigil.PermObserverRead, vigil.PermIncidentsRead, true},
		{vigil.PermObserverRead, vigil.PermSignalsRead, true},
		{vigil.PermObserverRead, vigil.PermObservationsRead, true},
		{vigil.PermObserverRead, "rules:read", true},
		{vigil.PermObserverRead, "signals:read:x", false},
		{"observer:manage", vigil.PermSignalsRead, false},
		{"observer:write", vigil.PermObserverRead, false},
		{vigil.PermObserverRead, vigil.PermSignalsWrite, false},
		{vigil.PermObserverRead, vigil.PermIncidentsWrite, false},
		{vigil.PermObserverRead, vigil.PermSignalsManage, false},
		{vigil.PermObserverRead, vigil.PermAdmin, false},
		{vigil.PermIncidentsRead, vigil.PermObserverRead, false},
		{vigil.PermSignalsManage, vigil.PermObserverRead, false},

		// Nothing grants admin but admin.
		{vigil.PermSignalsManage, vigil.PermAdmin, false},
		{"admin:manage", vigil.PermAdmin, false},

		// Names are exact.
		{"Admin", vigil.PermSignalsRead, false},
		{"ADMIN", vigil.PermAdmin, false},
		{"Signals:Manage", vigil.PermSignalsRead, false},
		{"signals:manage ", vigil.PermSignalsRead, false},
		{"signals", vigil.PermSignalsRead, false},
		{"signals:", vigil.PermSignalsRead, false},
		{":manage", ":read", false},
		{"observer:read", ":read", false},
		{"signals:manage:x", "signals:read", false},
		{"signals:admin", "signals:read", false},
		{"signals:delete", "signals:delete", true}, // equality always implies
		{"", vigil.PermSignalsRead, false},
		{"", "", false}, // an empty requirement fails closed
		{vigil.PermAdmin, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.granted+"→"+tt.required, func(t *testing.T) {
			if got := auth.Implies(tt.granted, tt.required); got != tt.want {
				t.Errorf("Implies(%q, %q) = %v, want %v", tt.granted, tt.required, got, tt.want)
			}
		})
	}
}

// TestImpliesCatalog checks every pair of catalog permissions against the
// full table of what each grants.
func TestImpliesCatalog(t *testing.T) {
	grants := map[string][]string{
		vigil.PermAdmin:              vigil.Catalog,
		vigil.PermObserverRead:       {vigil.PermObserverRead, vigil.PermObservationsRead, vigil.PermIncidentsRead, vigil.PermSignalsRead},
		vigil.PermObservationsManage: {vigil.PermObservationsManage, vigil.PermObservationsWrite, vigil.PermObservationsRead},
		vigil.PermObservationsWrite:  {vigil.PermObservationsWrite},
		vigil.PermObservationsRead:   {vigil.PermObservationsRead},
		vigil.PermIncidentsManage:    {vigil.PermIncidentsManage, vigil.PermIncidentsWrite, vigil.PermIncidentsRead},
		vigil.PermIncidentsWrite:     {vigil.PermIncidentsWrite},
		vigil.PermIncidentsRead:      {vigil.PermIncidentsRead},
		vigil.PermSignalsManage:      {vigil.PermSignalsManage, vigil.PermSignalsWrite, vigil.PermSignalsRead},
		vigil.PermSignalsWrite:       {vigil.PermSignalsWrite},
		vigil.PermSignalsRead:        {vigil.PermSignalsRead},
	}
	for _, g := range vigil.Catalog {
		want, ok := grants[g]
		if !ok {
			t.Errorf("catalog permission %q missing from this test's table", g)
			continue
		}
		for _, r := range vigil.Catalog {
			if got := auth.Implies(g, r); got != slices.Contains(want, r) {
				t.Errorf("Implies(%q, %q) = %v, want %v", g, r, got, !got)
			}
		}
	}
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		name     string
		granted  []string
		required string
		want     bool
	}{
		{"nil", nil, vigil.PermSignalsRead, false},
		{"empty", []string{}, vigil.PermSignalsRead, false},
		{"exact", []string{vigil.PermIncidentsRead, vigil.PermSignalsRead}, vigil.PermSignalsRead, true},
		{"write and read held apart", []string{vigil.PermSignalsWrite, vigil.PermSignalsRead}, vigil.PermSignalsRead, true},
		{"write is not read", []string{vigil.PermIncidentsRead, vigil.PermSignalsWrite}, vigil.PermSignalsRead, false},
		{"manage writes", []string{vigil.PermSignalsManage}, vigil.PermSignalsWrite, true},
		{"manage reads", []string{vigil.PermIncidentsRead, vigil.PermSignalsManage}, vigil.PermSignalsRead, true},
		{"manage of another resource", []string{vigil.PermIncidentsManage}, vigil.PermSignalsRead, false},
		{"admin among others", []string{"nonsense", vigil.PermAdmin}, vigil.PermIncidentsWrite, true},
		{"observer reads", []string{vigil.PermObserverRead}, vigil.PermIncidentsRead, true},
		{"observer does not write", []string{vigil.PermObserverRead}, vigil.PermIncidentsWrite, false},
		{"none implies", []string{vigil.PermIncidentsWrite, vigil.PermSignalsRead}, vigil.PermSignalsWrite, false},
		{"no admin", []string{vigil.PermObserverRead, vigil.PermSignalsManage}, vigil.PermAdmin, false},
		{"empty requirement", []string{vigil.PermAdmin}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auth.Allowed(tt.granted, tt.required); got != tt.want {
				t.Errorf("Allowed(%q, %q) = %v, want %v", tt.granted, tt.required, got, tt.want)
			}
		})
	}
}
