package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func nodeTests() []test {
	return []test{
		{"SameIDOnRepeat", testNodeSameID},
		{"OtherOrgOtherID", testNodeOtherOrg},
		{"Get", testNodeGet},
		{"ListNewestFirstAndPaging", testNodeListOrder},
		{"ListFilters", testNodeListFilters},
		{"ListOtherOrgNeverListed", testNodeListTenancy},
		{"ObservationNamesNodesByValue", testNodeObservationByValue},
		{"ObservationByValueAtomic", testNodeObservationByValueAtomic},
		{"ObservationByValueCorrelates", testNodeObservationByValueCorrelates},
		{"ObservationByValueConcurrent", testNodeObservationByValueConcurrent},
		{"UpdateAddsNodesByValue", testNodeUpdateByValue},
		{"AccountsJoinedBySID", testNodeAccountsJoinedBySID},
	}
}

// testNodeAccountsJoinedBySID: a Windows account takes several names in
// one org's events — the recording
// Privilege Escalation/samaccount_spoofing_CVE-2021-42287_CVE-2021-42278_DC_securitylogs.evtx
// (../shared/datasets/windows/evtx) names lgrove as 3B\lgrove (its
// logons, 4624) and as THREEBEESCO.COM\lgrove (its Kerberos tickets, 4768)
// with one SID: once JoinAccounts recorded both, either name is the
// account's one User node, the first name recorded. In another org
// nothing is joined until its own events join it, its own way.
func testNodeAccountsJoinedBySID(t *testing.T, s Store) {
	const sid = "S-1-5-21-308926384-506822093-3341789130-101606"
	orgA, orgB := vigil.NewID(), vigil.NewID()
	full := vigil.NodeRef{Type: vigil.NodeUser, Value: `threebeesco\lgrove`}
	short := vigil.NodeRef{Type: vigil.NodeUser, Value: `3b\lgrove`}
	before := mustNodes(t, s, orgA, full, short)
	if before[0] == before[1] {
		t.Fatalf("two names joined before any SID: %v", before)
	}
	join := func(org string, names ...vigil.AccountSID) {
		t.Helper()
		if err := s.JoinAccounts(t.Context(), org, names); err != nil {
			t.Fatalf("JoinAccounts: %v", err)
		}
	}
	join(orgA, vigil.AccountSID{SID: sid, Account: full.Value}, vigil.AccountSID{SID: sid, Account: short.Value})
	nodes, err := s.UpsertNodes(t.Context(), orgA, []vigil.NodeRef{short, full})
	if err != nil {
		t.Fatalf("UpsertNodes: %v", err)
	}
	for i, n := range nodes {
		if n.ID != before[0] || n.Value != full.Value {
			t.Errorf("org A node %d = %s %q, want the account's node %s %q", i, n.ID, n.Value, before[0], full.Value)
		}
	}
	// A name joined stays joined to its first account.
	join(orgA, vigil.AccountSID{SID: sid + "0", Account: short.Value}, vigil.AccountSID{SID: sid + "0", Account: `3b\other`})
	if got := mustNodes(t, s, orgA, short)[0]; got != before[0] {
		t.Errorf("org A %s after another SID named it: node %s, want %s", short.Value, got, before[0])
	}
	b := mustNodes(t, s, orgB, short, full)
	if b[0] == b[1] || slices.Contains(before, b[0]) || slices.Contains(before, b[1]) {
		t.Fatalf("org B nodes %v: want two of its own (org A's %v)", b, before)
	}
	join(orgB, vigil.AccountSID{SID: sid, Account: short.Value}, vigil.AccountSID{SID: sid, Account: full.Value})
	if got := mustNodes(t, s, orgB, full, short); got[0] != b[0] || got[1] != b[0] {
		t.Errorf("org B after its own join: %v, want both %s (its first name, %s)", got, b[0], short.Value)
	}
	if got := mustNodes(t, s, orgA, short)[0]; got != before[0] {
		t.Errorf("org A after org B's join: %s, want %s", got, before[0])
	}
}

