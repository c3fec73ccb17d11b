package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func suppressionTests() []test {
	return []test{
		{"CreateGet", testSuppressionCreateGet},
		{"ListNewestFirst", testSuppressionList},
		{"UpdatePartial", testSuppressionUpdate},
		{"Delete", testSuppressionDelete},
		{"Limit", testSuppressionLimit},
		{"CountOncePerSignal", testSuppressionCount},
		{"CountOfOrgOnly", testSuppressionCountTenancy},
		{"PruneForgetsCounted", testSuppressionPrune},
	}
}

// newSuppression returns an enabled suppression created at created.
func newSuppression(name string, created time.Time) *vigil.Suppression {
	return &vigil.Suppression{ID: vigil.NewID(), Name: name, Enabled: true, Reason: "benign",
		Conditions: json.RawMessage(`{"field":"signal.source_ip","op":"cidr","value":"10.9.0.0/16"}`),
		CreatedBy:  "analyst@example", CreatedAt: created, UpdatedAt: created}
}

func mustCreateSuppression(t *testing.T, s vigil.Store, org string, sp *vigil.Suppression) *vigil.Suppression {
	t.Helper()
	if err := s.CreateSuppression(t.Context(), org, sp); err != nil {
		t.Fatalf("CreateSuppression(%s): %v", sp.Name, err)
	}
	return sp
}

func mustGetSuppression(t *testing.T, s vigil.Store, org, id string) *vigil.Suppression {
	t.Helper()
	sp, err := s.GetSuppression(t.Context(), org, id)
	if err != nil {
		t.Fatalf("GetSuppression(%s): %v", id, err)
	}
	return sp
}

// suppressionDiff returns how got differs from want, or "".
func suppressionDiff(got, want *vigil.Suppression) string {
	switch {
	case got.ID != want.ID || got.OrgID != want.OrgID:
		return "id/org " + got.ID + "/" + got.OrgID + ", want " + want.ID + "/" + want.OrgID
	case got.Name != want.Name || got.Reason != want.Reason || got.CreatedBy != want.CreatedBy:
		return "name/reason/created_by " + got.Name + "/" + got.Reason + "/" + got.CreatedBy
	case got.Enabled != want.Enabled:
		return "enabled differs"
	case !jsonEqual(got.Conditions, want.Conditions):
		return "conditions " + string(got.Conditions) + ", want " + string(want.Conditions)
	case !timePtrEqual(got.ExpiresAt, want.ExpiresAt):
		return "expires_at " + timePtrString(got.ExpiresAt) + ", want " + timePtrString(want.ExpiresAt)
	case got.SuppressedCount != want.SuppressedCount || !timePtrEqual(got.LastSuppressedAt, want.LastSuppressedAt):
		return "count differs"
	case !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt):
		return "created_at/updated_at " + got.CreatedAt.String() + "/" + got.UpdatedAt.String()
	}
	return ""
}

func suppressionIDs(l []*vigil.Suppression) []string {
	out := []string{}
	for _, sp := range l {
		out = append(out, sp.ID)
	}
	return out
}

