package storetest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func apiKeyTests() []test {
	return []test{
		{"CreateGetLookup", testAPIKeyCreate},
		{"ListNewestFirst", testAPIKeyList},
		{"RevokeOnce", testAPIKeyRevoke},
		{"TouchMovesForward", testAPIKeyTouch},
	}
}

func newAPIKey(name string, created time.Time) *vigil.APIKey {
	h := sha256.Sum256([]byte("secret of " + name))
	return &vigil.APIKey{ID: vigil.NewID(), Name: name, Permissions: []string{vigil.PermSignalsWrite},
		Hash: h[:], CreatedBy: "admin@example", CreatedAt: created}
}

func mustCreateAPIKey(t *testing.T, s Store, org string, k *vigil.APIKey) *vigil.APIKey {
	t.Helper()
	if err := s.CreateAPIKey(t.Context(), org, k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	return k
}

// sameAPIKey fails t unless g is k as stored, with the given last use and
// revocation.
func sameAPIKey(t *testing.T, what string, g, k *vigil.APIKey, used, revoked *time.Time) {
	t.Helper()
	eq := func(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }
	if g.ID != k.ID || g.OrgID != k.OrgID || g.Name != k.Name || !slices.Equal(g.Permissions, k.Permissions) ||
		!bytes.Equal(g.Hash, k.Hash) || g.CreatedBy != k.CreatedBy || !g.CreatedAt.Equal(k.CreatedAt) ||
		!eq(g.LastUsedAt, used) || !eq(g.RevokedAt, revoked) {
		t.Errorf("%s: got %+v, want %+v used %v revoked %v", what, g, k, used, revoked)
	}
}

func testAPIKeyCreate(t *testing.T, s Store) {
	org := vigil.NewID()
	k := mustCreateAPIKey(t, s, org, newAPIKey("filebeat on web-01", at(time.Minute)))
	if k.OrgID != org {
		t.Fatalf("CreateAPIKey set org %q, want %q", k.OrgID, org)
	}
	g, err := s.GetAPIKey(t.Context(), org, k.ID)
	if err != nil {
		t.Fatalf("GetAPIKey: %v", err)
	}
	sameAPIKey(t, "GetAPIKey", g, k, nil, nil)
	g, err = s.LookupAPIKey(t.Context(), k.ID)
	if err != nil {
		t.Fatalf("LookupAPIKey: %v", err)
	}
	sameAPIKey(t, "LookupAPIKey", g, k, nil, nil)
	_, err = s.LookupAPIKey(t.Context(), vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "LookupAPIKey of an unknown id")
	_, err = s.GetAPIKey(t.Context(), org, vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "GetAPIKey of an unknown id")
	_, err = s.RevokeAPIKey(t.Context(), org, vigil.NewID(), at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "RevokeAPIKey of an unknown id")
}

func testAPIKeyList(t *testing.T, s Store) {
	org := vigil.NewID()
	var want []string
	for i := range 5 {
		k := mustCreateAPIKey(t, s, org, newAPIKey(fmt.Sprintf("key %d", i), at(time.Duration(i)*time.Minute)))
		want = append([]string{k.ID}, want...)
	}
	list, total, err := s.ListAPIKeys(t.Context(), org, vigil.Page{Limit: 2, Offset: 1})
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	if got := apiKeyIDs(list); total != 5 || !slices.Equal(got, want[1:3]) {
		t.Errorf("ListAPIKeys page = %v total %d, want %v total 5", got, total, want[1:3])
	}
	list, total, err = s.ListAPIKeys(t.Context(), vigil.NewID(), vigil.Page{})
	if err != nil || len(list) != 0 || total != 0 || list == nil {
		t.Errorf("ListAPIKeys of an org without keys = %v total %d (%v), want an empty list", list, total, err)
	}
}

func testAPIKeyRevoke(t *testing.T, s Store) {
	org := vigil.NewID()
	k := mustCreateAPIKey(t, s, org, newAPIKey("vector", base))
	g, err := s.RevokeAPIKey(t.Context(), org, k.ID, at(time.Hour))
	if err != nil {
		t.Fatalf("RevokeAPIKey: %v", err)
	}
	revoked := at(time.Hour)
	sameAPIKey(t, "RevokeAPIKey returned", g, k, nil, &revoked)
	// A second revocation keeps the first time.
	g, err = s.RevokeAPIKey(t.Context(), org, k.ID, at(2*time.Hour))
	if err != nil {
		t.Fatalf("RevokeAPIKey again: %v", err)
	}
	sameAPIKey(t, "RevokeAPIKey again", g, k, nil, &revoked)
	g, err = s.LookupAPIKey(t.Context(), k.ID)
	if err != nil {
		t.Fatalf("LookupAPIKey: %v", err)
	}
	sameAPIKey(t, "LookupAPIKey of a revoked key", g, k, nil, &revoked)
}

func testAPIKeyTouch(t *testing.T, s Store) {
	org := vigil.NewID()
	k := mustCreateAPIKey(t, s, org, newAPIKey("rsyslog", base))
	touch := func(d time.Duration) {
		t.Helper()
		if err := s.TouchAPIKey(t.Context(), org, k.ID, at(d)); err != nil {
			t.Fatalf("TouchAPIKey: %v", err)
		}
	}
	touch(2 * time.Minute)
	touch(time.Minute) // earlier: ignored
	g, err := s.GetAPIKey(t.Context(), org, k.ID)
	if err != nil {
		t.Fatalf("GetAPIKey: %v", err)
	}
	used := at(2 * time.Minute)
	sameAPIKey(t, "after touches", g, k, &used, nil)
}

// testTenancyAPIKeys: another org's key is missing for every call that
// takes an org, and its revocation or use by that org changes nothing.
func testTenancyAPIKeys(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	ka := mustCreateAPIKey(t, s, orgA, newAPIKey("org A key", base))
	kb := mustCreateAPIKey(t, s, orgB, newAPIKey("org B key", base))

	_, err := s.GetAPIKey(t.Context(), orgB, ka.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetAPIKey of org A's key by org B")
	_, err = s.RevokeAPIKey(t.Context(), orgB, ka.ID, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "RevokeAPIKey of org A's key by org B")
	if err := s.TouchAPIKey(t.Context(), orgB, ka.ID, at(time.Hour)); err != nil {
		t.Fatalf("TouchAPIKey: %v", err)
	}
	g, err := s.GetAPIKey(t.Context(), orgA, ka.ID)
	if err != nil {
		t.Fatalf("GetAPIKey: %v", err)
	}
	sameAPIKey(t, "org A's key after org B's calls", g, ka, nil, nil)
	list, total, err := s.ListAPIKeys(t.Context(), orgB, vigil.Page{})
	if err != nil || !slices.Equal(apiKeyIDs(list), ids(kb.ID)) || total != 1 {
		t.Errorf("org B's keys = %v (total %d, %v), want only %s", apiKeyIDs(list), total, err, kb.ID)
	}
}

func apiKeyIDs(ks []*vigil.APIKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.ID
	}
	return out
}
