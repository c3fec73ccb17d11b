// Package storetest is the conformance suite of vigil.Store and of the
// correlation transactions (correlate.Store), driven through
// correlate.Engine. Every engine (SQLite, PostgreSQL) runs the same named
// subtests, so that what a user sees through the API does not depend on
// the database behind it.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// Run runs the suite. open must return a fresh, empty store on each call;
// closing it is the caller's business (typically a t.Cleanup in open).
// Every leaf subtest gets its own store, so tests never see each other's
// records.
func Run(t *testing.T, open func(t *testing.T) Store) {
	RunGroups(t, open)
	t.Run("Deployment", func(t *testing.T) { deploymentTests(t, func(t *testing.T) vigil.Store { return open(t) }) })
}

// RunGroups runs the suite's groups named (all when none is), without
// Deployment: a store that sends only some of the contract elsewhere
// (artifacts to VictoriaLogs) runs the groups that reach that part.
func RunGroups(t *testing.T, open func(t *testing.T) Store, names ...string) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Ping", []test{{"Reachable", testPing}}},
		{"Tenancy", tenancyTests()},
		{"Artifacts", artifactTests()},
		{"Nodes", nodeTests()},
		{"Observations", observationTests()},
		{"Correlation", correlationTests()},
		{"Headline", headlineTests()},
		{"Incidents", incidentTests()},
		{"History", historyTests()},
		{"CaseWork", caseWorkTests()},
		{"Audit", auditTests()},
		{"Rules", ruleTests()},
		{"Roles", roleTests()},
		{"APIKeys", apiKeyTests()},
		{"Webhooks", webhookTests()},
		{"EnrichmentSettings", settingsTests()},
		{"Suppressions", suppressionTests()},
		{"DetectionRules", detectionRuleTests()},
		{"Detect", detectTests()},
		{"Rollups", rollupTests()},
		{"Cache", cacheTests()},
	}
	for _, g := range groups {
		if len(names) > 0 && !slices.Contains(names, g.name) {
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
			}
		})
	}
}

