package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func observationTests() []test {
	return []test{
		{"RoundTrip", testObservationRoundTrip},
		{"UnknownRefsInvalid", testObservationUnknownRefs},
		{"List", testObservationList},
		{"UpdatePartial", testObservationUpdatePartial},
		{"UpdateSeverityChangesIncident", testObservationUpdateSeverity},
		{"UpdateRefsChangeIncidentCounts", testObservationUpdateRefs},
		{"UpdateUnknownRefsInvalid", testObservationUpdateUnknownRefs},
		{"Delete", testObservationDelete},
	}
}

func testObservationRoundTrip(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), hostNode("web-1"), userNode("root"))
	a := mustArtifactIDs(t, s, org, 3)
	o := &vigil.Observation{
		ID: vigil.NewID(), Type: "ssh.bruteforce", Description: "5 failed logins from 203.0.113.7 in 1 min",
		Severity: vigil.SeverityHigh, NodeIDs: ids(n[2], n[0], n[1]), KeyNodeIDs: ids(n[0]),
		ArtifactIDs: ids(a[2], a[0], a[1]), CreatedAt: at(time.Minute), UpdatedAt: at(2 * time.Minute),
	}
	mustRecord(t, s, org, o, policy)
	g := mustObservation(t, s, org, o.ID)
	if g.ID != o.ID || g.OrgID != org || g.Type != o.Type || g.Description != o.Description || g.Severity != o.Severity {
		t.Errorf("got %s org=%s %q %q %s; want %s org=%s %q %q %s",
			g.ID, g.OrgID, g.Type, g.Description, g.Severity, o.ID, org, o.Type, o.Description, o.Severity)
	}
	if !slices.Equal(g.NodeIDs, o.NodeIDs) {
		t.Errorf("node_ids = %v, want %v (in the order given)", g.NodeIDs, o.NodeIDs)
	}
	if !slices.Equal(g.ArtifactIDs, o.ArtifactIDs) {
		t.Errorf("artifact_ids = %v, want %v (in the order given)", g.ArtifactIDs, o.ArtifactIDs)
	}
	if !g.CreatedAt.Equal(o.CreatedAt) || !g.UpdatedAt.Equal(o.UpdatedAt) {
		t.Errorf("created %v updated %v, want %v %v", g.CreatedAt, g.UpdatedAt, o.CreatedAt, o.UpdatedAt)
	}
	if g.IncidentID != o.IncidentID {
		t.Errorf("incident_id = %q, want %q as set by RecordObservation", g.IncidentID, o.IncidentID)
	}
	list, _ := mustListObservations(t, s, org, vigil.ObservationFilter{})
	if len(list) != 1 || !slices.Equal(list[0].NodeIDs, o.NodeIDs) || !slices.Equal(list[0].ArtifactIDs, o.ArtifactIDs) || list[0].IncidentID != o.IncidentID {
		t.Errorf("listed observation differs from the recorded one: %+v", list)
	}
}

func testObservationUnknownRefs(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("10.0.0.1"))
	a := mustArtifactIDs(t, s, org, 1)
	for _, tc := range []struct {
		name string
		o    *vigil.Observation
	}{
		{"unknown node", obs(vigil.SeverityLow, base, ids(n[0], vigil.NewID()), ids(n[0]), a)},
		{"unknown key node", func() *vigil.Observation {
			id := vigil.NewID()
			return obs(vigil.SeverityLow, base, ids(id), ids(id), a)
		}()},
		{"unknown artifact", obs(vigil.SeverityLow, base, n, n, ids(a[0], vigil.NewID()))},
		{"node id given as artifact", obs(vigil.SeverityLow, base, nil, nil, n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := recordObservation(t.Context(), s, org, tc.o, "title", policy)
			wantCode(t, err, vigil.EINVALID, "RecordObservation with "+tc.name)
			_, err = s.GetObservation(t.Context(), org, tc.o.ID)
			wantCode(t, err, vigil.ENOTFOUND, "GetObservation of a refused observation")
		})
	}
	if _, total := mustListObservations(t, s, org, vigil.ObservationFilter{}); total != 0 {
		t.Errorf("%d observations stored after refused records, want 0", total)
	}
	if _, total := mustListIncidents(t, s, org, vigil.IncidentFilter{}); total != 0 {
		t.Errorf("%d incidents opened by refused observations, want 0", total)
	}
}

