package detect_test

import (
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
)

// TestWindowsAccountsJoinedBySID: the real recording "remote task update
// 4624 4702 same logonid.evtx" names the account a-jbrown as
// 3B\a-jbrown (its 1102 and its first 4624) and as
// THREEBEESCO.COM\a-jbrown (two later 4624s), with one SID. Through the
// pipeline both names are one User node of the org, the name its events
// gave first; no incident names the other. Another org joins nothing of
// it. The lab machines' local accounts ieuser of PC02
// (DE_RDP_Tunneling_4624.evtx) and of IEWIN7
// (security_4624_4673_token_manip.evtx) share one SID — copies of one
// disk image — and stay two accounts. Failing before: two nodes.
func TestWindowsAccountsJoinedBySID(t *testing.T) {
	e := newEnv(t, detect.Config{})
	e.process(t, "acme", 200, windowsArtifacts(evtxRecords(t, "Lateral Movement/remote task update 4624 4702 same logonid.evtx")))
	user := func(v string) vigil.NodeRef { return vigil.NodeRef{Type: vigil.NodeUser, Value: v} }
	upsert := func(org string, refs ...vigil.NodeRef) []vigil.Node {
		t.Helper()
		nodes, err := e.store.UpsertNodes(t.Context(), org, refs)
		if err != nil {
			t.Fatal(err)
		}
		return nodes
	}
	short, full := user(`3b\a-jbrown`), user(`threebeesco\a-jbrown`)
	n := upsert("acme", full, short)
	if n[0].ID != n[1].ID || n[0].Value != short.Value {
		t.Errorf("acme's %s and %s: nodes %s %q and %s %q, want one, %s", full.Value, short.Value, n[0].ID, n[0].Value, n[1].ID, n[1].Value, short.Value)
	}
	incs := e.incidents(t, "acme")
	if len(incs) == 0 {
		t.Fatal("the recording gave no incident")
	}
	for _, inc := range incs {
		if inc.has(full.Value) {
			t.Errorf("incident %q names %s: want the account's one node %s", inc.Title, full.Value, short.Value)
		}
	}
	if o := upsert("other", full, short); o[0].ID == o[1].ID || o[0].ID == n[0].ID {
		t.Errorf("another org's %s and %s: nodes %s and %s (acme's %s), want two of its own", full.Value, short.Value, o[0].ID, o[1].ID, n[0].ID)
	}

	e.process(t, "lab", 200, windowsArtifacts(evtxRecords(t, "Command and Control/DE_RDP_Tunneling_4624.evtx")))
	e.process(t, "lab", 200, windowsArtifacts(evtxRecords(t, "Privilege Escalation/security_4624_4673_token_manip.evtx")))
	if l := upsert("lab", user(`pc02\ieuser`), user(`iewin7\ieuser`)); l[0].ID == l[1].ID {
		t.Errorf("local accounts pc02\\ieuser and iewin7\\ieuser joined into one node %s", l[0].ID)
	}
}
