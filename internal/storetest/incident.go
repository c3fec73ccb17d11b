package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func incidentTests() []test {
	return []test{
		{"GetDetails", testIncidentGet},
		{"GetMissing", testIncidentGetMissing},
		{"List", testIncidentList},
		{"StatusClassification", testIncidentClassification},
		{"StatusResolvedAt", testIncidentResolvedAt},
		{"StatusHistory", testIncidentHistory},
		{"SameStatusNoOp", testIncidentSameStatus},
		{"Parts", testIncidentParts},
		{"EventTimes", testIncidentEventTimes},
		{"EventOrder", testIncidentEventOrder},
	}
}

func testIncidentGet(t *testing.T, s Store) {
	org := vigil.NewID()
	refs := []vigil.NodeRef{ipNode("203.0.113.7"), hostNode("web-1")}
	n := mustNodes(t, s, org, refs...)
	a := mustArtifactIDs(t, s, org, 2)
	o1 := obs(vigil.SeverityMedium, at(0), n, n[:1], a[:1])
	o1.Type, o1.Description = "ssh.bruteforce", "brute force from 203.0.113.7"
	mustRecord(t, s, org, o1, policy)
	o2 := obs(vigil.SeverityHigh, at(time.Minute), n[:1], n[:1], a)
	o2.Type, o2.Description = "ssh.success_after_failures", "login after failures"
	mustRecord(t, s, org, o2, policy)
	mustSetStatus(t, s, org, o1.IncidentID, vigil.StatusInvestigating, "alice", at(2*time.Minute))

	inc := wantIncident(t, s, org, o1.IncidentID, ids(o1.ID, o2.ID), 2, 2, vigil.SeverityHigh)
	if inc.ID != o1.IncidentID || inc.OrgID != org || inc.Status != vigil.StatusInvestigating || inc.StatusName != "Investigating" {
		t.Errorf("incident id %s org %s status %d %q", inc.ID, inc.OrgID, inc.Status, inc.StatusName)
	}
	if !sameSet(nodeIDs(inc.Nodes), n) {
		t.Errorf("nodes = %v, want %v", nodeIDs(inc.Nodes), n)
	}
	for _, node := range inc.Nodes {
		i := slices.Index(n, node.ID)
		if i < 0 || node.Type != refs[i].Type || node.Value != refs[i].Value {
			t.Errorf("node %+v does not carry its type and value", node)
		}
		// The address is a key node, the host context.
		if i >= 0 && (node.Key == nil || *node.Key != (i == 0)) {
			t.Errorf("node %s key = %v, want %v", node.Value, node.Key, i == 0)
		}
	}
	for _, ref := range inc.Observations {
		var want *vigil.Observation
		for _, o := range []*vigil.Observation{o1, o2} {
			if o.ID == ref.ID {
				want = o
			}
		}
		if want == nil || ref.Type != want.Type || ref.Description != want.Description || ref.Severity != want.Severity {
			t.Errorf("observation ref %+v does not match the observation", ref)
		}
	}
	want := []vigil.StatusChange{{Actor: "alice", At: at(2 * time.Minute), From: vigil.StatusNew, To: vigil.StatusInvestigating}}
	if !historyEqual(inc.History, want) {
		t.Errorf("history = %+v, want %+v", inc.History, want)
	}
	if !inc.UpdatedAt.Equal(at(2*time.Minute)) || !inc.LastActivityAt.Equal(at(time.Minute)) {
		t.Errorf("updated %v last activity %v, want %v %v", inc.UpdatedAt, inc.LastActivityAt, at(2*time.Minute), at(time.Minute))
	}
}

func testIncidentGetMissing(t *testing.T, s Store) {
	org := vigil.NewID()
	_, err := s.GetIncident(t.Context(), org, vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "GetIncident of a missing incident")
	_, err = s.SetIncidentStatus(t.Context(), org, vigil.NewID(), vigil.StatusClosed, "alice", base)
	wantCode(t, err, vigil.ENOTFOUND, "SetIncidentStatus of a missing incident")
	_, err = s.GetObservation(t.Context(), org, vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "GetObservation of a missing observation")
	err = deleteObservation(t.Context(), s, org, vigil.NewID())
	wantCode(t, err, vigil.ENOTFOUND, "DeleteObservation of a missing observation")
}

