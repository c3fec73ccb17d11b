package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// SearchesLeaveReads checks that artifact searches, however many run at
// once, never take what the other reads of the store need. setHook makes
// every search call a hook while it holds whatever it took of the
// database (a connection, a slot) and returns how many searches can hold
// that at once. With that many searches of one org held inside the store
// and as many more waiting behind them, another org's reads (incidents,
// an incident, observations, nodes, rules, a ping) complete, while the
// searches are still held: the bound on work done is that none of them
// has finished.
func SearchesLeaveReads(t *testing.T, s Store, setHook func(hook func(context.Context)) int) {
	ctx := t.Context()
	mustInsertArtifacts(t, s, "org-a", newArtifact("test", "sshd failed password", at(0)))
	nodes := mustNodes(t, s, "org-b", ipNode("203.0.113.9"))
	o := obs(vigil.SeverityHigh, at(time.Minute), nodes, nodes, nil)
	if err := recordObservation(ctx, s, "org-b", o, "title", policy); err != nil {
		t.Fatalf("record: %v", err)
	}

	entered := make(chan struct{})
	release := make(chan struct{})
	capacity := setHook(func(ctx context.Context) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	if capacity < 1 {
		t.Fatalf("search capacity %d", capacity)
	}
	n := 2 * capacity
	var wg sync.WaitGroup
	errs := make(chan error, n)
	finished := make(chan struct{}, n)
	for range n {
		wg.Go(func() {
			_, _, err := s.SearchArtifacts(ctx, "org-a", vigil.ArtifactFilter{Query: "sshd", Page: vigil.Page{Limit: 10}})
			errs <- err
			finished <- struct{}{}
		})
	}
	defer func() {
		close(release)
		// The hooks of the searches still waiting let them through now.
		go func() {
			for range entered {
			}
		}()
		wg.Wait()
		close(entered)
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("search: %v", err)
			}
		}
	}()
	for range capacity {
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatalf("fewer than %d searches started", capacity)
		}
	}

	// Every read of the other org completes while the searches are held;
	// a minute is only there so that a failure ends the test.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	reads := []struct {
		name string
		fn   func() error
	}{
		{"Ping", func() error { return s.Ping(rctx) }},
		{"ListIncidents", func() error {
			_, total, err := s.ListIncidents(rctx, "org-b", vigil.IncidentFilter{Page: vigil.Page{Limit: 10}})
			if err == nil && total != 1 {
				t.Errorf("ListIncidents total %d, want 1", total)
			}
			return err
		}},
		{"GetIncident", func() error { _, err := s.GetIncident(rctx, "org-b", o.IncidentID); return err }},
		{"ListObservations", func() error {
			_, _, err := s.ListObservations(rctx, "org-b", vigil.ObservationFilter{Page: vigil.Page{Limit: 10}})
			return err
		}},
		{"GetObservation", func() error { _, err := s.GetObservation(rctx, "org-b", o.ID); return err }},
		{"ListNodes", func() error {
			_, _, err := s.ListNodes(rctx, "org-b", vigil.NodeFilter{Page: vigil.Page{Limit: 10}})
			return err
		}},
		{"ListRules", func() error { _, _, err := s.ListRules(rctx, "org-b", vigil.Page{Limit: 10}); return err }},
		{"GetArtifacts", func() error { _, err := s.GetArtifacts(rctx, "org-a", []string{vigil.NewID()}); return err }},
	}
	// Several at once, as many as the searches: reads do not queue either.
	for _, rd := range reads {
		var rwg sync.WaitGroup
		rerrs := make(chan error, n)
		for range n {
			rwg.Go(func() { rerrs <- rd.fn() })
		}
		rwg.Wait()
		close(rerrs)
		for err := range rerrs {
			if err != nil {
				t.Fatalf("%s while %d searches are held: %v", rd.name, capacity, err)
			}
		}
	}
	if len(finished) != 0 {
		t.Fatalf("%d searches finished while held", len(finished))
	}
}
