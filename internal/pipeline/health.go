package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// writeHealth remembers whether the processor's last try failed for a
// transient reason (the store's disk is full, the database unreachable):
// the queue holds such messages and retries them, and readiness reports
// the failure until a try succeeds again.
type writeHealth struct {
	mu    sync.Mutex
	err   error
	since time.Time
}

func (h *writeHealth) record(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.err = nil
	case vigil.Transient(err):
		if h.err == nil {
			h.since = time.Now()
		}
		h.err = err
	}
}

// Name identifies the processor in readiness reports.
func (p *Processor) Name() string { return "store_writes" }

// Ready returns nil unless the workers' last try to process artifacts
// failed for a transient reason; then it returns that failure (EUNAVAILABLE
// or ENOSPACE) and since when it lasts, until a try succeeds.
func (p *Processor) Ready(context.Context) error {
	p.health.mu.Lock()
	defer p.health.mu.Unlock()
	if p.health.err == nil {
		return nil
	}
	return &vigil.Error{Code: vigil.ErrorCode(p.health.err), Err: p.health.err, Message: fmt.Sprintf(
		"the workers cannot write to the store since %s: %s; the queue keeps their artifacts until they can",
		p.health.since.UTC().Format(time.RFC3339), vigil.ErrorMessage(p.health.err))}
}
