package rules

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// Reclassifier classifies again, in the background, the open incidents
// of each org whose rules changed. A rule write only marks the org (in
// its own transaction, vigil.RuleStore): re-classifying every open
// incident inside the request took seconds per write, each incident's
// artifacts parsed again, with the CPUs of every tenant. The marks are
// worked off one step at a time (at most Batch incidents of one org per
// step, the org then going to the end of the line), so that an org with
// many incidents delays the others by one step at most; writes made
// before a step make one pass; and a pass interrupted by a crash or a
// restart goes on where it was, in whichever process claims it next.
type Reclassifier struct {
	store    reclassifyStore
	classify interface {
		Incidents(ctx context.Context, org string, ids []string) error
	}
	log  *slog.Logger
	wake chan struct{}
	now  func() time.Time

	// Batch is how many incidents a step classifies; Lease how long a
	// claim lasts (a step is cut off at half of it); Poll how often the
	// store is asked for marks that other processes made.
	Batch int
	Lease time.Duration
	Poll  time.Duration
}

// reclassifyStore is what the Reclassifier reads and writes.
type reclassifyStore interface {
	ClaimReclassify(ctx context.Context, now, until time.Time) (*vigil.Reclassification, error)
	ReleaseReclassify(ctx context.Context, c vigil.Reclassification, cursor string, done bool, now time.Time) error
	OpenIncidentIDs(ctx context.Context, org string) ([]string, error)
}

// NewReclassifier returns a Reclassifier over store, classifying with
// the org's rules as a Classifier does.
func NewReclassifier(store vigil.Store, log *slog.Logger) *Reclassifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reclassifier{store: store, classify: NewClassifier(store), log: log, wake: make(chan struct{}, 1),
		now: vigil.Now, Batch: 100, Lease: 2 * time.Minute, Poll: 5 * time.Second}
}

// Notify makes Run look for marks now rather than at its next poll: a
// rule was written in this process.
func (r *Reclassifier) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run works the marks off until ctx ends: step after step while there
// are some, then it waits for Notify or the next poll.
func (r *Reclassifier) Run(ctx context.Context) {
	t := time.NewTicker(r.Poll)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			worked, err := r.Step(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn("re-classification", slog.String("error", err.Error()))
				}
				break
			}
			if !worked {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-t.C:
		}
	}
}

// Step claims the mark that has waited longest and classifies up to
// Batch of its org's open incidents, in the order of their ids, after
// the mark's cursor. It reports whether there was a mark.
func (r *Reclassifier) Step(ctx context.Context) (bool, error) {
	now := r.now()
	c, err := r.store.ClaimReclassify(ctx, now, now.Add(r.Lease))
	if err != nil || c == nil {
		return false, err
	}
	sctx, cancel := context.WithTimeout(ctx, r.Lease/2)
	defer cancel()
	cursor, done, err := r.classifyBatch(sctx, *c)
	if err != nil {
		cursor, done = c.Cursor, false
	}
	// Released even when ctx ended (a shutdown), so that another process
	// need not wait for the claim to expire.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	if rerr := r.store.ReleaseReclassify(rctx, *c, cursor, done, r.now()); err == nil {
		err = rerr
	}
	if err == nil && done {
		r.log.Debug("re-classified open incidents", slog.String("org", c.OrgID))
	}
	return true, err
}

// classifyBatch classifies the next Batch open incidents of c's org
// after its cursor, and returns the new cursor and whether none is left.
func (r *Reclassifier) classifyBatch(ctx context.Context, c vigil.Reclassification) (string, bool, error) {
	ids, err := r.store.OpenIncidentIDs(ctx, c.OrgID)
	if err != nil {
		return "", false, err
	}
	slices.Sort(ids)
	i, _ := slices.BinarySearch(ids, c.Cursor)
	if i < len(ids) && ids[i] == c.Cursor {
		i++
	}
	batch := ids[i:min(len(ids), i+r.Batch)]
	if len(batch) == 0 {
		return c.Cursor, true, nil
	}
	if err := r.classify.Incidents(ctx, c.OrgID, batch); err != nil {
		return "", false, err
	}
	return batch[len(batch)-1], i+len(batch) == len(ids), nil
}