func testIncidentList(t *testing.T, s Store) {
	org := vigil.NewID()
	// Incidents created at 0, 1h, 2h, 3h. The first has a key node, so it
	// stays active until after the last was created.
	n := mustNodes(t, s, org, ipNode("203.0.113.7"))
	sevs := []string{vigil.SeverityLow, vigil.SeverityHigh, vigil.SeverityMedium, vigil.SeverityHigh}
	var inc []string
	for i, sev := range sevs {
		var nodes []string
		if i == 0 {
			nodes = n
		}
		o := mustRecord(t, s, org, obs(sev, at(time.Duration(i)*time.Hour), nodes, nodes, nil), policy)
		inc = append(inc, o.IncidentID)
	}
	for _, d := range []time.Duration{50 * time.Minute, 100 * time.Minute, 150 * time.Minute, 200 * time.Minute} {
		if o := mustRecord(t, s, org, obs(vigil.SeverityLow, at(d), n, n, nil), policy); o.IncidentID != inc[0] {
			t.Fatalf("setup: observation at %v did not join the oldest incident", d)
		}
	}
	// Status changes and later activity do not reorder: lists go by creation.
	mustSetStatus(t, s, org, inc[1], vigil.StatusInvestigating, "alice", at(5*time.Hour))
	mustSetStatus(t, s, org, inc[0], vigil.StatusResolved, "alice", at(5*time.Hour))
	newest := ids(inc[3], inc[2], inc[1], inc[0])

	for _, tc := range []struct {
		name  string
		f     vigil.IncidentFilter
		want  []string
		total int
	}{
		{"all, newest first", vigil.IncidentFilter{}, newest, 4},
		{"status new", vigil.IncidentFilter{Status: vigil.StatusNew}, ids(inc[3], inc[2]), 2},
		{"status investigating", vigil.IncidentFilter{Status: vigil.StatusInvestigating}, ids(inc[1]), 1},
		{"status resolved", vigil.IncidentFilter{Status: vigil.StatusResolved}, ids(inc[0]), 1},
		{"status closed", vigil.IncidentFilter{Status: vigil.StatusClosed}, []string{}, 0},
		{"severity", vigil.IncidentFilter{Severity: vigil.SeverityHigh}, ids(inc[3], inc[1]), 2},
		{"range [start, end)", vigil.IncidentFilter{Range: vigil.TimeRange{Start: at(time.Hour), End: at(3 * time.Hour)}}, ids(inc[2], inc[1]), 2},
		{"start only", vigil.IncidentFilter{Range: vigil.TimeRange{Start: at(2 * time.Hour)}}, ids(inc[3], inc[2]), 2},
		{"end only", vigil.IncidentFilter{Range: vigil.TimeRange{End: at(time.Hour)}}, ids(inc[0]), 1},
		{"severity and status", vigil.IncidentFilter{Severity: vigil.SeverityHigh, Status: vigil.StatusNew}, ids(inc[3]), 1},
		{"page 1", vigil.IncidentFilter{Page: vigil.Page{Limit: 1}}, ids(inc[3]), 4},
		{"page 2", vigil.IncidentFilter{Page: vigil.Page{Limit: 1, Offset: 1}}, ids(inc[2]), 4},
		{"last page", vigil.IncidentFilter{Page: vigil.Page{Limit: 3, Offset: 3}}, ids(inc[0]), 4},
		{"past the end", vigil.IncidentFilter{Page: vigil.Page{Limit: 3, Offset: 4}}, []string{}, 4},
		{"filtered page", vigil.IncidentFilter{Severity: vigil.SeverityHigh, Page: vigil.Page{Limit: 1, Offset: 1}}, ids(inc[1]), 2},
	} {
		list, total := mustListIncidents(t, s, org, tc.f)
		if total != tc.total || !slices.Equal(incidentIDs(list), tc.want) {
			t.Errorf("%s: %v (total %d), want %v (total %d)", tc.name, incidentIDs(list), total, tc.want, tc.total)
		}
	}
	// The console's orders and title search. Last activity: inc[0] was
	// joined last (at 200 min), the others keep their creation time.
	third, err := s.GetIncident(t.Context(), org, inc[2])
	if err != nil {
		t.Fatal(err)
	}
	// A part of one title, in other case: titles differ in ids.
	part := strings.ToUpper(third.Title[len(third.Title)-12:])
	for _, tc := range []struct {
		name string
		f    vigil.IncidentFilter
		want []string
	}{
		{"sort created", vigil.IncidentFilter{Sort: vigil.IncidentSortCreated}, newest},
		{"sort last activity", vigil.IncidentFilter{Sort: vigil.IncidentSortActivity}, ids(inc[0], inc[3], inc[2], inc[1])},
		{"sort severity, then activity", vigil.IncidentFilter{Sort: vigil.IncidentSortSeverity}, ids(inc[3], inc[1], inc[2], inc[0])},
		{"sort severity, page 2", vigil.IncidentFilter{Sort: vigil.IncidentSortSeverity, Page: vigil.Page{Limit: 2, Offset: 2}}, ids(inc[2], inc[0])},
		{"title text, any case", vigil.IncidentFilter{Text: part}, ids(inc[2])},
		{"title text is not a pattern", vigil.IncidentFilter{Text: "%"}, []string{}},
		{"title text and status", vigil.IncidentFilter{Text: part, Status: vigil.StatusResolved}, []string{}},
	} {
		list, _ := mustListIncidents(t, s, org, tc.f)
		if !slices.Equal(incidentIDs(list), tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, incidentIDs(list), tc.want)
		}
	}
	// Ties on created_at are broken by id.
	org2 := vigil.NewID()
	t1 := mustRecord(t, s, org2, obs(vigil.SeverityLow, base, nil, nil, nil), policy)
	t2 := mustRecord(t, s, org2, obs(vigil.SeverityLow, base, nil, nil, nil), policy)
	t3 := mustRecord(t, s, org2, obs(vigil.SeverityLow, base, nil, nil, nil), policy)
	want := desc(t1.IncidentID, t2.IncidentID, t3.IncidentID)
	if list, _ := mustListIncidents(t, s, org2, vigil.IncidentFilter{}); !slices.Equal(incidentIDs(list), want) {
		t.Errorf("incidents created at the same time: %v, want by id descending %v", incidentIDs(list), want)
	}
}