func testObservationList(t *testing.T, s Store) {
	org := vigil.NewID()
	mk := func(typ, sev string, created time.Time) *vigil.Observation {
		o := obs(sev, created, nil, nil, nil)
		o.Type = typ
		return mustRecord(t, s, org, o, policy)
	}
	o1 := mk("ssh.bruteforce", vigil.SeverityLow, at(0))
	o2 := mk("port.scan", vigil.SeverityMedium, at(1*time.Hour))
	o3 := mk("ssh.bruteforce", vigil.SeverityHigh, at(2*time.Hour))
	o4 := mk("malware", vigil.SeverityHigh, at(3*time.Hour))
	o5 := mk("ssh.bruteforce", vigil.SeverityCritical, at(4*time.Hour))
	t1 := mk("dga", vigil.SeverityLow, at(5*time.Hour))
	t2 := mk("dga", vigil.SeverityLow, at(5*time.Hour))
	newest := append(desc(t1.ID, t2.ID), o5.ID, o4.ID, o3.ID, o2.ID, o1.ID)

	for _, tc := range []struct {
		name  string
		f     vigil.ObservationFilter
		want  []string
		total int
	}{
		{"all, newest first, ties by id", vigil.ObservationFilter{}, newest, 7},
		{"type", vigil.ObservationFilter{Type: "ssh.bruteforce"}, ids(o5.ID, o3.ID, o1.ID), 3},
		{"severity", vigil.ObservationFilter{Severity: vigil.SeverityHigh}, ids(o4.ID, o3.ID), 2},
		{"range [start, end)", vigil.ObservationFilter{Range: vigil.TimeRange{Start: at(time.Hour), End: at(3 * time.Hour)}}, ids(o3.ID, o2.ID), 2},
		{"start only", vigil.ObservationFilter{Range: vigil.TimeRange{Start: at(4 * time.Hour)}}, newest[:3], 3},
		{"end only", vigil.ObservationFilter{Range: vigil.TimeRange{End: at(time.Hour)}}, ids(o1.ID), 1},
		{"type and range", vigil.ObservationFilter{Type: "ssh.bruteforce", Range: vigil.TimeRange{Start: at(0), End: at(2 * time.Hour)}}, ids(o1.ID), 1},
		{"type and severity", vigil.ObservationFilter{Type: "ssh.bruteforce", Severity: vigil.SeverityLow}, ids(o1.ID), 1},
		{"no match", vigil.ObservationFilter{Type: "nothing"}, []string{}, 0},
		{"page 1", vigil.ObservationFilter{Page: vigil.Page{Limit: 3}}, newest[:3], 7},
		{"page 2", vigil.ObservationFilter{Page: vigil.Page{Limit: 3, Offset: 3}}, newest[3:6], 7},
		{"page 3", vigil.ObservationFilter{Page: vigil.Page{Limit: 3, Offset: 6}}, newest[6:], 7},
		{"past the end", vigil.ObservationFilter{Page: vigil.Page{Limit: 3, Offset: 9}}, []string{}, 7},
		{"filtered page", vigil.ObservationFilter{Type: "ssh.bruteforce", Page: vigil.Page{Limit: 1, Offset: 1}}, ids(o3.ID), 3},
	} {
		list, total := mustListObservations(t, s, org, tc.f)
		if total != tc.total || !slices.Equal(observationIDs(list), tc.want) {
			t.Errorf("%s: %v (total %d), want %v (total %d)", tc.name, observationIDs(list), total, tc.want, tc.total)
		}
	}
}