func testNodeSameID(t *testing.T, s Store) {
	org := vigil.NewID()
	refs := []vigil.NodeRef{
		{Type: vigil.NodeIP, Value: "203.0.113.7"},
		{Type: vigil.NodeDomain, Value: "evil.example.com"},
		{Type: vigil.NodeUser, Value: "alice"},
		{Type: vigil.NodeHost, Value: "alice"}, // same value, other type: another node
	}
	nodes, err := s.UpsertNodes(t.Context(), org, refs)
	if err != nil {
		t.Fatalf("UpsertNodes: %v", err)
	}
	if len(nodes) != len(refs) {
		t.Fatalf("got %d nodes, want %d", len(nodes), len(refs))
	}
	seen := map[string]bool{}
	for i, n := range nodes {
		if n.Type != refs[i].Type || n.Value != refs[i].Value {
			t.Errorf("node %d = %s %q, want %s %q (in the order of refs)", i, n.Type, n.Value, refs[i].Type, refs[i].Value)
		}
		if !vigil.ValidID(n.ID) {
			t.Errorf("node %d id %q is not a UUID", i, n.ID)
		}
		if seen[n.ID] {
			t.Errorf("node %d shares id %s with another node", i, n.ID)
		}
		seen[n.ID] = true
	}
	first := mustNodes(t, s, org, refs...)
	second := mustNodes(t, s, org, refs...)
	for i := range refs {
		if first[i] != nodes[i].ID || second[i] != nodes[i].ID {
			t.Errorf("%s %q: ids %s, %s, %s on repeated upserts, want one id", refs[i].Type, refs[i].Value, nodes[i].ID, first[i], second[i])
		}
	}
	// Existing and new nodes in one call.
	mixed := mustNodes(t, s, org, vigil.NodeRef{Type: vigil.NodeUser, Value: "alice"}, vigil.NodeRef{Type: vigil.NodeHost, Value: "web-1"})
	if mixed[0] != nodes[2].ID {
		t.Errorf("existing User alice got id %s, want %s", mixed[0], nodes[2].ID)
	}
	if seen[mixed[1]] {
		t.Errorf("new Host web-1 reused an existing id %s", mixed[1])
	}
}

func testNodeOtherOrg(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	ref := vigil.NodeRef{Type: vigil.NodeIP, Value: "198.51.100.9"}
	a := mustNodes(t, s, orgA, ref)[0]
	b := mustNodes(t, s, orgB, ref)[0]
	if a == b {
		t.Fatalf("the same IP in two orgs got one id %s", a)
	}
	if again := mustNodes(t, s, orgA, ref)[0]; again != a {
		t.Errorf("org A's node id changed from %s to %s after org B upserted the same value", a, again)
	}
	if again := mustNodes(t, s, orgB, ref)[0]; again != b {
		t.Errorf("org B's node id changed from %s to %s", b, again)
	}
}

func mustListNodes(t *testing.T, s vigil.Store, org string, f vigil.NodeFilter) ([]*vigil.Node, int) {
	t.Helper()
	if f.Page.Limit == 0 {
		f.Page.Limit = vigil.DefaultLimit
	}
	list, total, err := s.ListNodes(t.Context(), org, f)
	if err != nil {
		t.Fatalf("ListNodes(%+v): %v", f, err)
	}
	return list, total
}

func listedIDs(ns []*vigil.Node) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func testNodeGet(t *testing.T, s Store) {
	org := vigil.NewID()
	before := vigil.Now()
	id := mustNodes(t, s, org, vigil.NodeRef{Type: vigil.NodeDomain, Value: "c2.example.net"})[0]
	n, err := s.GetNode(t.Context(), org, id)
	if err != nil {
		t.Fatalf("GetNode: %v", err)
	}
	if n.ID != id || n.OrgID != org || n.Type != vigil.NodeDomain || n.Value != "c2.example.net" {
		t.Errorf("GetNode = %+v", n)
	}
	if n.CreatedAt.Before(before) || n.CreatedAt.After(vigil.Now()) {
		t.Errorf("created_at %v, want the time of the upsert (after %v)", n.CreatedAt, before)
	}
	// A repeated upsert keeps the first-seen time.
	mustNodes(t, s, org, vigil.NodeRef{Type: vigil.NodeDomain, Value: "c2.example.net"})
	if again, err := s.GetNode(t.Context(), org, id); err != nil || !again.CreatedAt.Equal(n.CreatedAt) {
		t.Errorf("after a second upsert: %+v, %v; want created_at %v kept", again, err, n.CreatedAt)
	}
	for name, tc := range map[string]struct{ org, id string }{
		"another org's node": {vigil.NewID(), id},
		"missing id":         {org, vigil.NewID()},
		"malformed id":       {org, "not-a-uuid"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.GetNode(t.Context(), tc.org, tc.id)
			wantCode(t, err, vigil.ENOTFOUND, "GetNode")
		})
	}
}

