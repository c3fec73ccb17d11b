package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// Correlation: how RecordObservation turns observations into incidents
// (docs/detections.md, Correlation).

func correlationTests() []test {
	return []test{
		{"NoNodesOpensOwnIncident", testCorrelateNoNodes},
		{"SharedKeyNodeJoins", testCorrelateSharedKey},
		{"ContextNodeDoesNotJoin", testCorrelateContextNode},
		{"OutsideWindowOpensNew", testCorrelateWindow},
		{"LastActivityNeverMovesBack", testCorrelateOutOfOrder},
		{"ClosedIncidentNeverGrows", testCorrelateClosed},
		{"BridgeMergesIntoOlder", testCorrelateMerge},
		{"MergedLeavesTheQueue", testMergedLeavesQueue},
		{"HubLimit", testCorrelateHubLimit},
	}
}

func testCorrelateNoNodes(t *testing.T, s Store) {
	org := vigil.NewID()
	o1 := obs(vigil.SeverityHigh, at(0), nil, nil, nil)
	if err := recordObservation(t.Context(), s, org, o1, "Lonely finding", policy); err != nil {
		t.Fatalf("RecordObservation: %v", err)
	}
	if o1.IncidentID == "" {
		t.Fatal("IncidentID not set")
	}
	inc := wantIncident(t, s, org, o1.IncidentID, ids(o1.ID), 0, 0, vigil.SeverityHigh)
	if inc.Title != "Lonely finding" || inc.Status != vigil.StatusNew || inc.StatusName != "New" || inc.OrgID != org {
		t.Errorf("new incident: title %q status %d %q org %s; want %q 1 New %s", inc.Title, inc.Status, inc.StatusName, inc.OrgID, "Lonely finding", org)
	}
	if inc.Classification != nil || inc.ResolvedAt != nil || inc.MergedInto != nil {
		t.Errorf("new incident: classification %s resolved %s merged %s; want all nil",
			strPtrString(inc.Classification), timePtrString(inc.ResolvedAt), strPtrString(inc.MergedInto))
	}
	if !inc.CreatedAt.Equal(o1.CreatedAt) || !inc.LastActivityAt.Equal(o1.CreatedAt) {
		t.Errorf("new incident: created %v last activity %v; want both %v (the observation's)", inc.CreatedAt, inc.LastActivityAt, o1.CreatedAt)
	}
	o2 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(time.Minute), nil, nil, nil), policy)
	if o2.IncidentID == o1.IncidentID {
		t.Errorf("two observations without nodes share incident %s", o1.IncidentID)
	}
	if _, total := mustListIncidents(t, s, org, vigil.IncidentFilter{}); total != 2 {
		t.Errorf("%d incidents, want 2", total)
	}
}

func testCorrelateSharedKey(t *testing.T, s Store) {
	org := vigil.NewID()
	refs := []vigil.NodeRef{ipNode("203.0.113.7"), hostNode("web-1"), userNode("root")}
	n := mustNodes(t, s, org, refs...)
	attacker, web, root := n[0], n[1], n[2]
	a := mustArtifactIDs(t, s, org, 3)

	o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), ids(attacker, web), ids(attacker), a[:1]), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(10*time.Minute), ids(attacker, root), ids(attacker), a[:2]), policy)
	if o2.IncidentID != o1.IncidentID {
		t.Fatalf("second observation sharing key node opened %s, want it to join %s", o2.IncidentID, o1.IncidentID)
	}
	wantIncident(t, s, org, o1.IncidentID, ids(o1.ID, o2.ID), 3, 2, vigil.SeverityHigh)

	o3 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(20*time.Minute), ids(attacker), ids(attacker), a[2:]), policy)
	if o3.IncidentID != o1.IncidentID {
		t.Fatalf("third observation opened %s, want it to join %s", o3.IncidentID, o1.IncidentID)
	}
	// A lower observation does not lower the incident.
	inc := wantIncident(t, s, org, o1.IncidentID, ids(o1.ID, o2.ID, o3.ID), 3, 3, vigil.SeverityHigh)
	for _, node := range inc.Nodes {
		want := -1
		for i := range n {
			if n[i] == node.ID {
				want = i
			}
		}
		if want < 0 || node.Type != refs[want].Type || node.Value != refs[want].Value {
			t.Errorf("incident node %+v, want one of %v with its type and value", node, refs)
		}
	}
	if !inc.CreatedAt.Equal(at(0)) || !inc.LastActivityAt.Equal(at(20*time.Minute)) {
		t.Errorf("incident created %v last activity %v, want %v %v", inc.CreatedAt, inc.LastActivityAt, at(0), at(20*time.Minute))
	}
	if _, total := mustListIncidents(t, s, org, vigil.IncidentFilter{}); total != 1 {
		t.Errorf("%d incidents, want 1", total)
	}
	for _, o := range []*vigil.Observation{o1, o2, o3} {
		if g := mustObservation(t, s, org, o.ID); g.IncidentID != o1.IncidentID {
			t.Errorf("observation %s incident_id %s, want %s", o.ID, g.IncidentID, o1.IncidentID)
		}
	}
}