func testObservationUpdatePartial(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), hostNode("web-1"))
	a := mustArtifactIDs(t, s, org, 2)
	o := obs(vigil.SeverityMedium, at(0), n, n[:1], a)
	o.Type, o.Description = "ssh.bruteforce", "first description"
	mustRecord(t, s, org, o, policy)

	check := func(what string, g *vigil.Observation, typ, description string, updated time.Time) {
		t.Helper()
		if g.Type != typ || g.Description != description || g.Severity != vigil.SeverityMedium {
			t.Errorf("%s: type %q description %q severity %s; want %q %q %s", what, g.Type, g.Description, g.Severity, typ, description, vigil.SeverityMedium)
		}
		if !slices.Equal(g.NodeIDs, o.NodeIDs) || !slices.Equal(g.ArtifactIDs, o.ArtifactIDs) {
			t.Errorf("%s: nodes %v artifacts %v changed, want %v %v", what, g.NodeIDs, g.ArtifactIDs, o.NodeIDs, o.ArtifactIDs)
		}
		if !g.CreatedAt.Equal(o.CreatedAt) || !g.UpdatedAt.Equal(updated) {
			t.Errorf("%s: created %v updated %v, want %v %v", what, g.CreatedAt, g.UpdatedAt, o.CreatedAt, updated)
		}
		if g.IncidentID != o.IncidentID {
			t.Errorf("%s: incident %s, want %s", what, g.IncidentID, o.IncidentID)
		}
	}

	d := "second description"
	got, err := updateObservation(t.Context(), s, org, o.ID, vigil.ObservationUpdate{Description: &d}, at(time.Hour))
	if err != nil {
		t.Fatalf("UpdateObservation(description): %v", err)
	}
	check("returned after description update", got, "ssh.bruteforce", d, at(time.Hour))
	check("read after description update", mustObservation(t, s, org, o.ID), "ssh.bruteforce", d, at(time.Hour))

	typ := "ssh.success_after_failures"
	got, err = updateObservation(t.Context(), s, org, o.ID, vigil.ObservationUpdate{Type: &typ}, at(2*time.Hour))
	if err != nil {
		t.Fatalf("UpdateObservation(type): %v", err)
	}
	check("returned after type update", got, typ, d, at(2*time.Hour))
	check("read after type update", mustObservation(t, s, org, o.ID), typ, d, at(2*time.Hour))

	// An update naming no field changes nothing but updated_at.
	if _, err := updateObservation(t.Context(), s, org, o.ID, vigil.ObservationUpdate{}, at(3*time.Hour)); err != nil {
		t.Fatalf("UpdateObservation(nothing): %v", err)
	}
	check("read after empty update", mustObservation(t, s, org, o.ID), typ, d, at(3*time.Hour))
	wantIncident(t, s, org, o.IncidentID, ids(o.ID), 2, 2, vigil.SeverityMedium)

	// An update that does not touch the refs keeps the key node joining:
	// a new observation sharing it (within the window of the incident's
	// last activity, at 0) joins the same incident.
	later := mustRecord(t, s, org, obs(vigil.SeverityLow, at(30*time.Minute), n[:1], n[:1], nil), policy)
	if later.IncidentID != o.IncidentID {
		t.Errorf("after updates, a new observation sharing the key node opened %s, want it to join %s", later.IncidentID, o.IncidentID)
	}
}

func testObservationUpdateSeverity(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"))
	o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), n, n, nil), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(time.Minute), n, n, nil), policy)
	if o1.IncidentID != o2.IncidentID {
		t.Fatalf("setup: observations sharing a key node opened two incidents")
	}
	inc := o1.IncidentID
	wantIncident(t, s, org, inc, ids(o1.ID, o2.ID), 1, 0, vigil.SeverityMedium)

	for _, step := range []struct {
		sev, want string
	}{
		{vigil.SeverityCritical, vigil.SeverityCritical}, // raising raises the incident
		{vigil.SeverityLow, vigil.SeverityMedium},        // lowering it back recomputes
	} {
		sev := step.sev
		got, err := updateObservation(t.Context(), s, org, o1.ID, vigil.ObservationUpdate{Severity: &sev}, at(time.Hour))
		if err != nil {
			t.Fatalf("UpdateObservation(severity %s): %v", sev, err)
		}
		if got.Severity != sev {
			t.Errorf("returned severity %s, want %s", got.Severity, sev)
		}
		if g := mustObservation(t, s, org, o1.ID); g.Severity != sev {
			t.Errorf("stored severity %s, want %s", g.Severity, sev)
		}
		wantIncident(t, s, org, inc, ids(o1.ID, o2.ID), 1, 0, step.want)
		list, _ := mustListIncidents(t, s, org, vigil.IncidentFilter{Severity: step.want})
		if !slices.Equal(incidentIDs(list), ids(inc)) {
			t.Errorf("ListIncidents(severity %s) = %v, want the updated incident", step.want, incidentIDs(list))
		}
	}
}

