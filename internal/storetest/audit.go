package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// Audit: a write made for a request that carries an audit trail records
// one entry per change in its own transaction (nothing when it fails or
// changes nothing), with the changed fields before and after and never a
// secret; the log is read per org, newest first, filtered, and pruned.

func auditTests() []test {
	return []test{
		{"EveryWrite", testAuditEveryWrite},
		{"OnlyWhatCommits", testAuditOnlyWhatCommits},
		{"FiltersAndOrder", testAuditFilters},
		{"OrgIsolation", testAuditTenancy},
		{"Prune", testAuditPrune},
	}
}

// auditCtx returns ctx carrying a trail of actor's request at t.
func auditCtx(ctx context.Context, actor, method, path string, t time.Time) context.Context {
	return vigil.WithAuditTrail(vigil.WithActor(ctx, actor), &vigil.AuditTrail{Actor: actor, Method: method, Path: path, At: t})
}

// auditLine renders an entry as a test compares it.
func auditLine(e *vigil.AuditEntry) string {
	return fmt.Sprintf("%s %s %s %s/%s before=%s after=%s", e.Actor, e.Method, e.Path, e.ResourceType, e.ResourceID, e.Before, e.After)
}

func mustAudit(t *testing.T, s Store, org string, f vigil.AuditFilter) ([]*vigil.AuditEntry, int) {
	t.Helper()
	if f.Limit == 0 {
		f.Limit = 100
	}
	es, total, err := s.ListAudit(t.Context(), org, f)
	if err != nil {
		t.Fatalf("ListAudit: %v", err)
	}
	return es, total
}

// field returns member name of the JSON object raw, as compact JSON.
func field(t *testing.T, raw json.RawMessage, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("entry side %s: %v", raw, err)
	}
	return string(m[name])
}