func testCorrelateContextNode(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), ipNode("198.51.100.23"), hostNode("web-1"))
	attacker1, attacker2, server := n[0], n[1], n[2]

	// Two attackers hitting the same server: the server is context.
	o1 := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(0), ids(attacker1, server), ids(attacker1), nil), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(5*time.Minute), ids(attacker2, server), ids(attacker2), nil), policy)
	if o2.IncidentID == o1.IncidentID {
		t.Errorf("observations sharing only a context node joined incident %s", o1.IncidentID)
	}
	// Naming the server, or even the first attacker, as context only
	// (no key nodes) joins nothing.
	o3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(6*time.Minute), ids(server), nil, nil), policy)
	o4 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(7*time.Minute), ids(attacker1), nil, nil), policy)
	seen := map[string]bool{}
	for _, o := range []*vigil.Observation{o1, o2, o3, o4} {
		if seen[o.IncidentID] {
			t.Errorf("observation %s joined an existing incident through a context-only node", o.ID)
		}
		seen[o.IncidentID] = true
	}
	// A node recorded on an incident only as context does not pull in a
	// later observation that names it as a key either.
	o5 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(8*time.Minute), ids(server), ids(server), nil), policy)
	if o5.IncidentID == o1.IncidentID || o5.IncidentID == o2.IncidentID {
		t.Errorf("observation keyed on a node that is only context of incident %s joined it", o5.IncidentID)
	}
	wantIncident(t, s, org, o1.IncidentID, ids(o1.ID), 2, 0, vigil.SeverityHigh)
	wantIncident(t, s, org, o2.IncidentID, ids(o2.ID), 2, 0, vigil.SeverityHigh)
	// The context node is still recorded on its own incident.
	wantIncident(t, s, org, o3.IncidentID, ids(o3.ID), 1, 0, vigil.SeverityLow)
}

func testCorrelateWindow(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"))
	p := vigil.CorrelationPolicy{Window: 10 * time.Minute, HubLimit: 25}

	o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), n, n, nil), p)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(9*time.Minute), n, n, nil), p)
	// 18 min after creation but 9 min after the last activity: joins.
	o3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(18*time.Minute), n, n, nil), p)
	if o2.IncidentID != o1.IncidentID || o3.IncidentID != o1.IncidentID {
		t.Fatalf("observations within the window of the last activity opened %s, %s; want %s", o2.IncidentID, o3.IncidentID, o1.IncidentID)
	}
	// More than the window after the last activity: a new incident.
	o4 := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(28*time.Minute+time.Second), n, n, nil), p)
	if o4.IncidentID == o1.IncidentID {
		t.Fatalf("observation %v after the incident's last activity joined it (window %v)", 10*time.Minute+time.Second, p.Window)
	}
	inc := wantIncident(t, s, org, o1.IncidentID, ids(o1.ID, o2.ID, o3.ID), 1, 0, vigil.SeverityLow)
	if !inc.LastActivityAt.Equal(at(18 * time.Minute)) {
		t.Errorf("old incident last activity %v, want %v", inc.LastActivityAt, at(18*time.Minute))
	}
	wantIncident(t, s, org, o4.IncidentID, ids(o4.ID), 1, 0, vigil.SeverityHigh)

	// The default window is one hour.
	q := mustNodes(t, s, org, ipNode("192.0.2.44"))
	d1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), q, q, nil), policy)
	d2 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(59*time.Minute), q, q, nil), policy)
	d3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(2*time.Hour), q, q, nil), policy)
	if d2.IncidentID != d1.IncidentID {
		t.Errorf("default policy: observation 59 min later opened a new incident")
	}
	if d3.IncidentID == d1.IncidentID {
		t.Errorf("default policy: observation 61 min after the last activity joined the incident")
	}
}

