package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// testIncidentParts: an incident's observations, nodes and artifacts read
// a page at a time, in the orders the store contract gives, each of the
// incident's org only.
func testIncidentParts(t *testing.T, s Store) {
	org := vigil.NewID()
	// Artifacts stored at 0..5 s; the observations name them out of
	// order, so that the order read is the store's.
	a := mustArtifactIDs(t, s, org, 6)
	n := mustNodes(t, s, org, ipNode("203.0.113.7"), hostNode("web-1"), userNode("root"), hostNode("web-2"))
	o1 := mustRecord(t, s, org, obs(vigil.SeverityMedium, at(0), n[:2], n[:1], ids(a[3], a[0])), policy)
	o2 := mustRecord(t, s, org, obs(vigil.SeverityHigh, at(time.Minute), ids(n[0], n[2]), n[:1], ids(a[5], a[1], a[0])), policy)
	o3 := mustRecord(t, s, org, obs(vigil.SeverityLow, at(2*time.Minute), ids(n[0], n[3]), n[:1], ids(a[2], a[4])), policy)
	inc := o1.IncidentID
	if o2.IncidentID != inc || o3.IncidentID != inc {
		t.Fatal("setup: the observations did not join one incident")
	}
	whole := mustIncident(t, s, org, inc)

	for _, p := range []vigil.Page{{Limit: 2}, {Limit: 2, Offset: 2}, {Limit: 50}, {Limit: 1, Offset: 5}, {Limit: 10, Offset: 10}} {
		got, total, err := s.IncidentArtifacts(t.Context(), org, inc, p)
		if err != nil {
			t.Fatalf("IncidentArtifacts %+v: %v", p, err)
		}
		// Newest first: a[5] (5 s) … a[0].
		all := ids(a[5], a[4], a[3], a[2], a[1], a[0])
		want := all[min(p.Offset, 6):min(p.Offset+p.Limit, 6)]
		if total != 6 || !slices.Equal(ArtifactIDs(got), want) {
			t.Errorf("IncidentArtifacts %+v = %v (total %d), want %v (total 6)", p, ArtifactIDs(got), total, want)
		}
		for _, x := range got {
			if x.Raw == "" || x.Source != "test" || x.OrgID != org {
				t.Errorf("artifact %s is not whole: %+v", x.ID, x)
			}
		}
	}
	for _, p := range []vigil.Page{{Limit: 2}, {Limit: 2, Offset: 2}, {Limit: 50}} {
		got, total, err := s.IncidentNodes(t.Context(), org, inc, p)
		if err != nil {
			t.Fatalf("IncidentNodes %+v: %v", p, err)
		}
		want := whole.Nodes[min(p.Offset, 4):min(p.Offset+p.Limit, 4)]
		if total != 4 || !slices.Equal(nodeIDs(got), nodeIDs(want)) {
			t.Errorf("IncidentNodes %+v = %v (total %d), want %v (total 4)", p, nodeIDs(got), total, nodeIDs(want))
		}
		for i, x := range got {
			if x.Key == nil || *x.Key != *want[i].Key || x.Value != want[i].Value || x.Type != want[i].Type {
				t.Errorf("node %s = %+v, want %+v", x.ID, x, want[i])
			}
		}
	}
	for _, p := range []vigil.Page{{Limit: 1}, {Limit: 2, Offset: 1}, {Limit: 50}} {
		got, total, err := s.IncidentObservations(t.Context(), org, inc, p)
		if err != nil {
			t.Fatalf("IncidentObservations %+v: %v", p, err)
		}
		all := []*vigil.Observation{o1, o2, o3} // oldest first
		want := all[min(p.Offset, 3):min(p.Offset+p.Limit, 3)]
		if total != 3 || len(got) != len(want) {
			t.Fatalf("IncidentObservations %+v: %d (total %d), want %d (total 3)", p, len(got), total, len(want))
		}
		for i, o := range got {
			w := want[i]
			if o.ID != w.ID || o.IncidentID != inc || !slices.Equal(o.NodeIDs, w.NodeIDs) || !slices.Equal(o.ArtifactIDs, w.ArtifactIDs) {
				t.Errorf("observation %d = %s nodes %v artifacts %v, want %s nodes %v artifacts %v",
					i, o.ID, o.NodeIDs, o.ArtifactIDs, w.ID, w.NodeIDs, w.ArtifactIDs)
			}
		}
	}

	// Another org's incident, and a missing one, are not found.
	other := vigil.NewID()
	for _, org := range []string{other, org} {
		id := inc
		if org != other {
			id = vigil.NewID()
		}
		_, _, err := s.IncidentArtifacts(t.Context(), org, id, vigil.Page{Limit: 10})
		wantCode(t, err, vigil.ENOTFOUND, "IncidentArtifacts of another org's or a missing incident")
		_, _, err = s.IncidentNodes(t.Context(), org, id, vigil.Page{Limit: 10})
		wantCode(t, err, vigil.ENOTFOUND, "IncidentNodes of another org's or a missing incident")
		_, _, err = s.IncidentObservations(t.Context(), org, id, vigil.Page{Limit: 10})
		wantCode(t, err, vigil.ENOTFOUND, "IncidentObservations of another org's or a missing incident")
	}
}