// testAuditEveryWrite makes one change of every kind the API makes and
// reads back its entry: each store method that writes for a request
// records it.
func testAuditEveryWrite(t *testing.T, s Store) {
	org := vigil.NewID()
	ctx := t.Context()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"))
	arts := mustArtifactIDs(t, s, org, 1)
	rule := newRule("escalate", 1, at(0))
	role := &vigil.Role{ID: vigil.NewID(), Name: "triage", Permissions: []string{vigil.PermIncidentsRead}, CreatedAt: at(0), UpdatedAt: at(0)}
	sup := newSuppression("scanner", at(0))
	det := newDetectionRule("ssh", "", "ssh", at(0))
	key := &vigil.APIKey{ID: vigil.NewID(), Name: "shipper", Permissions: []string{vigil.APIKeyPermission}, Hash: []byte("hash-of-secret"),
		CreatedBy: "ana", CreatedAt: at(0)}
	hook := &vigil.Webhook{ID: vigil.NewID(), URL: "https://u:url-password@hooks.example/in?token=url-token", EventTypes: []string{vigil.EventCreated},
		Enabled: true, Secret: "whsec-store-secret", CreatedBy: "ana", CreatedAt: at(0), UpdatedAt: at(0)}
	o := obs(vigil.SeverityMedium, at(0), ids(n[0]), ids(n[0]), ids(arts[0]))
	var comment *vigil.Comment
	set := vigil.DefaultEnrichmentSettings()
	set.DNSEnabled = false

	// Each step is one write and the entry it must leave: resource, id,
	// and one changed field with its value before and after ("" absent).
	type want struct{ typ, id, field, before, after string }
	steps := []struct {
		name  string
		write func(ctx context.Context) error
		want  func() want
	}{
		{"create rule", func(ctx context.Context) error { return s.CreateRule(ctx, org, rule) },
			func() want { return want{vigil.AuditClassificationRule, rule.ID, "name", "", `"escalate"`} }},
		{"update rule", func(ctx context.Context) error {
			_, err := s.UpdateRule(ctx, org, rule.ID, vigil.RuleUpdate{Priority: ptr(5)}, at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditClassificationRule, rule.ID, "priority", "1", "5"} }},
		{"delete rule", func(ctx context.Context) error { return s.DeleteRule(ctx, org, rule.ID) },
			func() want { return want{vigil.AuditClassificationRule, rule.ID, "priority", "5", ""} }},
		{"create role", func(ctx context.Context) error { return s.CreateRole(ctx, org, role) },
			func() want { return want{vigil.AuditRole, role.ID, "name", "", `"triage"`} }},
		{"update role", func(ctx context.Context) error {
			_, err := s.UpdateRole(ctx, org, role.ID, vigil.RoleUpdate{Name: ptr("tier1")}, at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditRole, role.ID, "name", `"triage"`, `"tier1"`} }},
		{"delete role", func(ctx context.Context) error { return s.DeleteRole(ctx, org, role.ID) },
			func() want { return want{vigil.AuditRole, role.ID, "name", `"tier1"`, ""} }},
		{"create suppression", func(ctx context.Context) error { return s.CreateSuppression(ctx, org, sup) },
			func() want { return want{vigil.AuditSuppression, sup.ID, "reason", "", `"benign"`} }},
		{"update suppression", func(ctx context.Context) error {
			_, err := s.UpdateSuppression(ctx, org, sup.ID, vigil.SuppressionUpdate{Enabled: ptr(false)}, at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditSuppression, sup.ID, "enabled", "true", "false"} }},
		{"delete suppression", func(ctx context.Context) error { return s.DeleteSuppression(ctx, org, sup.ID) },
			func() want { return want{vigil.AuditSuppression, sup.ID, "enabled", "false", ""} }},
		{"create detection rule", func(ctx context.Context) error { return s.CreateDetectionRule(ctx, org, det) },
			func() want { return want{vigil.AuditDetectionRule, det.ID, "title", "", `"ssh"`} }},
		{"update detection rule", func(ctx context.Context) error {
			_, err := s.UpdateDetectionRule(ctx, org, det.ID, vigil.DetectionRuleUpdate{Enabled: ptr(false)}, at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditDetectionRule, det.ID, "enabled", "true", "false"} }},
		{"delete detection rule", func(ctx context.Context) error { return s.DeleteDetectionRule(ctx, org, det.ID) },
			func() want { return want{vigil.AuditDetectionRule, det.ID, "enabled", "false", ""} }},
		{"enable starter rule", func(ctx context.Context) error {
			return s.SetStarterRuleState(ctx, org, "ssh-brute-force", true, at(time.Minute))
		},
			func() want { return want{vigil.AuditStarterRule, "ssh-brute-force", "enabled", "null", "true"} }},
		{"disable starter rule", func(ctx context.Context) error {
			return s.SetStarterRuleState(ctx, org, "ssh-brute-force", false, at(2*time.Minute))
		}, func() want { return want{vigil.AuditStarterRule, "ssh-brute-force", "enabled", "true", "false"} }},
		{"create webhook", func(ctx context.Context) error { return s.CreateWebhook(ctx, org, hook) },
			func() want {
				return want{vigil.AuditWebhook, hook.ID, "url", "", `"https://****@hooks.example/in?token=****"`}
			}},
		{"update webhook", func(ctx context.Context) error {
			_, err := s.UpdateWebhook(ctx, org, hook.ID, vigil.WebhookUpdate{Enabled: ptr(false)}, at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditWebhook, hook.ID, "enabled", "true", "false"} }},
		{"delete webhook", func(ctx context.Context) error { return s.DeleteWebhook(ctx, org, hook.ID) },
			func() want { return want{vigil.AuditWebhook, hook.ID, "enabled", "false", ""} }},
		{"create API key", func(ctx context.Context) error { return s.CreateAPIKey(ctx, org, key) },
			func() want { return want{vigil.AuditAPIKey, key.ID, "name", "", `"shipper"`} }},
		{"revoke API key", func(ctx context.Context) error {
			_, err := s.RevokeAPIKey(ctx, org, key.ID, at(time.Minute))
			return err
		}, func() want {
			return want{vigil.AuditAPIKey, key.ID, "revoked_at", "null", `"` + at(time.Minute).Format(time.RFC3339Nano) + `"`}
		}},
		{"put settings", func(ctx context.Context) error { return s.PutEnrichmentSettings(ctx, org, &set) },
			func() want { return want{vigil.AuditSettings, org, "dns_enabled", "true", "false"} }},
		{"record observation", func(ctx context.Context) error { return recordObservation(ctx, s, org, o, "first", policy) },
			func() want { return want{vigil.AuditObservation, o.ID, "severity", "", `"medium"`} }},
		{"update observation", func(ctx context.Context) error {
			_, err := updateObservation(ctx, s, org, o.ID, vigil.ObservationUpdate{Severity: ptr(vigil.SeverityHigh)}, at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditObservation, o.ID, "severity", `"medium"`, `"high"`} }},
		{"set status", func(ctx context.Context) error {
			_, err := s.SetIncidentStatus(ctx, org, o.IncidentID, vigil.StatusInvestigating, "ana", at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditIncident, o.IncidentID, "status", "1", "2"} }},
		{"assign", func(ctx context.Context) error {
			_, err := s.UpdateIncidentCase(ctx, org, o.IncidentID, vigil.CaseUpdate{Assignee: ptr("bo"), Tags: []string{"c2"}}, "ana", at(time.Minute))
			return err
		}, func() want { return want{vigil.AuditIncident, o.IncidentID, "assignee", `""`, `"bo"`} }},
		{"comment", func(ctx context.Context) error {
			comment = &vigil.Comment{ID: vigil.NewID(), IncidentID: o.IncidentID, Author: "ana", Body: "looks bad", CreatedAt: at(time.Minute), UpdatedAt: at(time.Minute)}
			return s.CreateComment(ctx, org, comment)
		}, func() want { return want{vigil.AuditComment, comment.ID, "body", "", `"looks bad"`} }},
		{"edit comment", func(ctx context.Context) error {
			_, err := s.UpdateComment(ctx, org, o.IncidentID, comment.ID, "looks fine", at(2*time.Minute))
			return err
		}, func() want { return want{vigil.AuditComment, comment.ID, "body", `"looks bad"`, `"looks fine"`} }},
		{"delete comment", func(ctx context.Context) error { return s.DeleteComment(ctx, org, o.IncidentID, comment.ID) },
			func() want { return want{vigil.AuditComment, comment.ID, "body", `"looks fine"`, ""} }},
		{"delete observation", func(ctx context.Context) error { return deleteObservation(ctx, s, org, o.ID) },
			func() want { return want{vigil.AuditObservation, o.ID, "severity", `"high"`, ""} }},
	}
	for i, st := range steps {
		path := fmt.Sprintf("/v1/step/%d", i)
		if err := st.write(auditCtx(ctx, "ana", "POST", path, at(time.Duration(i)*time.Second))); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		es, _ := mustAudit(t, s, org, vigil.AuditFilter{})
		if len(es) != i+1 {
			t.Fatalf("%s: %d entries after %d writes", st.name, len(es), i+1)
		}
		e, w := es[0], st.want()
		if e.Actor != "ana" || e.Method != "POST" || e.Path != path || e.OrgID != org || e.ResourceType != w.typ || e.ResourceID != w.id ||
			!e.At.Equal(at(time.Duration(i)*time.Second)) {
			t.Errorf("%s: entry %s at %v, want ana POST %s %s/%s", st.name, auditLine(e), e.At, path, w.typ, w.id)
			continue
		}
		for side, raw := range map[string]json.RawMessage{"before": e.Before, "after": e.After} {
			exp := w.before
			if side == "after" {
				exp = w.after
			}
			if exp == "" {
				if string(raw) != "null" {
					t.Errorf("%s: %s %s, want null", st.name, side, raw)
				}
				continue
			}
			if got := field(t, raw, w.field); got != exp {
				t.Errorf("%s: %s.%s = %s, want %s (entry %s)", st.name, side, w.field, got, exp, auditLine(e))
			}
		}
		if strings.Contains(string(e.Before)+string(e.After), "updated_at") {
			t.Errorf("%s: entry records updated_at: %s", st.name, auditLine(e))
		}
	}
	// An update records the fields it changed, not the whole resource.
	es, _ := mustAudit(t, s, org, vigil.AuditFilter{ResourceType: vigil.AuditRole})
	if len(es) != 3 || !jsonEqual(es[1].Before, json.RawMessage(`{"name":"triage"}`)) || !jsonEqual(es[1].After, json.RawMessage(`{"name":"tier1"}`)) {
		t.Errorf("role entries %q, want the update's before and after to hold only the name", lines(es))
	}
	// No entry holds the webhook's secret or the credentials of its URL.
	for _, e := range mustAuditLines(t, s, org, vigil.AuditFilter{}) {
		for _, secret := range []string{"whsec-store-secret", "url-password", "url-token"} {
			if strings.Contains(e, secret) {
				t.Errorf("entry records %s: %s", secret, e)
			}
		}
	}
	// The API key's entries hold no trace of its hash.
	for _, e := range mustAuditLines(t, s, org, vigil.AuditFilter{ResourceType: vigil.AuditAPIKey}) {
		if strings.Contains(e, "hash") || strings.Contains(e, "aGFzaC1vZi1zZWNyZXQ") {
			t.Errorf("API key entry records its hash: %s", e)
		}
	}
}

