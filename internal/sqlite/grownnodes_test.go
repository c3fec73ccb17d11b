package sqlite

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// TestGrowthAfterNodesReplaced: a growing burst skips writing the nodes
// its observation already has (grownNodes), and must not skip them once
// they are gone — an analyst replaced the observation's nodes (PATCH
// /v1/observations/{id} with node_ids) or the transaction that wrote
// them rolled back. Each time the next growth bringing the node must
// leave it on the observation.
func TestGrowthAfterNodesReplaced(t *testing.T) {
	ctx := t.Context()
	s := openSignalStore(t)
	now := time.Now().Truncate(time.Second)
	const obsID, incID = "0190b000-0000-7000-8000-000000000001", "0190b000-0000-7000-8000-000000000002"
	var host, user, addr string
	var o *vigil.Observation
	run := func(fn func(tx correlate.Tx) error) error { return s.Correlate(ctx, "org", fn) }
	if err := run(func(tx correlate.Tx) error {
		nodes, err := tx.UpsertNodes(ctx, []vigil.NodeRef{{Type: vigil.NodeHost, Value: "dc01"}, {Type: vigil.NodeUser, Value: "corp\\alice"}, {Type: vigil.NodeIP, Value: "198.51.100.7"}}, now)
		if err != nil {
			return err
		}
		host, user, addr = nodes[0].ID, nodes[1].ID, nodes[2].ID
		if err := tx.CreateIncident(ctx, correlate.NewIncident{ID: incID, Title: "t", Severity: "medium", At: now}); err != nil {
			return err
		}
		o = &vigil.Observation{ID: obsID, Type: "brute_force", Description: "d", Severity: "medium", NodeIDs: []string{addr},
			IncidentID: incID, CreatedAt: now, UpdatedAt: now}
		return tx.InsertObservation(ctx, o, 1, map[string]bool{addr: true})
	}); err != nil {
		t.Fatal(err)
	}
	grow := func(ids ...string) error {
		return run(func(tx correlate.Tx) error {
			_, _, err := tx.GrowObservation(ctx, correlate.Growth{ObservationID: obsID, IncidentID: incID, NodeIDs: ids,
				Keys: map[string]bool{}, Description: "d", Severity: "medium", TitleRank: 1, Now: now})
			return err
		})
	}
	nodesOf := func() []string {
		t.Helper()
		got, err := s.GetObservation(ctx, "org", obsID)
		if err != nil {
			t.Fatal(err)
		}
		return got.NodeIDs
	}

	if err := grow(host); err != nil {
		t.Fatal(err)
	}
	if got := nodesOf(); !slices.Contains(got, host) {
		t.Fatalf("after the first growth the observation's nodes are %v, want the host among them", got)
	}
	// The analyst's edit: the observation's nodes are now the user alone.
	if err := run(func(tx correlate.Tx) error {
		o.NodeIDs, o.UpdatedAt = []string{user}, now
		return tx.UpdateObservation(ctx, o, 1, map[string]bool{}, true)
	}); err != nil {
		t.Fatal(err)
	}
	if got := nodesOf(); slices.Contains(got, host) {
		t.Fatalf("the edit left the host on the observation: %v", got)
	}
	if err := grow(host); err != nil {
		t.Fatal(err)
	}
	if got := nodesOf(); !slices.Contains(got, host) || !slices.Contains(got, user) {
		t.Fatalf("a growth bringing the host after the edit: nodes %v, want the user and the host", got)
	}

	// A growth whose transaction rolls back writes nothing; the next one
	// bringing the same node must write it.
	errRollback := errors.New("roll back")
	err := run(func(tx correlate.Tx) error {
		if _, _, err := tx.GrowObservation(context.WithoutCancel(ctx), correlate.Growth{ObservationID: obsID, IncidentID: incID,
			NodeIDs: []string{addr}, Keys: map[string]bool{}, Description: "d", Severity: "medium", TitleRank: 1, Now: now}); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("rolled-back growth: %v", err)
	}
	if got := nodesOf(); slices.Contains(got, addr) {
		t.Fatalf("a rolled-back growth left its node: %v", got)
	}
	if err := grow(addr); err != nil {
		t.Fatal(err)
	}
	if got := nodesOf(); !slices.Contains(got, addr) {
		t.Fatalf("a growth after a rolled-back one: nodes %v, want the address among them", got)
	}
}
