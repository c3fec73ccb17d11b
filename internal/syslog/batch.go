package syslog

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// Batching: a batch is published when it has batchMax messages of one org
// or its first message waited batchLinger; publishers batches are
// published at once (while one waits for the queue's acknowledgement the
// next is being filled).
const (
	batchMax    = 1000
	batchLinger = 50 * time.Millisecond
	publishers  = 2
)

// item is one received message on its way to the queue.
type item struct {
	l   *listener
	org string
	art *vigil.Artifact
}

type batch struct {
	org   string
	items []item
}

// batcher gathers the messages of every listener into batches per org
// and publishes them, retrying until the queue takes them. While it
// retries, its input fills: TCP and TLS connections then wait to hand
// over their next message and stop reading, UDP listeners drop.
type batcher struct {
	in      chan item
	batches chan batch
	ing     Ingester
	m       *metrics
	log     *slog.Logger
	drops   func(l *listener, reason string, n int)

	// ctx ends when the shutdown deadline passes: publishing stops.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
}

func newBatcher(ing Ingester, m *metrics, log *slog.Logger, drops func(*listener, string, int)) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batcher{
		in: make(chan item, batchMax), batches: make(chan batch), ing: ing, m: m, log: log, drops: drops,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	for range publishers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for bt := range b.batches {
				b.publish(bt.org, bt.items)
			}
		}()
	}
	go b.run()
	return b
}

// put hands it over, waiting while the batcher is behind; false when ctx
// ended first.
func (b *batcher) put(ctx context.Context, it item) bool {
	select {
	case b.in <- it:
		return true
	default:
	}
	select {
	case b.in <- it:
		return true
	case <-ctx.Done():
		return false
	}
}

// offer hands it over if the batcher can take it now.
func (b *batcher) offer(it item) bool {
	select {
	case b.in <- it:
		return true
	default:
		return false
	}
}

func (b *batcher) run() {
	defer close(b.done)
	pending := map[string][]item{}
	var orgs []string
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	send := func(org string) {
		b.batches <- batch{org: org, items: pending[org]}
		delete(pending, org)
	}
	flushAll := func() {
		for _, org := range orgs {
			if len(pending[org]) > 0 {
				send(org)
			}
		}
		orgs = orgs[:0]
	}
	for {
		select {
		case it, ok := <-b.in:
			if !ok {
				flushAll()
				close(b.batches)
				b.wg.Wait()
				return
			}
			p, seen := pending[it.org]
			if !seen {
				orgs = append(orgs, it.org)
				p = make([]item, 0, 64)
			}
			pending[it.org] = append(p, it)
			if len(pending[it.org]) >= batchMax {
				send(it.org)
			} else if !armed {
				timer.Reset(batchLinger)
				armed = true
			}
		case <-timer.C:
			armed = false
			flushAll()
		}
	}
}

// close publishes what is pending, waiting until ctx ends at most; the
// listeners must have stopped handing over.
func (b *batcher) close(ctx context.Context) {
	close(b.in)
	select {
	case <-b.done:
	case <-ctx.Done():
		b.cancel()
		<-b.done
	}
	b.cancel()
}

// publish ingests items, retrying until the queue takes them: a full or
// unreachable queue is waited for, never a reason to drop. A batch larger
// than the whole queue is split; only a single message larger than it is
// dropped (counted), and what is still unqueued when the shutdown
// deadline passes.
func (b *batcher) publish(org string, items []item) {
	arts := make([]*vigil.Artifact, len(items))
	for i, it := range items {
		arts[i] = it.art
	}
	var since, last time.Time
	backoff := 20 * time.Millisecond
	for {
		err := b.ing.Ingest(b.ctx, org, arts)
		if !last.IsZero() {
			b.m.blocked.Add(time.Since(last).Seconds())
		}
		if err == nil {
			if !since.IsZero() {
				b.log.Info("syslog: the ingest queue takes messages again", slog.String("org", org),
					slog.Duration("waited", time.Since(since).Round(time.Millisecond)))
			}
			return
		}
		if vigil.ErrorCode(err) == vigil.ETOOLARGE {
			if len(items) == 1 {
				b.log.Error("syslog: message dropped: larger than the whole ingest queue may hold", slog.String("listener", items[0].l.cfg.Name),
					slog.Int("bytes", len(items[0].art.Raw)), slog.String("error", vigil.ErrorMessage(err)))
				b.drops(items[0].l, dropTooLarge, 1)
				return
			}
			b.publish(org, items[:len(items)/2])
			b.publish(org, items[len(items)/2:])
			return
		}
		if b.ctx.Err() != nil {
			b.lost(items, err)
			return
		}
		now := time.Now()
		if since.IsZero() {
			since = now
			b.log.Warn("syslog: the ingest queue refuses a batch; TCP and TLS listeners stop reading and UDP listeners drop until it takes it",
				slog.String("org", org), slog.Int("messages", len(items)), slog.String("error", vigil.ErrorMessage(err)))
		}
		last = now
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-b.ctx.Done():
			t.Stop()
		}
		backoff = min(backoff*2, time.Second)
	}
}

// lost counts and logs messages given up at the shutdown deadline.
func (b *batcher) lost(items []item, err error) {
	by := map[*listener]int{}
	for _, it := range items {
		by[it.l]++
	}
	for l, n := range by {
		b.drops(l, dropShutdown, n)
		b.log.Error(fmt.Sprintf("syslog: %d messages not queued before the shutdown deadline; they are lost", n),
			slog.String("listener", l.cfg.Name), slog.String("error", vigil.ErrorMessage(err)))
	}
}