func testNodeListOrder(t *testing.T, s Store) {
	org := vigil.NewID()
	var want []string // creation order
	for i := range 5 {
		want = append(want, mustNodes(t, s, org, ipNode(fmt.Sprintf("198.51.100.%d", i+1)))[0])
	}
	// Two in one call: one created_at, ties by id.
	want = append(want, mustNodes(t, s, org, hostNode("web-1"), userNode("alice"))...)
	slices.Reverse(want)
	list, total := mustListNodes(t, s, org, vigil.NodeFilter{})
	if total != 7 || !slices.Equal(listedIDs(list), want) {
		t.Fatalf("ListNodes = %v (total %d), want newest first %v (7)", listedIDs(list), total, want)
	}
	for i := 1; i < len(list); i++ {
		if list[i].CreatedAt.After(list[i-1].CreatedAt) {
			t.Errorf("node %d created %v after node %d (%v)", i, list[i].CreatedAt, i-1, list[i-1].CreatedAt)
		}
	}
	page, total := mustListNodes(t, s, org, vigil.NodeFilter{Page: vigil.Page{Limit: 3, Offset: 2}})
	if total != 7 || !slices.Equal(listedIDs(page), want[2:5]) {
		t.Errorf("page (limit 3, offset 2) = %v (total %d), want %v (7)", listedIDs(page), total, want[2:5])
	}
	past, total := mustListNodes(t, s, org, vigil.NodeFilter{Page: vigil.Page{Limit: 3, Offset: 7}})
	if total != 7 || len(past) != 0 || past == nil {
		t.Errorf("page past the end = %v (total %d), want [] (7)", listedIDs(past), total)
	}
}