func testIncidentClassification(t *testing.T, s Store) {
	org := vigil.NewID()
	o := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(0), nil, nil, nil), policy)
	for i, step := range []struct {
		status int
		want   *string
	}{
		{vigil.StatusInvestigating, nil},
		{vigil.StatusResolved, ptr(vigil.TruePositive)},
		{vigil.StatusClosed, ptr(vigil.FalsePositive)},
		{vigil.StatusDisrupted, ptr(vigil.TruePositive)},
		{vigil.StatusNew, nil},
		{vigil.StatusClosed, ptr(vigil.FalsePositive)},
		{vigil.StatusInvestigating, nil},
	} {
		got := mustSetStatus(t, s, org, o.IncidentID, step.status, "alice", at(time.Duration(i+1)*time.Minute))
		read := mustIncident(t, s, org, o.IncidentID)
		for what, inc := range map[string]*vigil.Incident{"returned": got, "read": read} {
			if inc.Status != step.status || inc.StatusName != vigil.StatusName(step.status) {
				t.Errorf("step %d (%s): status %d %q, want %d %q", i, what, inc.Status, inc.StatusName, step.status, vigil.StatusName(step.status))
			}
			if strPtrString(inc.Classification) != strPtrString(step.want) {
				t.Errorf("step %d (%s): status %d classification %s, want %s", i, what, step.status, strPtrString(inc.Classification), strPtrString(step.want))
			}
		}
	}
}