// An observation recorded late (its CreatedAt before the incident's last
// activity) joins but must not move the last activity back, or the window
// would close early.
func testCorrelateOutOfOrder(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"))
	o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(50*time.Minute), n, n, nil), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), n, n, nil), policy)
	if o2.IncidentID != o1.IncidentID {
		t.Fatalf("late observation within the window opened %s, want %s", o2.IncidentID, o1.IncidentID)
	}
	if inc := mustIncident(t, s, org, o1.IncidentID); !inc.LastActivityAt.Equal(at(50 * time.Minute)) {
		t.Errorf("last activity = %v after a late observation, want %v", inc.LastActivityAt, at(50*time.Minute))
	}
	o3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(100*time.Minute), n, n, nil), policy)
	if o3.IncidentID != o1.IncidentID {
		t.Errorf("observation 50 min after the last activity opened %s, want it to join %s", o3.IncidentID, o1.IncidentID)
	}
}

func testCorrelateClosed(t *testing.T, s Store) {
	for _, tc := range []struct {
		status int
		grows  bool
	}{
		{vigil.StatusInvestigating, true},
		{vigil.StatusResolved, false},
		{vigil.StatusClosed, false},
		{vigil.StatusDisrupted, false},
	} {
		t.Run(fmt.Sprintf("status %d", tc.status), func(t *testing.T) {
			org := vigil.NewID()
			n := mustNodes(t, s, org, ipNode("203.0.113.7"))
			o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), n, n, nil), policy)
			mustSetStatus(t, s, org, o1.IncidentID, tc.status, "analyst", at(time.Minute))
			o2 := mustRecord(t, s, org, obs(vigil.SeverityCritical, at(2*time.Minute), n, n, nil), policy)
			if tc.grows {
				if o2.IncidentID != o1.IncidentID {
					t.Errorf("incident in status %d did not take a new observation", tc.status)
				}
				wantIncident(t, s, org, o1.IncidentID, ids(o1.ID, o2.ID), 1, 0, vigil.SeverityCritical)
				return
			}
			if o2.IncidentID == o1.IncidentID {
				t.Fatalf("closed incident (status %d) grew", tc.status)
			}
			closed := wantIncident(t, s, org, o1.IncidentID, ids(o1.ID), 1, 0, vigil.SeverityLow)
			if closed.Status != tc.status {
				t.Errorf("closed incident status %d, want %d", closed.Status, tc.status)
			}
			fresh := wantIncident(t, s, org, o2.IncidentID, ids(o2.ID), 1, 0, vigil.SeverityCritical)
			if fresh.Status != vigil.StatusNew {
				t.Errorf("new incident status %d, want %d", fresh.Status, vigil.StatusNew)
			}
			// Re-opening makes it take observations again (the most
			// recently active open incident wins).
			mustSetStatus(t, s, org, o2.IncidentID, tc.status, "analyst", at(3*time.Minute))
			mustSetStatus(t, s, org, o1.IncidentID, vigil.StatusInvestigating, "analyst", at(4*time.Minute))
			o3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(5*time.Minute), n, n, nil), policy)
			if o3.IncidentID != o1.IncidentID {
				t.Errorf("after re-opening, the observation went to %s, want the re-opened %s", o3.IncidentID, o1.IncidentID)
			}
		})
	}
}

func testCorrelateMerge(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), vigil.NodeRef{Type: vigil.NodeDomain, Value: "c2.example.net"}, hostNode("web-1"))
	ip, domain, host := n[0], n[1], n[2]
	a := mustArtifactIDs(t, s, org, 3)

	o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), ids(ip), ids(ip), a[:1]), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(time.Minute), ids(domain, host), ids(domain), a[1:2]), policy)
	older, newer := o1.IncidentID, o2.IncidentID
	if older == newer {
		t.Fatalf("setup: observations sharing no node joined one incident")
	}
	// o3 names both key nodes: it bridges the two incidents. The newer one
	// is the more recently active, yet everything goes to the older.
	o3 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(2*time.Minute), ids(ip, domain), ids(ip, domain), a[2:]), policy)
	if o3.IncidentID != older {
		t.Fatalf("bridging observation went to %s, want the older incident %s (newer %s)", o3.IncidentID, older, newer)
	}
	wantIncident(t, s, org, older, ids(o1.ID, o2.ID, o3.ID), 3, 3, vigil.SeverityHigh)
	merged := mustIncident(t, s, org, newer)
	if merged.MergedInto == nil || *merged.MergedInto != older {
		t.Errorf("merged incident merged_into = %s, want %s", strPtrString(merged.MergedInto), older)
	}
	for _, o := range []*vigil.Observation{o1, o2, o3} {
		if g := mustObservation(t, s, org, o.ID); g.IncidentID != older {
			t.Errorf("observation %s incident_id %s after merge, want %s", o.ID, g.IncidentID, older)
		}
	}
	// The merged incident's key nodes now join the surviving one.
	o4 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(3*time.Minute), ids(domain), ids(domain), nil), policy)
	if o4.IncidentID != older {
		t.Errorf("observation on the merged incident's key node went to %s, want %s", o4.IncidentID, older)
	}
}

