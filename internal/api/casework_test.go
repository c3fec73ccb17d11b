package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/auth"
)

// subToken mints a token of org for sub with perms.
func (e *env) subToken(org, sub string, perms ...string) string {
	e.t.Helper()
	tok, err := auth.Mint(testSecret, auth.Claims{Subject: sub, OrgID: org, Permissions: perms}, time.Hour, time.Now())
	if err != nil {
		e.t.Fatalf("mint: %v", err)
	}
	return tok
}

// TestCaseWork: analysts assign, tag and comment; lists filter by
// assignee and tag; a comment is changed only by its author or an admin.
func TestCaseWork(t *testing.T) {
	e := newEnv(t)
	ana := e.subToken("org-a", "ana", "incidents:write")
	bob := e.subToken("org-a", "bob", "incidents:write")
	boss := e.subToken("org-a", "boss", "admin")
	reader := e.subToken("org-a", "rita", "incidents:read")
	inc := newIncident(t, e, boss, "high")
	other := newIncident(t, e, boss, "low")

	r := must(t, call(t, e, "PUT", "/v1/incidents/"+inc, ana, map[string]any{"assignee": "bob", "tags": []string{"vip", "c2", "vip"}}), http.StatusOK).data()
	if r["assignee"] != "bob" || !eqStrings(strs(r["tags"]), []string{"c2", "vip"}) || r["status"] != float64(1) {
		t.Errorf("updated incident = %v", r)
	}
	must(t, call(t, e, "PUT", "/v1/incidents/"+other, ana, map[string]any{"tags": []string{"c2"}}), http.StatusOK)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"tag=c2", []string{other, inc}},
		{"tag=vip", []string{inc}},
		{"assignee=bob", []string{inc}},
		{"assignee=bob&tag=vip&severity=high", []string{inc}},
		{"assignee=ana", []string{}},
	} {
		got := idsOf(items(t, must(t, call(t, e, "GET", "/v1/incidents?"+tc.query, reader, nil), http.StatusOK), "incidents"))
		if !eqStrings(got, tc.want) {
			t.Errorf("GET /v1/incidents?%s = %v, want %v", tc.query, got, tc.want)
		}
	}
	// The status keeps its own endpoint; bad input names its field.
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"status": 3}, "status"},
		{map[string]any{}, "body"},
		{map[string]any{"assignee": ""}, "assignee"},
		{map[string]any{"assignee": strings.Repeat("a", 257)}, "assignee"},
		{map[string]any{"assignee": []string{"bob"}}, "assignee"},
		{map[string]any{"tags": "vip"}, "tags"},
		{map[string]any{"tags": nil}, "tags"},
		{map[string]any{"tags": []string{"fine", "<b>"}}, "tags[1]"},
		{map[string]any{"tags": []string{strings.Repeat("t", 65)}}, "tags[0]"},
	} {
		wantError(t, call(t, e, "PUT", "/v1/incidents/"+inc, ana, tc.body), http.StatusBadRequest, tc.field)
	}
	many := make([]string, 33)
	for i := range many {
		many[i] = "t" + strings.Repeat("x", i)
	}
	wantError(t, call(t, e, "PUT", "/v1/incidents/"+inc, ana, map[string]any{"tags": many}), http.StatusBadRequest, "tags")
	wantError(t, call(t, e, "PUT", "/v1/incidents/"+inc, reader, map[string]any{"tags": []string{}}), http.StatusForbidden, "")
	if st := must(t, call(t, e, "GET", "/v1/incidents/"+inc, reader, nil), http.StatusOK).data(); st["status"] != float64(1) {
		t.Errorf("status after refused updates = %v", st["status"])
	}
	// Unassign and untag.
	r = must(t, call(t, e, "PUT", "/v1/incidents/"+inc, bob, map[string]any{"assignee": nil, "tags": []string{}}), http.StatusOK).data()
	if _, has := r["assignee"]; has || r["tags"] != nil {
		t.Errorf("cleared incident = %v, want no assignee and no tags", r)
	}

	// Comments: Markdown as written, edited and deleted by their author or an admin.
	md := "**C2** beacon to `198.51.100.7` <script>alert(1)</script>"
	c := must(t, call(t, e, "POST", "/v1/incidents/"+inc+"/comments", ana, map[string]any{"body": md}), http.StatusCreated).data()
	cid := c["id"].(string)
	if c["body"] != md || c["author"] != "ana" || c["incident_id"] != inc {
		t.Errorf("comment = %v", c)
	}
	must(t, call(t, e, "POST", "/v1/incidents/"+inc+"/comments", bob, map[string]any{"body": "agreed"}), http.StatusCreated)
	list := items(t, must(t, call(t, e, "GET", "/v1/incidents/"+inc+"/comments", reader, nil), http.StatusOK), "comments")
	if len(list) != 2 || list[0]["id"] != cid || list[1]["author"] != "bob" {
		t.Errorf("comments = %v", list)
	}
	path := "/v1/incidents/" + inc + "/comments/" + cid
	wantError(t, call(t, e, "PUT", path, bob, map[string]any{"body": "not mine"}), http.StatusForbidden, "")
	wantError(t, call(t, e, "DELETE", path, bob, nil), http.StatusForbidden, "")
	if got := must(t, call(t, e, "PUT", path, ana, map[string]any{"body": "edited by ana"}), http.StatusOK).data(); got["body"] != "edited by ana" {
		t.Errorf("edited comment = %v", got)
	}
	must(t, call(t, e, "PUT", path, boss, map[string]any{"body": "moderated"}), http.StatusOK)
	wantError(t, call(t, e, "PUT", "/v1/incidents/"+other+"/comments/"+cid, ana, map[string]any{"body": "x"}), http.StatusNotFound, "")
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "body"},
		{map[string]any{"body": ""}, "body"},
		{map[string]any{"body": 5}, "body"},
		{map[string]any{"body": strings.Repeat("é", 8193)}, "body"},
		{map[string]any{"body": "x", "author": "boss"}, "author"},
	} {
		wantError(t, call(t, e, "POST", "/v1/incidents/"+inc+"/comments", ana, tc.body), http.StatusBadRequest, tc.field)
	}
	must(t, call(t, e, "DELETE", path, boss, nil), http.StatusOK)
	wantError(t, call(t, e, "DELETE", path, ana, nil), http.StatusNotFound, "")

	// Every change is in the history, by its actor.
	var got []string
	for _, ev := range items(t, must(t, call(t, e, "GET", "/v1/incidents/"+inc+"/history", reader, nil), http.StatusOK), "events") {
		got = append(got, strings.TrimPrefix(ev["type"].(string), "incident.")+" by "+ev["actor"].(string))
	}
	want := []string{"created by boss", "assigned by ana", "tagged by ana", "assigned by bob", "tagged by bob", "commented by ana", "commented by bob",
		"comment_edited by ana", "comment_edited by boss", "comment_deleted by boss"}
	if !eqStrings(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

// TestIncidentsByNode: GET /v1/incidents?node= lists the incidents that
// name a node (the console's "incidents of this address"), only in the
// caller's org; a malformed id is a 400 naming node.
func TestIncidentsByNode(t *testing.T) {
	e := newEnv(t)
	boss := e.subToken("org-a", "boss", "admin")
	inc := func(tok, ip string) string {
		o := createObs(t, e, tok, map[string]any{"type": "network", "description": "flow", "severity": "low",
			"nodes": []map[string]any{{"type": "IP", "value": ip}}})
		return o["incident_id"].(string)
	}
	a := inc(boss, "203.0.113.5")
	inc(boss, "198.51.100.6")
	nodes, _ := must(t, call(t, e, "GET", "/v1/incidents/"+a, boss, nil), http.StatusOK).data()["nodes"].([]any)
	if len(nodes) != 1 {
		t.Fatalf("incident nodes %v", nodes)
	}
	node := nodes[0].(map[string]any)["id"].(string)
	got := idsOf(items(t, must(t, call(t, e, "GET", "/v1/incidents?node="+node, boss, nil), http.StatusOK), "incidents"))
	if !eqStrings(got, []string{a}) {
		t.Errorf("incidents of node %s = %v, want [%s]", node, got, a)
	}
	wantError(t, call(t, e, "GET", "/v1/incidents?node=203.0.113.5", boss, nil), http.StatusBadRequest, "node")
	other := e.subToken("org-b", "eve", "admin")
	inc(other, "203.0.113.5")
	if got := idsOf(items(t, must(t, call(t, e, "GET", "/v1/incidents?node="+node, other, nil), http.StatusOK), "incidents")); len(got) != 0 {
		t.Errorf("another org lists %v for org-a's node", got)
	}
}
