package vlogs

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The API's readiness. Ingest does not need the cluster (the API queues
// what it accepts, and a worker writes to any storage node that takes
// it), so the front or a storage node down must not take the API out of
// a load balancer: APICheck reports the cluster in /readyz without
// failing it. A worker's /readyz (Ready) fails while any node is down.

// statusTimeout bounds the health checks of Status.
const statusTimeout = 1500 * time.Millisecond

// APICheck is the "artifacts" check of vigil serve's /readyz.
type APICheck struct{ C *Cluster }

// Name names the check.
func (APICheck) Name() string { return "artifacts" }

// Ready never fails: see Status.
func (APICheck) Ready(context.Context) error { return nil }

// Status is "ok", or "degraded: …" naming what does not answer and what
// that means for searches and ingest.
func (a APICheck) Status() string {
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	storage, front := a.C.health(ctx)
	down := 0
	for _, err := range storage {
		if err != nil {
			down++
		}
	}
	switch {
	case down == len(storage):
		return fmt.Sprintf("degraded: no storage node of %d answers: searches answer 503, ingest waits in the queue", len(storage))
	case down > 0:
		return fmt.Sprintf("degraded: %d of %d storage nodes do not answer: searches answer 503, ingest goes to the others", down, len(storage))
	case front != nil:
		return "degraded: the front (select node) does not answer: searches answer 503, ingest goes on"
	}
	return "ok"
}

// health checks every storage node and the front at once: the storage
// nodes' errors in their order, then the front's.
func (c *Cluster) health(ctx context.Context) (storage []error, front error) {
	storage = make([]error, len(c.storage))
	var wg sync.WaitGroup
	wg.Go(func() { _, front = c.call(ctx, "health", c.front, "/health", nil) })
	for i, n := range c.storage {
		wg.Go(func() { _, storage[i] = c.call(ctx, "health", n.url, "/health", nil) })
	}
	wg.Wait()
	return storage, front
}
