package correlate

import (
	"context"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// rollupBatch gathers what the findings of one transaction do to each
// roll-up, written once when the transaction's work is done (flush): a
// roll-up that takes hundreds of scanners' findings a second is counted,
// retitled, refreshed and recorded in its history once a batch, not once
// a finding (its history says "grew" once a batch, naming the newest
// finding). What the store writes per finding — the observation, its
// place in the roll-up, its source's count — it writes at once.
type rollupBatch struct {
	byDetection map[string]*pendingRollup // nil value: none open
	byIncident  map[string]*pendingRollup
	// touched are the incidents the batch changed beyond those its
	// findings are in: the roll-ups it wrote (a source that left one
	// takes its nodes and artifacts away) and the incidents it took
	// findings from without emptying them. The classification rules look
	// at them again.
	touched []string
	// growing are the growths of incidents that are no roll-ups, by
	// incident, not written yet (grow_batch.go).
	growing map[string]*pendingGrowth
}

// pendingRollup is a roll-up as a batch has it: its state with what is
// pending, and the pending counts.
type pendingRollup struct {
	r                                *Rollup
	sources, count, nodes, artifacts int
	observation                      string // the newest finding that joined or grew it
	who                              by
	at                               time.Time
	dirty                            bool
}

func newRollupBatch() *rollupBatch {
	return &rollupBatch{byDetection: map[string]*pendingRollup{}, byIncident: map[string]*pendingRollup{}}
}

// open returns the open roll-up of detection whose window holds at, or
// nil, taking the detection's roll-up lock the first time.
func (rb *rollupBatch) open(ctx context.Context, tx Tx, detection string, at time.Time) (*pendingRollup, error) {
	if p, ok := rb.byDetection[detection]; ok && (p == nil || at.Before(p.r.WindowEnd)) {
		return p, nil
	}
	if _, ok := rb.byDetection[detection]; !ok {
		if err := tx.LockRollup(ctx, detection); err != nil {
			return nil, err
		}
	}
	r, err := tx.OpenRollup(ctx, detection, at)
	if err != nil {
		return nil, err
	}
	return rb.keep(detection, r), nil
}

// of returns roll-up incident, or nil when it is none.
func (rb *rollupBatch) of(ctx context.Context, tx Tx, incident string) (*pendingRollup, error) {
	if p, ok := rb.byIncident[incident]; ok {
		return p, nil
	}
	r, err := tx.RollupOf(ctx, incident)
	if err != nil || r == nil {
		return nil, err
	}
	return rb.keep(r.Detection, r), nil
}

// keep records r (nil: none open of detection) in the batch.
func (rb *rollupBatch) keep(detection string, r *Rollup) *pendingRollup {
	if r == nil {
		rb.byDetection[detection] = nil
		return nil
	}
	if p, ok := rb.byIncident[r.IncidentID]; ok {
		rb.byDetection[detection] = p
		return p
	}
	p := &pendingRollup{r: r}
	rb.byIncident[r.IncidentID] = p
	rb.byDetection[detection] = p
	return p
}

// grew records that observation grew p (or joined it) by b at at.
func (p *pendingRollup) grew(observation string, b by, at time.Time) {
	p.observation, p.who, p.at, p.dirty = observation, b, maxTime(p.at, at), true
}

// flush writes what is pending of every incident the batch grew and
// every roll-up it changed, in the order of their ids.
func (rb *rollupBatch) flush(ctx context.Context, tx Tx, now time.Time) error {
	if err := rb.flushGrowths(ctx, tx); err != nil {
		return err
	}
	ids := make([]string, 0, len(rb.byIncident))
	for id, p := range rb.byIncident {
		if p.dirty {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := rb.byIncident[id]
		at := p.at
		if at.IsZero() {
			at = now
		}
		if err := tx.UpdateRollup(ctx, RollupUpdate{IncidentID: id, Sources: p.sources, Count: p.count, Nodes: p.nodes,
			Artifacts: p.artifacts, Title: vigil.RollupTitle(p.r.Name, p.r.Sources), At: at, Active: p.observation != ""}); err != nil {
			return err
		}
		if p.observation != "" {
			if err := tx.RecordEvent(ctx, p.who.event(vigil.EventGrew, id, at, vigil.EventDetail{ObservationID: p.observation})); err != nil {
				return err
			}
		}
		p.sources, p.count, p.nodes, p.artifacts, p.observation, p.dirty = 0, 0, 0, 0, "", false
	}
	rb.touched = append(rb.touched, ids...)
	return nil
}