// testMergedLeavesQueue: an incident merged into another leaves lists and
// counts by status unless asked for, still answers by id, and takes no
// status (ECONFLICT naming where it went).
func testMergedLeavesQueue(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), ipNode("198.51.100.23"))
	older := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), ids(n[0]), ids(n[0]), nil), policy).IncidentID
	newer := mustRecord(t, s, org, obs(vigil.SeverityLow, at(time.Minute), ids(n[1]), ids(n[1]), nil), policy).IncidentID
	mustRecord(t, s, org, obs(vigil.SeverityLow, at(2*time.Minute), ids(n[0], n[1]), ids(n[0], n[1]), nil), policy)
	for _, tc := range []struct {
		f    vigil.IncidentFilter
		want []string
	}{
		{vigil.IncidentFilter{}, ids(older)},
		{vigil.IncidentFilter{Merged: vigil.MergedExclude}, ids(older)},
		{vigil.IncidentFilter{Status: vigil.StatusNew}, ids(older)},
		{vigil.IncidentFilter{Merged: vigil.MergedInclude}, ids(newer, older)},
		{vigil.IncidentFilter{Merged: vigil.MergedInclude, Status: vigil.StatusNew}, ids(newer, older)},
		{vigil.IncidentFilter{Merged: vigil.MergedOnly}, ids(newer)},
	} {
		list, total := mustListIncidents(t, s, org, tc.f)
		if got := incidentIDs(list); !slices.Equal(got, tc.want) || total != len(tc.want) {
			t.Errorf("ListIncidents(%+v) = %v (total %d), want %v", tc.f, got, total, tc.want)
		}
	}
	merged := mustIncident(t, s, org, newer)
	if merged.MergedInto == nil || *merged.MergedInto != older || merged.Status != vigil.StatusNew {
		t.Errorf("merged incident: merged_into %s status %d, want %s and New", strPtrString(merged.MergedInto), merged.Status, older)
	}
	_, err := s.SetIncidentStatus(t.Context(), org, newer, vigil.StatusClosed, "alice", at(3*time.Minute))
	wantCode(t, err, vigil.ECONFLICT, "status of a merged incident")
	if msg := vigil.ErrorMessage(err); !strings.Contains(msg, older) {
		t.Errorf("status of a merged incident: message %q does not name %s", msg, older)
	}
	if got := mustIncident(t, s, org, newer); got.Status != vigil.StatusNew || len(got.History) != 0 {
		t.Errorf("merged incident after a refused status: status %d, history %v", got.Status, got.History)
	}
}

func testCorrelateHubLimit(t *testing.T, s Store) {
	// The same story in two orgs: with the default limit the third
	// observation joins; with HubLimit 2 the hub is already in two open
	// incidents and no longer joins.
	for _, tc := range []struct {
		name     string
		hubLimit int
		joins    bool
	}{
		{"below the limit", 25, true},
		{"at the limit", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			org := vigil.NewID()
			p := vigil.CorrelationPolicy{Window: 10 * time.Minute, HubLimit: tc.hubLimit}
			n := mustNodes(t, s, org, ipNode("198.51.100.1"), ipNode("203.0.113.7"), ipNode("192.0.2.9"), ipNode("192.0.2.200"))
			hub, a1, a2, a3 := n[0], n[1], n[2], n[3]
			o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), ids(hub, a1), ids(hub, a1), nil), p)
			// Past the window of the first: a second open incident with the hub.
			o2 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(30*time.Minute), ids(hub, a2), ids(hub, a2), nil), p)
			if o2.IncidentID == o1.IncidentID {
				t.Fatalf("setup: observation past the window joined")
			}
			// Within the window of the second, sharing only the hub.
			o3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(35*time.Minute), ids(hub, a3), ids(hub, a3), nil), p)
			if tc.joins && o3.IncidentID != o2.IncidentID {
				t.Errorf("HubLimit %d: observation sharing the hub opened %s, want it to join %s", tc.hubLimit, o3.IncidentID, o2.IncidentID)
			}
			if !tc.joins {
				if o3.IncidentID == o2.IncidentID || o3.IncidentID == o1.IncidentID {
					t.Errorf("HubLimit %d: observation sharing only a hub node in 2 open incidents joined %s", tc.hubLimit, o3.IncidentID)
				}
				// The hub is still recorded on the new incident, as context.
				wantIncident(t, s, org, o3.IncidentID, ids(o3.ID), 2, 0, vigil.SeverityLow)
				wantIncident(t, s, org, o2.IncidentID, ids(o2.ID), 2, 0, vigil.SeverityLow)
			}
		})
	}
}