func testObservationUpdateRefs(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), hostNode("web-1"), userNode("root"))
	a := mustArtifactIDs(t, s, org, 3)
	o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), n[:1], n[:1], a[:1]), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(time.Minute), n[:2], n[:1], a[:2]), policy)
	if o1.IncidentID != o2.IncidentID {
		t.Fatalf("setup: observations sharing a key node opened two incidents")
	}
	inc := o1.IncidentID
	wantIncident(t, s, org, inc, ids(o1.ID, o2.ID), 2, 2, vigil.SeverityLow)

	for _, step := range []struct {
		name           string
		target         *vigil.Observation
		u              vigil.ObservationUpdate
		nodes, arts    int
		wantN, wantArt []string
	}{
		{"o2 artifacts → [a2]", o2, vigil.ObservationUpdate{ArtifactIDs: &[]string{a[2]}}, 2, 2, n[:2], ids(a[2])},
		{"o2 artifacts → [a0, a1, a2]", o2, vigil.ObservationUpdate{ArtifactIDs: &[]string{a[0], a[1], a[2]}}, 2, 3, n[:2], a},
		{"o1 artifacts → []", o1, vigil.ObservationUpdate{ArtifactIDs: &[]string{}}, 2, 3, n[:1], []string{}},
		{"o2 nodes → [n0, n2]", o2, vigil.ObservationUpdate{NodeIDs: &[]string{n[0], n[2]}}, 2, 3, ids(n[0], n[2]), a},
		{"o2 nodes and artifacts", o2, vigil.ObservationUpdate{NodeIDs: &[]string{n[0], n[1], n[2]}, ArtifactIDs: &[]string{a[1]}}, 3, 1, n, ids(a[1])},
	} {
		got, err := updateObservation(t.Context(), s, org, step.target.ID, step.u, at(time.Hour))
		if err != nil {
			t.Fatalf("%s: UpdateObservation: %v", step.name, err)
		}
		g := mustObservation(t, s, org, step.target.ID)
		for _, o := range []*vigil.Observation{got, g} {
			if !slices.Equal(o.NodeIDs, step.wantN) || !slices.Equal(o.ArtifactIDs, step.wantArt) {
				t.Errorf("%s: nodes %v artifacts %v, want %v %v", step.name, o.NodeIDs, o.ArtifactIDs, step.wantN, step.wantArt)
			}
		}
		wantIncident(t, s, org, inc, ids(o1.ID, o2.ID), step.nodes, step.arts, vigil.SeverityLow)
	}
}

func testObservationUpdateUnknownRefs(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"))
	a := mustArtifactIDs(t, s, org, 1)
	o := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), n, n, a), policy)
	badNodes := []string{n[0], vigil.NewID()}
	badArts := []string{vigil.NewID()}
	d := "should not be kept"
	for name, u := range map[string]vigil.ObservationUpdate{
		"unknown node":     {NodeIDs: &badNodes, Description: &d},
		"unknown artifact": {ArtifactIDs: &badArts, Description: &d},
	} {
		_, err := updateObservation(t.Context(), s, org, o.ID, u, at(time.Hour))
		wantCode(t, err, vigil.EINVALID, "UpdateObservation with "+name)
	}
	g := mustObservation(t, s, org, o.ID)
	if g.Description != o.Description || !slices.Equal(g.NodeIDs, n) || !slices.Equal(g.ArtifactIDs, a) || !g.UpdatedAt.Equal(o.UpdatedAt) {
		t.Errorf("refused update changed the observation: %q nodes %v artifacts %v updated %v", g.Description, g.NodeIDs, g.ArtifactIDs, g.UpdatedAt)
	}
	wantIncident(t, s, org, o.IncidentID, ids(o.ID), 1, 1, vigil.SeverityLow)

	_, err := updateObservation(t.Context(), s, org, vigil.NewID(), vigil.ObservationUpdate{Description: &d}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateObservation of a missing observation")
}

func testObservationDelete(t *testing.T, s Store) {
	org := vigil.NewID()
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), hostNode("web-1"))
	a := mustArtifactIDs(t, s, org, 2)
	o1 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(0), n[:1], n[:1], a[:1]), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityCritical, at(time.Minute), n, n[:1], a), policy)
	if o1.IncidentID != o2.IncidentID {
		t.Fatalf("setup: observations sharing a key node opened two incidents")
	}
	wantIncident(t, s, org, o1.IncidentID, ids(o1.ID, o2.ID), 2, 2, vigil.SeverityCritical)

	if err := deleteObservation(t.Context(), s, org, o2.ID); err != nil {
		t.Fatalf("DeleteObservation: %v", err)
	}
	_, err := s.GetObservation(t.Context(), org, o2.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetObservation after delete")
	err = deleteObservation(t.Context(), s, org, o2.ID)
	wantCode(t, err, vigil.ENOTFOUND, "DeleteObservation twice")
	_, err = updateObservation(t.Context(), s, org, o2.ID, vigil.ObservationUpdate{}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateObservation after delete")

	list, total := mustListObservations(t, s, org, vigil.ObservationFilter{})
	if total != 1 || !slices.Equal(observationIDs(list), ids(o1.ID)) {
		t.Errorf("observations after delete = %v (total %d), want [%s]", observationIDs(list), total, o1.ID)
	}
	// The incident now reflects only o1: one node, one artifact, low.
	wantIncident(t, s, org, o1.IncidentID, ids(o1.ID), 1, 1, vigil.SeverityLow)
	if g := mustObservation(t, s, org, o1.ID); !slices.Equal(g.NodeIDs, n[:1]) || !slices.Equal(g.ArtifactIDs, a[:1]) {
		t.Errorf("remaining observation changed: nodes %v artifacts %v", g.NodeIDs, g.ArtifactIDs)
	}
}