func testNodeListFilters(t *testing.T, s Store) {
	org := vigil.NewID()
	refs := []vigil.NodeRef{
		{Type: vigil.NodeIP, Value: "203.0.113.7"},
		{Type: vigil.NodeIP, Value: "203.0.113.70"},
		{Type: vigil.NodeIP, Value: "198.51.100.7"},
		{Type: vigil.NodeDomain, Value: "evil.example.com"},
		{Type: vigil.NodeDomain, Value: "example.com"},
		{Type: vigil.NodeHost, Value: "203.0.113.7"}, // a host named by its address
		{Type: vigil.NodeUser, Value: "zoë"},
		{Type: vigil.NodeUser, Value: "zoe"},
		{Type: vigil.NodeUser, Value: "zo\U0010ffff"},
	}
	id := map[string]string{}
	for i, nid := range mustNodes(t, s, org, refs...) {
		id[refs[i].Type+":"+refs[i].Value] = nid
	}
	cases := []struct {
		name string
		f    vigil.NodeFilter
		want []string // type:value
	}{
		{"type", vigil.NodeFilter{Type: vigil.NodeDomain}, []string{"Domain:evil.example.com", "Domain:example.com"}},
		{"exact pair", vigil.NodeFilter{Match: []vigil.NodeRef{{Type: vigil.NodeIP, Value: "203.0.113.7"}}},
			[]string{"IP:203.0.113.7"}},
		{"exact pair is not a prefix", vigil.NodeFilter{Match: []vigil.NodeRef{{Type: vigil.NodeDomain, Value: "example.co"}}}, nil},
		{"a value under several types", vigil.NodeFilter{Match: []vigil.NodeRef{
			{Type: vigil.NodeIP, Value: "203.0.113.7"}, {Type: vigil.NodeHost, Value: "203.0.113.7"}, {Type: vigil.NodeUser, Value: "203.0.113.7"}}},
			[]string{"IP:203.0.113.7", "Host:203.0.113.7"}},
		{"type and pairs", vigil.NodeFilter{Type: vigil.NodeHost, Match: []vigil.NodeRef{
			{Type: vigil.NodeIP, Value: "203.0.113.7"}, {Type: vigil.NodeHost, Value: "203.0.113.7"}}},
			[]string{"Host:203.0.113.7"}},
		{"prefix of a type", vigil.NodeFilter{Type: vigil.NodeIP, Prefix: "203.0.113.7"},
			[]string{"IP:203.0.113.7", "IP:203.0.113.70"}},
		{"prefix of any type", vigil.NodeFilter{Prefix: "203."},
			[]string{"IP:203.0.113.7", "IP:203.0.113.70", "Host:203.0.113.7"}},
		{"prefix is case sensitive", vigil.NodeFilter{Prefix: "EVIL"}, nil},
		{"prefix ending in a multibyte rune", vigil.NodeFilter{Prefix: "zoë"}, []string{"User:zoë"}},
		{"prefix ending in the last rune", vigil.NodeFilter{Prefix: "zo\U0010ffff"}, []string{"User:zo\U0010ffff"}},
		{"prefix matching nothing", vigil.NodeFilter{Prefix: "10."}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			list, total := mustListNodes(t, s, org, tc.f)
			var got []string
			for _, n := range list {
				got = append(got, n.Type+":"+n.Value)
				if id[n.Type+":"+n.Value] != n.ID {
					t.Errorf("%s %q has id %s, want %s", n.Type, n.Value, n.ID, id[n.Type+":"+n.Value])
				}
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) || total != len(want) {
				t.Errorf("ListNodes(%+v) = %v (total %d), want %v", tc.f, got, total, want)
			}
		})
	}
}

func testNodeListTenancy(t *testing.T, s Store) {
	orgA, orgB := vigil.NewID(), vigil.NewID()
	refs := []vigil.NodeRef{ipNode("203.0.113.7"), {Type: vigil.NodeDomain, Value: "evil.example.com"}}
	a := mustNodes(t, s, orgA, refs...)
	b := mustNodes(t, s, orgB, append(refs, hostNode("b-only"))...)
	for _, f := range []vigil.NodeFilter{
		{},
		{Type: vigil.NodeIP},
		{Match: []vigil.NodeRef{{Type: vigil.NodeIP, Value: "203.0.113.7"}}},
		{Prefix: "b-"},
		{Prefix: "evil"},
	} {
		list, total := mustListNodes(t, s, orgA, f)
		for _, n := range list {
			if slices.Contains(b, n.ID) || n.OrgID != orgA {
				t.Errorf("ListNodes(%+v) of org A lists %s %q of org %s", f, n.Type, n.Value, n.OrgID)
			}
		}
		if total != len(list) {
			t.Errorf("ListNodes(%+v) of org A: total %d for %d listed", f, total, len(list))
		}
	}
	if list, total := mustListNodes(t, s, orgA, vigil.NodeFilter{}); total != 2 || !slices.Equal(listedIDs(list), []string{a[1], a[0]}) {
		t.Errorf("org A lists %v (total %d), want its own %v", listedIDs(list), total, []string{a[1], a[0]})
	}
	if list, _ := mustListNodes(t, s, vigil.NewID(), vigil.NodeFilter{}); len(list) != 0 {
		t.Errorf("an org without nodes lists %v", listedIDs(list))
	}
}

