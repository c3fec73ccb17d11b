package pipeline

import (
	"context"

	"github.com/vigil-soc/vigil"
)

// Direct stores and parses artifacts synchronously in the caller: the
// pipeline without a queue, for tests of the API alone.
type Direct struct{ p *Processor }

// NewDirectProcessor returns a Direct pipeline running p.
func NewDirectProcessor(p *Processor) *Direct { return &Direct{p: p} }

// Ingest processes arts before returning, their raw lines decoded first
// (vigil.Artifact.RawJSON).
func (d *Direct) Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error {
	for _, a := range arts {
		if err := a.DecodeRaw(); err != nil {
			return err
		}
	}
	return d.p.Process(ctx, org, arts)
}