// RunArtifacts runs only the artifact tests (a store's search, under
// settings that change how it plans queries).
func RunArtifacts(t *testing.T, open func(t *testing.T) Store) {
	for _, tc := range artifactTests() {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// Store is what the suite tests: the store contract and the correlation
// transactions.
type Store interface {
	vigil.Store
	correlate.Store
}

// test is one leaf subtest, run against a fresh store.
type test struct {
	name string
	fn   func(t *testing.T, s Store)
}

func testPing(t *testing.T, s Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// base is the fixed origin of every time in the suite, at the precision
// the stores keep.
var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Truncate(time.Microsecond)

// at returns base + d.
func at(d time.Duration) time.Time { return base.Add(d) }

// policy is the default correlation policy (1 h window, hub limit 25).
var policy = vigil.DefaultCorrelationPolicy()

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, err error, code, what string) {
	t.Helper()
	if got := vigil.ErrorCode(err); got != code {
		t.Fatalf("%s: error code %q (err: %v), want %q", what, got, err, code)
	}
}

// --- artifacts ---

// newArtifact returns an artifact with a new ID, received at ts.
func newArtifact(source, raw string, ts time.Time) *vigil.Artifact {
	return &vigil.Artifact{
		ID: vigil.NewID(), Source: source, Raw: raw, Timestamp: ts, CreatedAt: ts,
		Metadata: json.RawMessage(`{}`),
	}
}

func mustInsertArtifacts(t *testing.T, s vigil.Store, org string, arts ...*vigil.Artifact) {
	t.Helper()
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatalf("InsertArtifacts: %v", err)
	}
}

// mustArtifactIDs stores n artifacts in org and returns their IDs.
func mustArtifactIDs(t *testing.T, s vigil.Store, org string, n int) []string {
	t.Helper()
	var arts []*vigil.Artifact
	var ids []string
	for i := range n {
		a := newArtifact("test", fmt.Sprintf("artifact number %d", i), at(time.Duration(i)*time.Second))
		arts = append(arts, a)
		ids = append(ids, a.ID)
	}
	mustInsertArtifacts(t, s, org, arts...)
	return ids
}

func mustSearch(t *testing.T, s vigil.Store, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int) {
	t.Helper()
	arts, total, err := s.SearchArtifacts(t.Context(), org, f)
	if err != nil {
		t.Fatalf("SearchArtifacts(%+v): %v", f, err)
	}
	return arts, total
}

// mustArtifact finds one artifact of org by ID.
func mustArtifact(t *testing.T, s vigil.Store, org, id string) *vigil.Artifact {
	t.Helper()
	arts, _ := mustSearch(t, s, org, vigil.ArtifactFilter{Page: vigil.Page{Limit: vigil.MaxLimit}})
	for _, a := range arts {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("artifact %s not found in org %s", id, org)
	return nil
}

// ArtifactIDs are the ids of as, in order.
func ArtifactIDs(as []*vigil.Artifact) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// --- nodes ---

func ipNode(v string) vigil.NodeRef   { return vigil.NodeRef{Type: vigil.NodeIP, Value: v, Key: true} }
func hostNode(v string) vigil.NodeRef { return vigil.NodeRef{Type: vigil.NodeHost, Value: v} }
func userNode(v string) vigil.NodeRef { return vigil.NodeRef{Type: vigil.NodeUser, Value: v} }

// mustNodes upserts refs in org and returns the node IDs in the same order.
func mustNodes(t *testing.T, s vigil.Store, org string, refs ...vigil.NodeRef) []string {
	t.Helper()
	nodes, err := s.UpsertNodes(t.Context(), org, refs)
	if err != nil {
		t.Fatalf("UpsertNodes: %v", err)
	}
	if len(nodes) != len(refs) {
		t.Fatalf("UpsertNodes returned %d nodes for %d refs", len(nodes), len(refs))
	}
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	return ids
}

// --- observations and incidents ---

// obs returns an observation of type "test.finding" created at created,
// naming nodes (of which keys are key nodes) and artifacts.
func obs(sev string, created time.Time, nodes, keys, arts []string) *vigil.Observation {
	return &vigil.Observation{
		ID: vigil.NewID(), Type: "test.finding", Description: "finding at " + created.Format(time.RFC3339),
		Severity: sev, NodeIDs: nodes, KeyNodeIDs: keys, ArtifactIDs: arts,
		CreatedAt: created, UpdatedAt: created,
	}
}

// ids is a shorthand for a list of IDs in a call.
func ids(xs ...string) []string { return xs }

// recordObservation, detect, updateObservation and deleteObservation run
// the correlation engine over s, without classification rules: what the
// store keeps is what the suite checks.
func recordObservation(ctx context.Context, s Store, org string, o *vigil.Observation, title string, p vigil.CorrelationPolicy) error {
	return correlate.NewEngine(s, nil, p).Record(ctx, org, o, title)
}

func detect(ctx context.Context, s Store, org string, ds []*vigil.Detection, p vigil.CorrelationPolicy) ([]correlate.Recorded, error) {
	return correlate.NewEngine(s, nil, p).Detect(ctx, org, ds)
}

func updateObservation(ctx context.Context, s Store, org, id string, u vigil.ObservationUpdate, now time.Time) (*vigil.Observation, error) {
	return correlate.NewEngine(s, nil, policy).Update(ctx, org, id, u, now)
}

func deleteObservation(ctx context.Context, s Store, org, id string) error {
	return correlate.NewEngine(s, nil, policy).Delete(ctx, org, id)
}

func mustRecord(t *testing.T, s Store, org string, o *vigil.Observation, p vigil.CorrelationPolicy) *vigil.Observation {
	t.Helper()
	if err := recordObservation(t.Context(), s, org, o, "incident of "+o.ID, p); err != nil {
		t.Fatalf("RecordObservation: %v", err)
	}
	if o.IncidentID == "" {
		t.Fatalf("RecordObservation left IncidentID empty")
	}
	return o
}

func mustObservation(t *testing.T, s vigil.Store, org, id string) *vigil.Observation {
	t.Helper()
	o, err := s.GetObservation(t.Context(), org, id)
	if err != nil {
		t.Fatalf("GetObservation(%s): %v", id, err)
	}
	return o
}

func mustListObservations(t *testing.T, s vigil.Store, org string, f vigil.ObservationFilter) ([]*vigil.Observation, int) {
	t.Helper()
	list, total, err := s.ListObservations(t.Context(), org, f)
	if err != nil {
		t.Fatalf("ListObservations(%+v): %v", f, err)
	}
	return list, total
}

func observationIDs(os []*vigil.Observation) []string {
	out := []string{}
	for _, o := range os {
		out = append(out, o.ID)
	}
	return out
}

func mustIncident(t *testing.T, s vigil.Store, org, id string) *vigil.Incident {
	t.Helper()
	i, err := s.GetIncident(t.Context(), org, id)
	if err != nil {
		t.Fatalf("GetIncident(%s): %v", id, err)
	}
	return i
}

func mustListIncidents(t *testing.T, s vigil.Store, org string, f vigil.IncidentFilter) ([]*vigil.Incident, int) {
	t.Helper()
	list, total, err := s.ListIncidents(t.Context(), org, f)
	if err != nil {
		t.Fatalf("ListIncidents(%+v): %v", f, err)
	}
	return list, total
}

func mustSetStatus(t *testing.T, s vigil.Store, org, id string, status int, actor string, now time.Time) *vigil.Incident {
	t.Helper()
	i, err := s.SetIncidentStatus(t.Context(), org, id, status, actor, now)
	if err != nil {
		t.Fatalf("SetIncidentStatus(%s, %d): %v", id, status, err)
	}
	return i
}

func incidentIDs(is []*vigil.Incident) []string {
	out := []string{}
	for _, i := range is {
		out = append(out, i.ID)
	}
	return out
}

func refIDs(rs []vigil.ObservationRef) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func nodeIDs(ns []vigil.Node) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// wantIncident checks the aggregates of incident id.
func wantIncident(t *testing.T, s vigil.Store, org, id string, obsIDs []string, nodes, artifacts int, sev string) *vigil.Incident {
	t.Helper()
	inc := mustIncident(t, s, org, id)
	if got := refIDs(inc.Observations); !sameSet(got, obsIDs) {
		t.Errorf("incident observations = %v, want %v", got, obsIDs)
	}
	if inc.NodeCount != nodes {
		t.Errorf("incident node_count = %d, want %d", inc.NodeCount, nodes)
	}
	if len(inc.Nodes) != nodes {
		t.Errorf("incident has %d nodes, want %d", len(inc.Nodes), nodes)
	}
	if inc.ArtifactCount != artifacts {
		t.Errorf("incident artifact_count = %d, want %d", inc.ArtifactCount, artifacts)
	}
	if inc.Severity != sev {
		t.Errorf("incident severity = %q, want %q", inc.Severity, sev)
	}
	return inc
}

// --- rules and roles ---

func mustCreateRule(t *testing.T, s vigil.Store, org string, r *vigil.Rule) *vigil.Rule {
	t.Helper()
	if err := s.CreateRule(t.Context(), org, r); err != nil {
		t.Fatalf("CreateRule(%s): %v", r.Name, err)
	}
	return r
}

func mustGetRule(t *testing.T, s vigil.Store, org, id string) *vigil.Rule {
	t.Helper()
	r, err := s.GetRule(t.Context(), org, id)
	if err != nil {
		t.Fatalf("GetRule(%s): %v", id, err)
	}
	return r
}

func mustListRules(t *testing.T, s vigil.Store, org string, p vigil.Page) ([]*vigil.Rule, int) {
	t.Helper()
	list, total, err := s.ListRules(t.Context(), org, p)
	if err != nil {
		t.Fatalf("ListRules(%+v): %v", p, err)
	}
	return list, total
}

func ruleIDs(rs []*vigil.Rule) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func mustCreateRole(t *testing.T, s vigil.Store, org, name string, perms ...string) *vigil.Role {
	t.Helper()
	r := &vigil.Role{ID: vigil.NewID(), Name: name, Permissions: perms, CreatedAt: base, UpdatedAt: base}
	if err := s.CreateRole(t.Context(), org, r); err != nil {
		t.Fatalf("CreateRole(%s): %v", name, err)
	}
	return r
}

func mustGetRole(t *testing.T, s vigil.Store, org, id string) *vigil.Role {
	t.Helper()
	r, err := s.GetRole(t.Context(), org, id)
	if err != nil {
		t.Fatalf("GetRole(%s): %v", id, err)
	}
	return r
}

func mustListRoles(t *testing.T, s vigil.Store, org string, p vigil.Page) ([]*vigil.Role, int) {
	t.Helper()
	list, total, err := s.ListRoles(t.Context(), org, p)
	if err != nil {
		t.Fatalf("ListRoles(%+v): %v", p, err)
	}
	return list, total
}

func roleIDs(rs []*vigil.Role) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func mustRolePermissions(t *testing.T, s vigil.Store, org string, names ...string) []string {
	t.Helper()
	perms, err := s.RolePermissions(t.Context(), org, names)
	if err != nil {
		t.Fatalf("RolePermissions(%v): %v", names, err)
	}
	return perms
}

// --- comparisons ---

// sameSet reports whether a and b hold the same strings, each once.
func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// jsonEqual reports whether a and b are the same JSON value, whatever
// their formatting (an engine may store JSON in a normalized form).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// isNull reports whether raw is an absent or null JSON value.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func timePtrString(p *time.Time) string {
	if p == nil {
		return "<nil>"
	}
	return p.String()
}

func timePtrEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func strPtrString(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// desc returns ids sorted descending: the tie-break order of lists.
func desc(ids ...string) []string {
	out := slices.Sorted(slices.Values(ids))
	slices.Reverse(out)
	return out
}