func testNodeObservationByValue(t *testing.T, s Store) {
	org := vigil.NewID()
	existing := mustNodes(t, s, org, hostNode("web-1"))[0]
	named := mustNodes(t, s, org, ipNode("198.51.100.1"))[0]
	arts := mustArtifactIDs(t, s, org, 1)
	o := obs(vigil.SeverityHigh, at(0), ids(named), ids(named), arts)
	o.Nodes = []vigil.NodeRef{
		ipNode("203.0.113.7"),                // new, key
		hostNode("web-1"),                    // existing, context
		ipNode("198.51.100.1"),               // also named by id: one node, still a key
		{Type: vigil.NodeUser, Value: "bob"}, // new, context
	}
	mustRecord(t, s, org, o, policy)
	if len(o.NodeIDs) != 4 || o.NodeIDs[0] != named || o.NodeIDs[2] != existing {
		t.Fatalf("NodeIDs = %v, want [%s, <new IP>, %s, <new User>]", o.NodeIDs, named, existing)
	}
	ip, err := s.GetNode(t.Context(), org, o.NodeIDs[1])
	if err != nil || ip.Type != vigil.NodeIP || ip.Value != "203.0.113.7" {
		t.Fatalf("new node = %+v, %v", ip, err)
	}
	if got := mustNodes(t, s, org, ipNode("203.0.113.7"))[0]; got != ip.ID {
		t.Errorf("the node created by value has id %s, a later upsert %s", ip.ID, got)
	}
	got := mustObservation(t, s, org, o.ID)
	if !slices.Equal(got.NodeIDs, o.NodeIDs) {
		t.Errorf("stored NodeIDs %v, want %v", got.NodeIDs, o.NodeIDs)
	}
	if want := []string{named, ip.ID}; !slices.Equal(got.KeyNodeIDs, want) {
		t.Errorf("KeyNodeIDs = %v, want %v (the keys among them)", got.KeyNodeIDs, want)
	}
	if inc := mustIncident(t, s, org, o.IncidentID); inc.NodeCount != 4 {
		t.Errorf("incident node_count = %d, want 4", inc.NodeCount)
	}
}

func testNodeObservationByValueAtomic(t *testing.T, s Store) {
	org := vigil.NewID()
	o := obs(vigil.SeverityLow, at(0), nil, nil, ids(vigil.NewID()))
	o.Nodes = []vigil.NodeRef{ipNode("203.0.113.7")}
	err := recordObservation(t.Context(), s, org, o, "t", policy)
	wantCode(t, err, vigil.EINVALID, "RecordObservation with an unknown artifact")
	if list, total := mustListNodes(t, s, org, vigil.NodeFilter{}); total != 0 {
		t.Errorf("a refused observation left nodes %v", listedIDs(list))
	}
	o = obs(vigil.SeverityLow, at(0), nil, nil, nil)
	o.Nodes = []vigil.NodeRef{{Type: "Planet", Value: "mars"}}
	wantCode(t, recordObservation(t.Context(), s, org, o, "t", policy), vigil.EINVALID, "RecordObservation with an unknown node type")
}

func testNodeObservationByValueCorrelates(t *testing.T, s Store) {
	org := vigil.NewID()
	first := obs(vigil.SeverityMedium, at(0), nil, nil, nil)
	first.Nodes = []vigil.NodeRef{ipNode("203.0.113.7"), hostNode("web-1")}
	mustRecord(t, s, org, first, policy)
	second := obs(vigil.SeverityHigh, at(time.Minute), nil, nil, nil)
	second.Nodes = []vigil.NodeRef{ipNode("203.0.113.7")}
	mustRecord(t, s, org, second, policy)
	if second.IncidentID != first.IncidentID {
		t.Errorf("two observations naming key IP 203.0.113.7 by value: incidents %s and %s, want one", first.IncidentID, second.IncidentID)
	}
	// A shared context node joins nothing.
	third := obs(vigil.SeverityHigh, at(2*time.Minute), nil, nil, nil)
	third.Nodes = []vigil.NodeRef{hostNode("web-1"), ipNode("198.51.100.9")}
	mustRecord(t, s, org, third, policy)
	if third.IncidentID == first.IncidentID {
		t.Errorf("an observation sharing only context host web-1 joined incident %s", first.IncidentID)
	}
}