func lines(es []*vigil.AuditEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = auditLine(e)
	}
	return out
}

func mustAuditLines(t *testing.T, s Store, org string, f vigil.AuditFilter) []string {
	t.Helper()
	es, _ := mustAudit(t, s, org, f)
	return lines(es)
}

// testAuditOnlyWhatCommits: a write that fails, one that changes
// nothing, and one made without a trail record nothing; a transaction
// that failed leaves nothing for the next one of its request.
func testAuditOnlyWhatCommits(t *testing.T, s Store) {
	org := vigil.NewID()
	ctx := auditCtx(t.Context(), "ana", "POST", "/v1/roles", at(0))
	role := &vigil.Role{ID: vigil.NewID(), Name: "triage", Permissions: []string{}, CreatedAt: at(0), UpdatedAt: at(0)}
	if err := s.CreateRole(t.Context(), org, role); err != nil { // no trail: Vigil's own write
		t.Fatal(err)
	}
	dup := &vigil.Role{ID: vigil.NewID(), Name: "triage", Permissions: []string{}, CreatedAt: at(0), UpdatedAt: at(0)}
	wantCode(t, s.CreateRole(ctx, org, dup), vigil.ECONFLICT, "CreateRole of a used name")
	wantCode(t, s.DeleteRole(ctx, org, vigil.NewID()), vigil.ENOTFOUND, "DeleteRole of no role")
	if _, err := s.UpdateRole(ctx, org, role.ID, vigil.RoleUpdate{Name: ptr("triage")}, at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := mustAuditLines(t, s, org, vigil.AuditFilter{}); len(got) != 0 {
		t.Fatalf("entries %q after writes that failed, changed nothing or had no trail", got)
	}
	// The conflict's entry, rolled back, is not recorded by the next
	// write of the same request either.
	if err := s.DeleteRole(ctx, org, role.ID); err != nil {
		t.Fatal(err)
	}
	if got := mustAuditLines(t, s, org, vigil.AuditFilter{}); len(got) != 1 || !strings.Contains(got[0], "role/"+role.ID) {
		t.Errorf("entries %q, want only the delete of %s", got, role.ID)
	}
}

func testAuditFilters(t *testing.T, s Store) {
	org := vigil.NewID()
	var roles []string
	for i, actor := range []string{"ana", "bo", "ana", "cy"} {
		r := &vigil.Role{ID: vigil.NewID(), Name: fmt.Sprint("role", i), Permissions: []string{}, CreatedAt: at(0), UpdatedAt: at(0)}
		if err := s.CreateRole(auditCtx(t.Context(), actor, "POST", "/v1/roles", at(time.Duration(i)*time.Hour)), org, r); err != nil {
			t.Fatal(err)
		}
		roles = append(roles, r.ID)
	}
	sup := newSuppression("x", at(0))
	if err := s.CreateSuppression(auditCtx(t.Context(), "bo", "POST", "/v1/suppressions", at(4*time.Hour)), org, sup); err != nil {
		t.Fatal(err)
	}
	ids := func(es []*vigil.AuditEntry) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.ResourceID)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		f     vigil.AuditFilter
		want  []string
		total int
	}{
		{"all, newest first", vigil.AuditFilter{}, []string{sup.ID, roles[3], roles[2], roles[1], roles[0]}, 5},
		{"actor", vigil.AuditFilter{Actor: "ana"}, []string{roles[2], roles[0]}, 2},
		{"resource type", vigil.AuditFilter{ResourceType: vigil.AuditSuppression}, []string{sup.ID}, 1},
		{"resource id", vigil.AuditFilter{ResourceType: vigil.AuditRole, ResourceID: roles[1]}, []string{roles[1]}, 1},
		{"from inclusive, to exclusive", vigil.AuditFilter{From: at(time.Hour), To: at(3 * time.Hour)}, []string{roles[2], roles[1]}, 2},
		{"page", vigil.AuditFilter{Page: vigil.Page{Limit: 2, Offset: 1}}, []string{roles[3], roles[2]}, 5},
		{"none", vigil.AuditFilter{Actor: "nobody"}, []string{}, 0},
	} {
		es, total := mustAudit(t, s, org, tc.f)
		if got := ids(es); !slices.Equal(got, tc.want) || total != tc.total {
			t.Errorf("%s: %v (total %d), want %v (total %d)", tc.name, got, total, tc.want, tc.total)
		}
	}
}