func testSuppressionCreateGet(t *testing.T, s Store) {
	org := vigil.NewID()
	exp := at(48 * time.Hour)
	sp := newSuppression("our scanner", at(time.Minute))
	sp.ExpiresAt = &exp
	mustCreateSuppression(t, s, org, sp)
	want := *sp
	want.OrgID = org
	if d := suppressionDiff(mustGetSuppression(t, s, org, sp.ID), &want); d != "" {
		t.Errorf("GetSuppression: %s", d)
	}
	never := newSuppression("noisy signature", at(2*time.Minute))
	never.Enabled = false
	mustCreateSuppression(t, s, org, never)
	if g := mustGetSuppression(t, s, org, never.ID); g.Enabled || g.ExpiresAt != nil || g.LastSuppressedAt != nil {
		t.Errorf("read back enabled=%v expires=%s last=%s, want false, nil, nil", g.Enabled, timePtrString(g.ExpiresAt), timePtrString(g.LastSuppressedAt))
	}
	_, err := s.GetSuppression(t.Context(), org, vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "GetSuppression of a missing suppression")
	_, err = s.GetSuppression(t.Context(), vigil.NewID(), sp.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetSuppression from another org")
}

func testSuppressionList(t *testing.T, s Store) {
	org := vigil.NewID()
	var made []*vigil.Suppression
	for _, m := range []int{3, 1, 4, 1, 5} {
		made = append(made, mustCreateSuppression(t, s, org, newSuppression("s", at(time.Duration(m)*time.Minute))))
	}
	mustCreateSuppression(t, s, vigil.NewID(), newSuppression("other org", at(time.Hour)))
	// Newest first, ties (the two at minute 1) by id descending.
	want := append(ids(made[4].ID, made[2].ID, made[0].ID), desc(made[1].ID, made[3].ID)...)
	for _, tc := range []struct {
		p    vigil.Page
		want []string
	}{
		{vigil.Page{}, want},
		{vigil.Page{Limit: 2}, want[:2]},
		{vigil.Page{Limit: 2, Offset: 2}, want[2:4]},
		{vigil.Page{Limit: 2, Offset: 5}, []string{}},
	} {
		list, total, err := s.ListSuppressions(t.Context(), org, tc.p)
		if err != nil {
			t.Fatalf("ListSuppressions: %v", err)
		}
		if total != 5 || !slices.Equal(suppressionIDs(list), tc.want) {
			t.Errorf("ListSuppressions(%+v) = %v (total %d), want %v (total 5)", tc.p, suppressionIDs(list), total, tc.want)
		}
	}
}

func testSuppressionUpdate(t *testing.T, s Store) {
	org := vigil.NewID()
	sp := mustCreateSuppression(t, s, org, newSuppression("scanner", at(0)))
	off, name := false, "renamed"
	exp := at(time.Hour)
	cond := json.RawMessage(`{"field":"signal.user","op":"eq","value":"backup"}`)
	got, err := s.UpdateSuppression(t.Context(), org, sp.ID, vigil.SuppressionUpdate{Enabled: &off, Name: &name,
		Conditions: &cond, SetExpiresAt: true, ExpiresAt: &exp}, at(time.Minute))
	if err != nil {
		t.Fatalf("UpdateSuppression: %v", err)
	}
	want := *sp
	want.OrgID, want.Enabled, want.Name, want.Conditions, want.ExpiresAt, want.UpdatedAt = org, false, name, cond, &exp, at(time.Minute)
	if d := suppressionDiff(got, &want); d != "" {
		t.Errorf("UpdateSuppression returned: %s", d)
	}
	if d := suppressionDiff(mustGetSuppression(t, s, org, sp.ID), &want); d != "" {
		t.Errorf("after UpdateSuppression: %s", d)
	}
	// Fields not named stay; an expiry set to nil is cleared.
	reason := "why"
	got, err = s.UpdateSuppression(t.Context(), org, sp.ID, vigil.SuppressionUpdate{Reason: &reason, SetExpiresAt: true}, at(2*time.Minute))
	if err != nil {
		t.Fatalf("UpdateSuppression: %v", err)
	}
	if got.Reason != "why" || got.ExpiresAt != nil || got.Name != name || got.Enabled {
		t.Errorf("partial update: %+v", got)
	}
	_, err = s.UpdateSuppression(t.Context(), vigil.NewID(), sp.ID, vigil.SuppressionUpdate{Name: &name}, at(3*time.Minute))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateSuppression from another org")
}

func testSuppressionDelete(t *testing.T, s Store) {
	org := vigil.NewID()
	sp := mustCreateSuppression(t, s, org, newSuppression("scanner", at(0)))
	wantCode(t, s.DeleteSuppression(t.Context(), vigil.NewID(), sp.ID), vigil.ENOTFOUND, "DeleteSuppression from another org")
	if err := s.DeleteSuppression(t.Context(), org, sp.ID); err != nil {
		t.Fatalf("DeleteSuppression: %v", err)
	}
	_, err := s.GetSuppression(t.Context(), org, sp.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetSuppression after delete")
	wantCode(t, s.DeleteSuppression(t.Context(), org, sp.ID), vigil.ENOTFOUND, "DeleteSuppression twice")
	// What it had counted goes with it.
	fresh, err := s.CountSuppressed(t.Context(), org, []vigil.SuppressedSignal{{SuppressionID: sp.ID, Detector: "d", Key: "k", ArtifactID: "a"}}, at(time.Minute))
	if err != nil || len(fresh) != 0 {
		t.Errorf("CountSuppressed for a deleted suppression = %v, %v; want nothing counted", fresh, err)
	}
}

func testSuppressionLimit(t *testing.T, s Store) {
	org := vigil.NewID()
	for i := 0; i < vigil.MaxSuppressions; i++ {
		mustCreateSuppression(t, s, org, newSuppression("s", at(time.Duration(i)*time.Second)))
	}
	err := s.CreateSuppression(t.Context(), org, newSuppression("one too many", at(time.Hour)))
	wantCode(t, err, vigil.ECONFLICT, "CreateSuppression over the limit")
	// Another org is not limited by this one's.
	mustCreateSuppression(t, s, vigil.NewID(), newSuppression("other", at(0)))
}

func testSuppressionCount(t *testing.T, s Store) {
	org := vigil.NewID()
	a := mustCreateSuppression(t, s, org, newSuppression("a", at(0)))
	b := mustCreateSuppression(t, s, org, newSuppression("b", at(time.Second)))
	hits := []vigil.SuppressedSignal{
		{SuppressionID: a.ID, Detector: "port_scan", Key: "10.9.0.1", ArtifactID: "art-1"},
		{SuppressionID: a.ID, Detector: "port_scan", Key: "10.9.0.1", ArtifactID: "art-2"},
		{SuppressionID: a.ID, Detector: "host_sweep", Key: "10.9.0.1", ArtifactID: "art-2"}, // another detector's signal
		{SuppressionID: b.ID, Detector: "suricata_alert", Key: "1|10.9.0.1", ArtifactID: "art-3"},
		{SuppressionID: a.ID, Detector: "port_scan", Key: "10.9.0.1", ArtifactID: "art-1"}, // twice in one batch
	}
	fresh, err := s.CountSuppressed(t.Context(), org, hits, at(time.Minute))
	if err != nil {
		t.Fatalf("CountSuppressed: %v", err)
	}
	if len(fresh) != 4 {
		t.Errorf("CountSuppressed returned %d fresh hits %v, want 4", len(fresh), fresh)
	}
	wantCount := func(sp *vigil.Suppression, n int64, last *time.Time, what string) {
		t.Helper()
		g := mustGetSuppression(t, s, org, sp.ID)
		if g.SuppressedCount != n || !timePtrEqual(g.LastSuppressedAt, last) {
			t.Errorf("%s: %s counted %d, last %s; want %d, %s", what, sp.Name, g.SuppressedCount, timePtrString(g.LastSuppressedAt), n, timePtrString(last))
		}
	}
	t1, t2 := at(time.Minute), at(2*time.Minute)
	wantCount(a, 3, &t1, "first batch")
	wantCount(b, 1, &t1, "first batch")
	// The batch delivered again counts nothing; a new signal counts.
	again := append(slices.Clone(hits[:2]), vigil.SuppressedSignal{SuppressionID: a.ID, Detector: "port_scan", Key: "10.9.0.1", ArtifactID: "art-4"})
	fresh, err = s.CountSuppressed(t.Context(), org, again, t2)
	if err != nil {
		t.Fatalf("CountSuppressed: %v", err)
	}
	if len(fresh) != 1 || fresh[0].ArtifactID != "art-4" {
		t.Errorf("redelivery: fresh %v, want art-4 alone", fresh)
	}
	wantCount(a, 4, &t2, "redelivery")
	wantCount(b, 1, &t1, "redelivery")
	if fresh, err := s.CountSuppressed(t.Context(), org, nil, t2); err != nil || len(fresh) != 0 {
		t.Errorf("CountSuppressed(nothing) = %v, %v", fresh, err)
	}
	// An update keeps the count.
	name := "renamed"
	if g, err := s.UpdateSuppression(t.Context(), org, a.ID, vigil.SuppressionUpdate{Name: &name}, at(time.Hour)); err != nil || g.SuppressedCount != 4 {
		t.Errorf("UpdateSuppression: count %v, %v; want 4 kept", g, err)
	}
}

func testSuppressionCountTenancy(t *testing.T, s Store) {
	org, other := vigil.NewID(), vigil.NewID()
	theirs := mustCreateSuppression(t, s, other, newSuppression("theirs", at(0)))
	fresh, err := s.CountSuppressed(t.Context(), org, []vigil.SuppressedSignal{
		{SuppressionID: theirs.ID, Detector: "d", Key: "k", ArtifactID: "a"},
		{SuppressionID: vigil.NewID(), Detector: "d", Key: "k", ArtifactID: "a"},
	}, at(time.Minute))
	if err != nil || len(fresh) != 0 {
		t.Errorf("CountSuppressed of another org's suppression = %v, %v; want nothing", fresh, err)
	}
	if g := mustGetSuppression(t, s, other, theirs.ID); g.SuppressedCount != 0 || g.LastSuppressedAt != nil {
		t.Errorf("another org's suppression counted %d", g.SuppressedCount)
	}
}

func testSuppressionPrune(t *testing.T, s Store) {
	org := vigil.NewID()
	sp := mustCreateSuppression(t, s, org, newSuppression("a", at(0)))
	hit := []vigil.SuppressedSignal{{SuppressionID: sp.ID, Detector: "d", Key: "k", ArtifactID: "a"}}
	if _, err := s.CountSuppressed(t.Context(), org, hit, at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PruneSignals(t.Context(), vigil.SignalRetention{Before: at(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if fresh, _ := s.CountSuppressed(t.Context(), org, hit, at(2*time.Minute)); len(fresh) != 0 {
		t.Errorf("a hit newer than the prune counted again")
	}
	if _, err := s.PruneSignals(t.Context(), vigil.SignalRetention{Before: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// Its record forgotten, the same signal would count again: pruning
	// keeps what a redelivery within the retention needs, and the total.
	fresh, err := s.CountSuppressed(t.Context(), org, hit, at(2*time.Hour))
	if err != nil || len(fresh) != 1 {
		t.Errorf("after the prune: fresh %v, %v; want the hit recorded anew", fresh, err)
	}
	if g := mustGetSuppression(t, s, org, sp.ID); g.SuppressedCount != 2 {
		t.Errorf("count %d after prune and a new hit, want 2", g.SuppressedCount)
	}
}