func testNodeObservationByValueConcurrent(t *testing.T, s Store) {
	org := vigil.NewID()
	const n = 8
	var wg sync.WaitGroup
	out := make([]*vigil.Observation, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := obs(vigil.SeverityMedium, at(time.Duration(i)*time.Second), nil, nil, nil)
			o.Nodes = []vigil.NodeRef{ipNode("203.0.113.99"), {Type: vigil.NodeDomain, Value: fmt.Sprintf("d%d.example.com", i)}}
			errs[i] = recordObservation(t.Context(), s, org, o, "t", policy)
			out[i] = o
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("RecordObservation %d: %v", i, errs[i])
		}
		if out[i].NodeIDs[0] != out[0].NodeIDs[0] {
			t.Errorf("observation %d names 203.0.113.99 as node %s, observation 0 as %s", i, out[i].NodeIDs[0], out[0].NodeIDs[0])
		}
		if out[i].IncidentID != out[0].IncidentID {
			t.Errorf("observation %d is in incident %s, observation 0 in %s", i, out[i].IncidentID, out[0].IncidentID)
		}
	}
	if _, total := mustListNodes(t, s, org, vigil.NodeFilter{Type: vigil.NodeIP}); total != 1 {
		t.Errorf("%d IP nodes after concurrent creation of one value, want 1", total)
	}
}

func testNodeUpdateByValue(t *testing.T, s Store) {
	org := vigil.NewID()
	keep := mustNodes(t, s, org, ipNode("198.51.100.1"))[0]
	o := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(0), ids(keep), ids(keep), nil), policy)
	ctxRef := vigil.NodeRef{Type: vigil.NodeHost, Value: "web-1"}

	// Without NodeIDs, the nodes are added to the current ones.
	got, err := updateObservation(t.Context(), s, org, o.ID, vigil.ObservationUpdate{
		Nodes: []vigil.NodeRef{ipNode("203.0.113.7"), ctxRef},
	}, at(time.Minute))
	if err != nil {
		t.Fatalf("UpdateObservation: %v", err)
	}
	if len(got.NodeIDs) != 3 || got.NodeIDs[0] != keep {
		t.Fatalf("NodeIDs = %v, want [%s, <IP>, <Host>]", got.NodeIDs, keep)
	}
	ip, host := got.NodeIDs[1], got.NodeIDs[2]
	stored := mustObservation(t, s, org, o.ID)
	if !slices.Equal(stored.NodeIDs, got.NodeIDs) || !slices.Equal(stored.KeyNodeIDs, []string{keep, ip}) {
		t.Errorf("stored nodes %v keys %v, want %v keys %v", stored.NodeIDs, stored.KeyNodeIDs, got.NodeIDs, []string{keep, ip})
	}
	if inc := mustIncident(t, s, org, o.IncidentID); inc.NodeCount != 3 {
		t.Errorf("incident node_count = %d, want 3", inc.NodeCount)
	}

	// With NodeIDs, they replace the nodes and the refs are added.
	empty := []string{}
	got, err = updateObservation(t.Context(), s, org, o.ID, vigil.ObservationUpdate{
		NodeIDs: &empty, Nodes: []vigil.NodeRef{ctxRef},
	}, at(2*time.Minute))
	if err != nil {
		t.Fatalf("UpdateObservation: %v", err)
	}
	stored = mustObservation(t, s, org, o.ID)
	if !slices.Equal(got.NodeIDs, []string{host}) || !slices.Equal(stored.NodeIDs, []string{host}) || len(stored.KeyNodeIDs) != 0 {
		t.Errorf("after replacing: returned %v, stored %v keys %v; want [%s] without keys", got.NodeIDs, stored.NodeIDs, stored.KeyNodeIDs, host)
	}

	// A refused update creates nothing.
	_, err = updateObservation(t.Context(), s, org, o.ID, vigil.ObservationUpdate{
		ArtifactIDs: &[]string{vigil.NewID()}, Nodes: []vigil.NodeRef{ipNode("192.0.2.55")},
	}, at(3*time.Minute))
	wantCode(t, err, vigil.EINVALID, "UpdateObservation with an unknown artifact")
	if list, _ := mustListNodes(t, s, org, vigil.NodeFilter{Match: []vigil.NodeRef{ipNode("192.0.2.55")}}); len(list) != 0 {
		t.Errorf("a refused update created node %v", listedIDs(list))
	}
}
