package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/queue"
)

// Queued is the API's Ingester: it publishes to JetStream and returns once
// the artifacts are durable.
type Queued struct {
	q       *queue.Queue
	wait    time.Duration
	metrics *Metrics
}

// NewQueued returns an Ingester over q. wait is how long a reply may wait
// for the workers to have stored the batch (read-your-writes under normal
// load); 0 replies as soon as the batch is durable.
func NewQueued(q *queue.Queue, wait time.Duration, m *Metrics) *Queued {
	return &Queued{q: q, wait: wait, metrics: m}
}

// Ingest publishes arts; ERATELIMITED when the queue is full or behind.
func (i *Queued) Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error {
	_, err := i.q.Publish(ctx, org, arts, i.wait)
	if err != nil {
		if vigil.ErrorCode(err) == vigil.ERATELIMITED {
			i.metrics.Throttled.Inc()
		}
		return err
	}
	for _, a := range arts {
		i.metrics.Accepted.WithLabelValues(metricSource(a.Source)).Inc()
	}
	return nil
}

// Worker consumes the queue and runs the Processor on each message.
type Worker struct {
	q       *queue.Queue
	p       *Processor
	log     *slog.Logger
	metrics *Metrics
}

// NewWorker returns a Worker.
func NewWorker(q *queue.Queue, p *Processor, log *slog.Logger, m *Metrics) *Worker {
	return &Worker{q: q, p: p, log: log, metrics: m}
}

// Run consumes until ctx ends, then finishes the messages already fetched.
func (w *Worker) Run(ctx context.Context) error {
	return w.q.Consume(ctx, queue.ConsumeOptions{
		MaxBatch: 16,
		OnDead:   func(*queue.Message, error) { w.metrics.DeadLetters.Inc() },
	}, w.handle)
}

// handle processes messages grouped by org in one store transaction per
// org; if a group fails for a reason other than a transient one, its
// messages are retried one by one so that only the bad one is redelivered
// (and at last dead-lettered).
func (w *Worker) handle(ctx context.Context, msgs []*queue.Message) []error {
	errs := make([]error, len(msgs))
	byOrg := map[string][]int{}
	var orgs []string
	for i, m := range msgs {
		if _, ok := byOrg[m.Org]; !ok {
			orgs = append(orgs, m.Org)
		}
		byOrg[m.Org] = append(byOrg[m.Org], i)
	}
	for _, org := range orgs {
		idx := byOrg[org]
		var arts []*vigil.Artifact
		for _, i := range idx {
			arts = append(arts, msgs[i].Artifacts...)
		}
		err := w.p.Process(ctx, org, arts)
		if err == nil {
			continue
		}
		if len(idx) == 1 || vigil.Transient(err) {
			// One message, or a failure of the store rather than of a
			// message: trying the messages one by one would fail alike.
			for _, i := range idx {
				errs[i] = err
			}
			continue
		}
		for _, i := range idx {
			errs[i] = w.p.Process(ctx, org, msgs[i].Artifacts)
		}
	}
	return errs
}