func testAuditTenancy(t *testing.T, s Store) {
	a, b := vigil.NewID(), vigil.NewID()
	r := &vigil.Role{ID: vigil.NewID(), Name: "triage", Permissions: []string{}, CreatedAt: at(0), UpdatedAt: at(0)}
	if err := s.CreateRole(auditCtx(t.Context(), "ana", "POST", "/v1/roles", at(0)), a, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []vigil.AuditFilter{{}, {Actor: "ana"}, {ResourceType: vigil.AuditRole, ResourceID: r.ID}} {
		if es, total := mustAudit(t, s, b, f); len(es) != 0 || total != 0 {
			t.Errorf("org b lists %d of org a's entries (filter %+v)", total, f)
		}
	}
	if _, total := mustAudit(t, s, a, vigil.AuditFilter{}); total != 1 {
		t.Errorf("org a lists %d entries, want 1", total)
	}
}

func testAuditPrune(t *testing.T, s Store) {
	a, b := vigil.NewID(), vigil.NewID()
	for i, org := range []string{a, b, a} {
		r := &vigil.Role{ID: vigil.NewID(), Name: fmt.Sprint("r", i), Permissions: []string{}, CreatedAt: at(0), UpdatedAt: at(0)}
		if err := s.CreateRole(auditCtx(t.Context(), "ana", "POST", "/v1/roles", at(time.Duration(i)*24*time.Hour)), org, r); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneAudit(t.Context(), at(48*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PruneAudit: %d (err %v), want the 2 entries of both orgs before the cut", n, err)
	}
	if _, total := mustAudit(t, s, a, vigil.AuditFilter{}); total != 1 {
		t.Errorf("org a keeps %d entries, want the one at the cut", total)
	}
	if _, total := mustAudit(t, s, b, vigil.AuditFilter{}); total != 0 {
		t.Errorf("org b keeps %d entries, want none", total)
	}
}