func testIncidentResolvedAt(t *testing.T, s Store) {
	org := vigil.NewID()
	o := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(0), nil, nil, nil), policy)
	for i, step := range []struct {
		status int
		now    time.Time
		want   *time.Time // nil: open, not resolved
	}{
		{vigil.StatusInvestigating, at(1 * time.Hour), nil},
		{vigil.StatusResolved, at(2 * time.Hour), ptr(at(2 * time.Hour))},
		{vigil.StatusNew, at(3 * time.Hour), nil},
		{vigil.StatusClosed, at(4 * time.Hour), ptr(at(4 * time.Hour))},
		{vigil.StatusInvestigating, at(5 * time.Hour), nil},
		{vigil.StatusDisrupted, at(6 * time.Hour), ptr(at(6 * time.Hour))},
	} {
		got := mustSetStatus(t, s, org, o.IncidentID, step.status, "alice", step.now)
		read := mustIncident(t, s, org, o.IncidentID)
		for what, inc := range map[string]*vigil.Incident{"returned": got, "read": read} {
			if !timePtrEqual(inc.ResolvedAt, step.want) {
				t.Errorf("step %d (%s): to status %d at %v: resolved_at %s, want %s", i, what, step.status, step.now,
					timePtrString(inc.ResolvedAt), timePtrString(step.want))
			}
			if !inc.UpdatedAt.Equal(step.now) {
				t.Errorf("step %d (%s): updated_at %v, want %v", i, what, inc.UpdatedAt, step.now)
			}
		}
	}
	// Moving between two closed statuses keeps it resolved.
	got := mustSetStatus(t, s, org, o.IncidentID, vigil.StatusClosed, "alice", at(7*time.Hour))
	if got.ResolvedAt == nil {
		t.Errorf("moving from Disrupted to Closed cleared resolved_at")
	}
}

func testIncidentHistory(t *testing.T, s Store) {
	org := vigil.NewID()
	o := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(0), nil, nil, nil), policy)
	steps := []vigil.StatusChange{
		{Actor: "alice", At: at(1 * time.Minute), From: 1, To: 2},
		{Actor: "bob", At: at(2 * time.Minute), From: 2, To: 3},
		{Actor: "carol", At: at(3 * time.Minute), From: 3, To: 1},
		{Actor: "alice", At: at(4 * time.Minute), From: 1, To: 4},
		{Actor: "dave@example.com", At: at(5 * time.Minute), From: 4, To: 5},
	}
	for i, st := range steps {
		got := mustSetStatus(t, s, org, o.IncidentID, st.To, st.Actor, st.At)
		if !historyEqual(got.History, steps[:i+1]) {
			t.Errorf("after step %d, returned history = %+v, want %+v", i, got.History, steps[:i+1])
		}
	}
	if inc := mustIncident(t, s, org, o.IncidentID); !historyEqual(inc.History, steps) {
		t.Errorf("history = %+v, want %+v", inc.History, steps)
	}
}

func testIncidentSameStatus(t *testing.T, s Store) {
	org := vigil.NewID()
	o := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(0), nil, nil, nil), policy)

	// The current status of a fresh incident: nothing recorded.
	got := mustSetStatus(t, s, org, o.IncidentID, vigil.StatusNew, "alice", at(time.Minute))
	if got.Status != vigil.StatusNew || len(got.History) != 0 {
		t.Errorf("setting New on a new incident: status %d history %+v, want 1 and none", got.Status, got.History)
	}
	if inc := mustIncident(t, s, org, o.IncidentID); len(inc.History) != 0 || !inc.UpdatedAt.Equal(at(0)) {
		t.Errorf("setting New on a new incident: history %+v updated_at %v, want none and %v", inc.History, inc.UpdatedAt, at(0))
	}

	first := mustSetStatus(t, s, org, o.IncidentID, vigil.StatusResolved, "alice", at(2*time.Minute))
	again := mustSetStatus(t, s, org, o.IncidentID, vigil.StatusResolved, "bob", at(3*time.Minute))
	want := []vigil.StatusChange{{Actor: "alice", At: at(2 * time.Minute), From: 1, To: 3}}
	for what, inc := range map[string]*vigil.Incident{"returned": again, "read": mustIncident(t, s, org, o.IncidentID)} {
		if !historyEqual(inc.History, want) {
			t.Errorf("%s: history after setting the same status = %+v, want %+v", what, inc.History, want)
		}
		if inc.Status != vigil.StatusResolved || strPtrString(inc.Classification) != vigil.TruePositive {
			t.Errorf("%s: status %d classification %s", what, inc.Status, strPtrString(inc.Classification))
		}
		if !timePtrEqual(inc.ResolvedAt, first.ResolvedAt) || !inc.UpdatedAt.Equal(first.UpdatedAt) {
			t.Errorf("%s: no-op changed resolved_at %s→%s or updated_at %v→%v", what,
				timePtrString(first.ResolvedAt), timePtrString(inc.ResolvedAt), first.UpdatedAt, inc.UpdatedAt)
		}
	}
}

func historyEqual(got, want []vigil.StatusChange) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Actor != w.Actor || !g.At.Equal(w.At) || g.From != w.From || g.To != w.To {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }
