package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func settingsTests() []test {
	return []test{
		{"DefaultsOnFirstRead", testSettingsDefaults},
		{"PutThenRead", testSettingsPut},
		{"OrgsIndependent", testSettingsOrgs},
	}
}

// settingsDiff returns how got differs from want, or "". UpdatedAt is
// compared only when withTime.
func settingsDiff(got, want *vigil.EnrichmentSettings, withTime bool) string {
	switch {
	case got.GeoIPEnabled != want.GeoIPEnabled, got.DNSEnabled != want.DNSEnabled,
		got.WhoisEnabled != want.WhoisEnabled, got.ThreatIntelEnabled != want.ThreatIntelEnabled:
		return "provider switches differ"
	case got.RateLimit != want.RateLimit || got.CacheTTLHours != want.CacheTTLHours:
		return "rate_limit or cache_ttl_hours differ"
	case !slices.Equal(got.InternalNetworks, want.InternalNetworks):
		return "internal_networks differ"
	case withTime && !got.UpdatedAt.Equal(want.UpdatedAt):
		return "updated_at differs"
	}
	return ""
}

func mustSettings(t *testing.T, s vigil.Store, org string) *vigil.EnrichmentSettings {
	t.Helper()
	got, err := s.EnrichmentSettings(t.Context(), org)
	if err != nil {
		t.Fatalf("EnrichmentSettings: %v", err)
	}
	return got
}

func mustPutSettings(t *testing.T, s vigil.Store, org string, set *vigil.EnrichmentSettings) {
	t.Helper()
	if err := s.PutEnrichmentSettings(t.Context(), org, set); err != nil {
		t.Fatalf("PutEnrichmentSettings: %v", err)
	}
}

func testSettingsDefaults(t *testing.T, s Store) {
	org := vigil.NewID()
	d := vigil.DefaultEnrichmentSettings()
	first := mustSettings(t, s, org)
	if diff := settingsDiff(first, &d, false); diff != "" {
		t.Errorf("first read: %s: got %+v, want the defaults %+v", diff, first, d)
	}
	second := mustSettings(t, s, org)
	if diff := settingsDiff(second, first, true); diff != "" {
		t.Errorf("second read differs from the first: %s: %+v vs %+v", diff, second, first)
	}
}

func testSettingsPut(t *testing.T, s Store) {
	org := vigil.NewID()
	mustSettings(t, s, org) // creates the defaults first
	set := &vigil.EnrichmentSettings{
		GeoIPEnabled: false, DNSEnabled: true, WhoisEnabled: true, ThreatIntelEnabled: false,
		RateLimit: 0, CacheTTLHours: 8760, InternalNetworks: []string{"100.64.0.0/10", "2001:db8::/32"},
		UpdatedAt: at(time.Hour),
	}
	mustPutSettings(t, s, org, set)
	if diff := settingsDiff(mustSettings(t, s, org), set, true); diff != "" {
		t.Errorf("after put: %s", diff)
	}
	// A second put replaces the first; an empty network list stays empty.
	set2 := vigil.DefaultEnrichmentSettings()
	set2.RateLimit, set2.InternalNetworks, set2.UpdatedAt = 100000, []string{}, at(2*time.Hour)
	mustPutSettings(t, s, org, &set2)
	got := mustSettings(t, s, org)
	if diff := settingsDiff(got, &set2, true); diff != "" {
		t.Errorf("after second put: %s: %+v", diff, got)
	}

	// Put without a prior read works too.
	org2 := vigil.NewID()
	mustPutSettings(t, s, org2, set)
	if diff := settingsDiff(mustSettings(t, s, org2), set, true); diff != "" {
		t.Errorf("put before any read: %s", diff)
	}
}

func testSettingsOrgs(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	a := vigil.DefaultEnrichmentSettings()
	a.DNSEnabled, a.RateLimit, a.UpdatedAt = false, 5, at(time.Hour)
	mustPutSettings(t, s, orgA, &a)
	d := vigil.DefaultEnrichmentSettings()
	if diff := settingsDiff(mustSettings(t, s, orgB), &d, false); diff != "" {
		t.Errorf("org B after org A's put: %s, want the defaults", diff)
	}
	b := vigil.DefaultEnrichmentSettings()
	b.CacheTTLHours, b.UpdatedAt = 1, at(2*time.Hour)
	mustPutSettings(t, s, orgB, &b)
	if diff := settingsDiff(mustSettings(t, s, orgA), &a, true); diff != "" {
		t.Errorf("org A after org B's put: %s", diff)
	}
	if diff := settingsDiff(mustSettings(t, s, orgB), &b, true); diff != "" {
		t.Errorf("org B: %s", diff)
	}
}
