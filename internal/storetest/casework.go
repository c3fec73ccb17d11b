package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// Case work: assignee, tags and comments, each change in the history.

func caseWorkTests() []test {
	return []test{
		{"AssignAndTag", testCaseAssignTag},
		{"Comments", testCaseComments},
	}
}

func testCaseAssignTag(t *testing.T, s Store) {
	ctx := t.Context()
	org := vigil.NewID()
	a := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), nil, nil, nil), policy).IncidentID
	b := mustRecord(t, s, org, obs(vigil.SeverityLow, at(time.Minute), nil, nil, nil), policy).IncidentID
	update := func(id string, u vigil.CaseUpdate, actor string) *vigil.Incident {
		t.Helper()
		inc, err := s.UpdateIncidentCase(ctx, org, id, u, actor, at(time.Hour))
		if err != nil {
			t.Fatalf("UpdateIncidentCase: %v", err)
		}
		return inc
	}
	inc := update(a, vigil.CaseUpdate{Assignee: ptr("bob"), Tags: []string{"phishing", "vip", "phishing"}}, "ana")
	if inc.Assignee == nil || *inc.Assignee != "bob" || !slices.Equal(inc.Tags, []string{"phishing", "vip"}) {
		t.Fatalf("incident assignee %v tags %v, want bob and [phishing vip]", inc.Assignee, inc.Tags)
	}
	update(a, vigil.CaseUpdate{Assignee: ptr("bob"), Tags: []string{"vip", "phishing"}}, "ana") // nothing changes
	inc = update(a, vigil.CaseUpdate{Tags: []string{"vip", "c2"}}, "bob")
	if inc.Assignee == nil || *inc.Assignee != "bob" || !slices.Equal(inc.Tags, []string{"c2", "vip"}) {
		t.Fatalf("after retagging: assignee %v tags %v, want bob kept and [c2 vip]", inc.Assignee, inc.Tags)
	}
	update(b, vigil.CaseUpdate{Tags: []string{"c2"}}, "ana")
	inc = update(a, vigil.CaseUpdate{Assignee: ptr("")}, "bob")
	if inc.Assignee != nil {
		t.Fatalf("unassigned incident has assignee %q", *inc.Assignee)
	}
	update(b, vigil.CaseUpdate{Assignee: ptr("carol")}, "ana")

	got, _ := mustHistory(t, s, org, a, vigil.Page{Limit: 50})
	want := []string{"created by system count=0", "assigned by ana count=0", "tagged by ana count=0", "tagged by bob count=0", "assigned by bob count=0"}
	if len(got) != len(want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %d %q, want %q", i, got[i], want[i])
		}
	}
	evs, _, err := s.IncidentHistory(ctx, org, a, vigil.Page{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	d := evs[1].Detail
	if d.AssigneeFrom == nil || *d.AssigneeFrom != "" || d.AssigneeTo == nil || *d.AssigneeTo != "bob" {
		t.Errorf("assigned detail %+v, want from nobody to bob", d)
	}
	if d := evs[3].Detail; !slices.Equal(d.TagsAdded, []string{"c2"}) || !slices.Equal(d.TagsRemoved, []string{"phishing"}) {
		t.Errorf("tagged detail %+v, want c2 added and phishing removed", d)
	}
	if d := evs[4].Detail; *d.AssigneeFrom != "bob" || *d.AssigneeTo != "" {
		t.Errorf("unassigned detail %+v, want from bob to nobody", d)
	}

	for _, tc := range []struct {
		f    vigil.IncidentFilter
		want []string
	}{
		{vigil.IncidentFilter{Tag: "c2"}, []string{b, a}},
		{vigil.IncidentFilter{Tag: "vip"}, []string{a}},
		{vigil.IncidentFilter{Tag: "v"}, nil},
		{vigil.IncidentFilter{Assignee: "carol"}, []string{b}},
		{vigil.IncidentFilter{Assignee: "bob"}, nil},
		{vigil.IncidentFilter{Assignee: "carol", Tag: "vip"}, nil},
	} {
		tc.f.Page = vigil.Page{Limit: 50}
		list, total := mustListIncidents(t, s, org, tc.f)
		var gotIDs []string
		for _, i := range list {
			gotIDs = append(gotIDs, i.ID)
		}
		if !slices.Equal(gotIDs, tc.want) || total != len(tc.want) {
			t.Errorf("filter %+v: %v (total %d), want %v", tc.f, gotIDs, total, tc.want)
		}
	}
	// By node: the incidents that name it, in its org only.
	nodes := mustNodes(t, s, org, ipNode("203.0.113.40"), ipNode("203.0.113.41"))
	incC := mustRecord(t, s, org, obs(vigil.SeverityLow, at(2*time.Minute), nodes[:1], nodes[:1], nil), policy).IncidentID
	incD := mustRecord(t, s, org, obs(vigil.SeverityLow, at(3*time.Minute), nodes[1:], nodes[1:], nil), policy).IncidentID
	for node, want := range map[string][]string{nodes[0]: {incC}, nodes[1]: {incD}, vigil.NewID(): nil} {
		list, total := mustListIncidents(t, s, org, vigil.IncidentFilter{Node: node, Page: vigil.Page{Limit: 50}})
		if len(list) != len(want) || total != len(want) || len(want) == 1 && list[0].ID != want[0] {
			t.Errorf("incidents of node %s: %d (total %d), want %v", node, len(list), total, want)
		}
	}
	if _, n := mustListIncidents(t, s, vigil.NewID(), vigil.IncidentFilter{Node: nodes[0], Page: vigil.Page{Limit: 50}}); n != 0 {
		t.Errorf("another org lists %d incidents of this org's node", n)
	}
	// Another org can neither change nor find them.
	_, err = s.UpdateIncidentCase(ctx, vigil.NewID(), a, vigil.CaseUpdate{Assignee: ptr("mallory")}, "mallory", at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateIncidentCase of another org's incident")
	if _, n := mustListIncidents(t, s, vigil.NewID(), vigil.IncidentFilter{Tag: "c2", Page: vigil.Page{Limit: 50}}); n != 0 {
		t.Errorf("another org lists %d incidents tagged c2", n)
	}
}

func testCaseComments(t *testing.T, s Store) {
	ctx := t.Context()
	org := vigil.NewID()
	inc := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), nil, nil, nil), policy).IncidentID
	var ids []string
	for i, body := range []string{"**first** look: <script>x</script>", "second", "third"} {
		c := &vigil.Comment{ID: vigil.NewID(), IncidentID: inc, Author: "ana", Body: body,
			CreatedAt: at(time.Duration(i) * time.Minute), UpdatedAt: at(time.Duration(i) * time.Minute)}
		if err := s.CreateComment(ctx, org, c); err != nil {
			t.Fatalf("CreateComment: %v", err)
		}
		ids = append(ids, c.ID)
	}
	list, total, err := s.ListComments(ctx, org, inc, vigil.Page{Limit: 2, Offset: 0})
	if err != nil || total != 3 || len(list) != 2 || list[0].ID != ids[0] || list[0].Body != "**first** look: <script>x</script>" {
		t.Fatalf("ListComments: %d of %d (err %v), first %+v; want the first 2 of 3 oldest first, the body as written", len(list), total, err, list)
	}
	// Edits and deletes are recorded as done by the actor of the context
	// (the API's caller), edited by an admin here.
	ctx = vigil.WithActor(ctx, "bo")
	c, err := s.UpdateComment(ctx, org, inc, ids[1], "second, edited", at(time.Hour))
	if err != nil || c.Body != "second, edited" || !c.UpdatedAt.Equal(at(time.Hour)) || !c.CreatedAt.Equal(at(time.Minute)) || c.Author != "ana" {
		t.Fatalf("UpdateComment: %+v (err %v)", c, err)
	}
	if got, err := s.GetComment(ctx, org, inc, ids[1]); err != nil || got.Body != "second, edited" {
		t.Fatalf("GetComment after edit: %+v (err %v)", got, err)
	}
	if err := s.DeleteComment(ctx, org, inc, ids[2]); err != nil {
		t.Fatalf("DeleteComment: %v", err)
	}
	wantCode(t, s.DeleteComment(ctx, org, inc, ids[2]), vigil.ENOTFOUND, "DeleteComment twice")
	_, err = s.GetComment(ctx, org, inc, ids[2])
	wantCode(t, err, vigil.ENOTFOUND, "GetComment of a deleted comment")
	if _, total, _ := s.ListComments(ctx, org, inc, vigil.Page{Limit: 50}); total != 2 {
		t.Errorf("%d comments after a delete, want 2", total)
	}
	got, _ := mustHistory(t, s, org, inc, vigil.Page{Limit: 50})
	want := []string{"commented by ana count=0", "commented by ana count=0", "commented by ana count=0",
		"comment_edited by bo count=0", "comment_deleted by bo count=0"}
	if len(got) != 6 || !slices.Equal(got[1:], want) {
		t.Errorf("history %q, want created, three comments by ana, an edit and a delete by bo", got)
	}
	evs, _, err := s.IncidentHistory(ctx, org, inc, vigil.Page{Limit: 50})
	if err != nil || len(evs) != 6 || evs[4].Detail.CommentID != ids[1] || evs[5].Detail.CommentID != ids[2] ||
		!evs[4].At.Equal(at(time.Hour)) {
		t.Errorf("edit and delete events %+v (err %v), want comment ids %s, %s, the edit at its time", evs, err, ids[1], ids[2])
	}

	// Another org, or another incident, reaches none of them.
	other := vigil.NewID()
	err = s.CreateComment(ctx, other, &vigil.Comment{ID: vigil.NewID(), IncidentID: inc, Author: "mallory", Body: "x", CreatedAt: at(0), UpdatedAt: at(0)})
	wantCode(t, err, vigil.ENOTFOUND, "CreateComment on another org's incident")
	_, _, err = s.ListComments(ctx, other, inc, vigil.Page{Limit: 50})
	wantCode(t, err, vigil.ENOTFOUND, "ListComments of another org's incident")
	_, err = s.GetComment(ctx, other, inc, ids[0])
	wantCode(t, err, vigil.ENOTFOUND, "GetComment of another org")
	_, err = s.UpdateComment(ctx, other, inc, ids[0], "defaced", at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateComment of another org")
	wantCode(t, s.DeleteComment(ctx, other, inc, ids[0]), vigil.ENOTFOUND, "DeleteComment of another org")
	second := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), nil, nil, nil), policy).IncidentID
	_, err = s.GetComment(ctx, org, second, ids[0])
	wantCode(t, err, vigil.ENOTFOUND, "GetComment through another incident")
	if c, err := s.GetComment(ctx, org, inc, ids[0]); err != nil || c.Body != "**first** look: <script>x</script>" {
		t.Errorf("comment after the other org's attempts: %+v (err %v)", c, err)
	}
}
