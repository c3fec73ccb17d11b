package storetest

import (
	"sync"
	"testing"

	"github.com/vigil-soc/vigil"
)

// deploymentTests check the database identity. They need more than one
// store, so they take open rather than a store.
func deploymentTests(t *testing.T, open func(t *testing.T) vigil.Store) {
	t.Run("StableAcrossCalls", func(t *testing.T) {
		s := open(t)
		first := mustDeploymentID(t, s)
		if !vigil.ValidID(first) {
			t.Errorf("DeploymentID = %q, want a UUID", first)
		}
		for range 3 {
			if again := mustDeploymentID(t, s); again != first {
				t.Fatalf("DeploymentID changed from %q to %q", first, again)
			}
		}
	})
	t.Run("ConcurrentFirstCallsAgree", func(t *testing.T) {
		s := open(t)
		const n = 8
		got := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = s.DeploymentID(t.Context())
			}()
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("call %d: %v", i, errs[i])
			}
			if got[i] != got[0] {
				t.Fatalf("concurrent first calls returned %q and %q, want one id", got[0], got[i])
			}
		}
	})
	t.Run("DistinctPerDatabase", func(t *testing.T) {
		a, b := mustDeploymentID(t, open(t)), mustDeploymentID(t, open(t))
		if a == b {
			t.Errorf("two databases share DeploymentID %q", a)
		}
	})
}

func mustDeploymentID(t *testing.T, s vigil.Store) string {
	t.Helper()
	id, err := s.DeploymentID(t.Context())
	if err != nil {
		t.Fatalf("DeploymentID: %v", err)
	}
	if id == "" {
		t.Fatal("DeploymentID returned an empty id")
	}
	return id
}
