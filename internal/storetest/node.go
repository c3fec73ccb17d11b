package storetest

import (
	"testing"

	"github.com/vigil-soc/vigil"
)

func nodeTests() []test {
	return []test{
		{"SameIDOnRepeat", testNodeSameID},
		{"OtherOrgOtherID", testNodeOtherOrg},
	}
}

func testNodeSameID(t *testing.T, s vigil.Store) {
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

func testNodeOtherOrg(t *testing.T, s vigil.Store) {
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
