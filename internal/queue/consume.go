package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigil-soc/vigil"
)

// Message is one delivered chunk of an org's batch.
type Message struct {
	Org       string
	Batch     string
	Artifacts []*vigil.Artifact
	// Delivered counts deliveries of this message, 1 the first time.
	Delivered uint64

	msg jetstream.Msg
}

// Handler processes delivered messages. It returns one error per message
// (nil or a nil entry = done; the message is acknowledged), so that one bad
// message does not hold back the others. A transient error
// (vigil.Transient) has the message handed to the handler again after a
// pause, for as long as the error lasts; any other error counts as a
// failed try (see Consume).
type Handler func(ctx context.Context, msgs []*Message) []error

// DeadLetter is called when a message is moved to the dead-letter stream.
type DeadLetter func(m *Message, cause error)

// ConsumeOptions tune a consumer loop.
type ConsumeOptions struct {
	// MaxBatch bounds the messages handed to the handler at once.
	MaxBatch int
	// OnDead is told about every dead-lettered message.
	OnDead DeadLetter
}

// fetchWait is how long one pull for the next message waits on an idle
// queue: the longest a worker stopping takes to notice, not a delay of
// any message (one arriving meanwhile is handed over at once).
var fetchWait = time.Second

// Consume feeds messages to h until ctx ends, then finishes what was
// already fetched (handled and acknowledged, not dropped) and returns.
// Messages failed by a transient error are held and retried in place (see
// handle); other failures are redelivered with a growing delay, and after
// MaxDeliver deliveries the message is copied to the dead-letter stream
// and acknowledged.
//
// A message is fetched only when the handler is free to take it, and the
// ones it holds have their ack deadline restarted while it works: a
// message waiting in a buffer behind a slow batch, or in a batch slower
// than AckWait (a loaded machine, a store syncing to disk), would be
// handed to another worker meanwhile and processed twice.
func (q *Queue) Consume(ctx context.Context, opt ConsumeOptions, h Handler) error {
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 64
	}
	for {
		raw, err := q.fetch(opt.MaxBatch)
		if len(raw) > 0 {
			q.handle(ctx, raw, opt, h)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			q.log.Warn("queue: fetch", slog.String("error", err.Error()))
			// A server gone or electing the consumer's leader answers
			// at once: pause rather than spin.
			t := time.NewTimer(fetchWait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		}
	}
}

// fetch waits up to fetchWait for a message, then takes those waiting
// behind it, n in all. Every message it returns was delivered and must
// be handled: none is left in a buffer to outlive its ack deadline.
func (q *Queue) fetch(n int) ([]jetstream.Msg, error) {
	first, err := q.cons.Fetch(1, jetstream.FetchMaxWait(fetchWait))
	if err != nil {
		return nil, err
	}
	var raw []jetstream.Msg
	for m := range first.Messages() {
		raw = append(raw, m)
	}
	if len(raw) == 0 || n == 1 {
		return raw, first.Error()
	}
	rest, err := q.cons.FetchNoWait(n - 1)
	if err != nil {
		return raw, err
	}
	for m := range rest.Messages() {
		raw = append(raw, m)
	}
	return raw, rest.Error()
}

// keepAlive restarts the ack deadline of msgs every third of AckWait
// until the returned stop is called (which returns once it no longer
// does).
func (q *Queue) keepAlive(msgs []*Message) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(max(q.cfg.AckWait/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				for _, m := range msgs {
					m.msg.InProgress()
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// handle decodes raw, runs h and acknowledges, retries or dead-letters
// each message. A transient failure (vigil.Transient: the store is
// unreachable, full, busy) is no fault of the message: the message is
// kept — its ack deadline extended — and handed to h again after a pause,
// as long as it takes, so that it never spends the tries that lead to the
// dead-letter stream. Only when stop ends (shutdown) is it handed back to
// the queue, for the next worker or the next start.
func (q *Queue) handle(stop context.Context, raw []jetstream.Msg, opt ConsumeOptions, h Handler) {
	ctx := context.WithoutCancel(stop) // in-flight work finishes after stop ends
	msgs := make([]*Message, 0, len(raw))
	for _, m := range raw {
		dm, err := decode(m)
		if err != nil {
			// Undecodable: no retry can help.
			q.dead(ctx, &Message{msg: m}, err, opt.OnDead)
			continue
		}
		msgs = append(msgs, dm)
	}
	var since time.Time // of the first transient failure
	for try := 0; len(msgs) > 0; try++ {
		alive := q.keepAlive(msgs)
		errs := h(ctx, msgs)
		alive()
		var done []string
		var held []*Message
		var cause error
		for i, m := range msgs {
			var err error
			if i < len(errs) {
				err = errs[i]
			}
			switch {
			case err == nil:
				if aerr := m.msg.Ack(); aerr != nil {
					q.log.Warn("queue: ack", slog.String("error", aerr.Error()))
				}
				done = append(done, m.Batch)
			case vigil.Transient(err):
				held, cause = append(held, m), err
			case m.Delivered >= uint64(q.cfg.MaxDeliver):
				q.dead(ctx, m, err, opt.OnDead)
				done = append(done, m.Batch)
			default:
				q.log.Warn("queue: message failed; will retry", slog.String("batch", m.Batch),
					slog.Uint64("delivered", m.Delivered), slog.String("error", err.Error()))
				m.msg.NakWithDelay(retryDelay(q.cfg.RetryBase, m.Delivered))
			}
		}
		q.notify(done)
		if len(held) == 0 {
			if try > 0 {
				q.log.Info("queue: held messages processed; the failure has passed",
					slog.Int("tries", try+1), slog.String("after", time.Since(since).Round(time.Millisecond).String()))
			}
			return
		}
		if try == 0 {
			since = time.Now()
			q.log.Warn("queue: transient failure; holding the messages and retrying until it passes",
				slog.Int("messages", len(held)), slog.String("error", cause.Error()))
		} else if try%20 == 0 {
			q.log.Warn("queue: still failing; messages held", slog.Int("messages", len(held)),
				slog.String("for", time.Since(since).Round(time.Second).String()), slog.String("error", cause.Error()))
		}
		for _, m := range held {
			m.msg.InProgress() // restarts AckWait: not redelivered elsewhere meanwhile
		}
		t := time.NewTimer(transientDelay(try, q.cfg.AckWait))
		select {
		case <-t.C:
		case <-stop.Done():
			t.Stop()
			for _, m := range held {
				m.msg.Nak()
			}
			q.log.Info("queue: shutting down; held messages handed back to the queue", slog.Int("messages", len(held)))
			return
		}
		msgs = held
	}
}

// transientDelay is the pause before the next try of messages held after
// a transient failure: 250 ms doubling to at most 10 s, and at most a
// third of AckWait so that the held messages' deadline, restarted at each
// try, never passes.
func transientDelay(try int, ackWait time.Duration) time.Duration {
	d := 250 * time.Millisecond << min(try, 6)
	return min(d, 10*time.Second, max(ackWait/3, 10*time.Millisecond))
}

// retryDelay grows with each failed delivery: base, 4×base, 16×base, …
// at most a minute (base 1 s: 1 s, 4 s, 16 s, 1 min).
func retryDelay(base time.Duration, delivered uint64) time.Duration {
	d := base
	for i := uint64(1); i < delivered && d < time.Minute; i++ {
		d *= 4
	}
	return min(d, time.Minute)
}

// dead copies m to the dead-letter stream with the cause, then
// acknowledges it. If the copy fails, the message is left for redelivery:
// it is never dropped unseen.
func (q *Queue) dead(ctx context.Context, m *Message, cause error, onDead DeadLetter) {
	dl := nats.NewMsg(q.names.DeadSubject)
	dl.Data = m.msg.Data()
	dl.Header.Set("Vigil-Error", truncate(cause.Error(), 1000))
	if md, err := m.msg.Metadata(); err == nil {
		dl.Header.Set("Vigil-Stream-Seq", fmt.Sprint(md.Sequence.Stream))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := q.js.PublishMsg(pctx, dl); err != nil {
		q.log.Error("queue: dead-letter publish failed; message kept", slog.String("error", err.Error()))
		m.msg.NakWithDelay(time.Minute)
		return
	}
	q.log.Error("queue: message dead-lettered", slog.String("batch", m.Batch), slog.String("error", cause.Error()))
	if onDead != nil {
		onDead(m, cause)
	}
	m.msg.Ack()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func decode(m jetstream.Msg) (*Message, error) {
	env, err := decodeEnvelope(m.Data())
	if err != nil {
		return nil, fmt.Errorf("decode message: %w", err)
	}
	if env.Org == "" {
		return nil, errors.New("decode message: no org")
	}
	// The org is copied: what the pipeline keeps of it for long (the
	// detection state's keys, the look-up queue's) must not keep the
	// whole message alive, as the strings decoded from it would.
	org := strings.Clone(env.Org)
	out := &Message{Org: org, Batch: env.Batch, msg: m, Delivered: 1}
	if md, err := m.Metadata(); err == nil {
		out.Delivered = md.NumDelivered
	}
	out.Artifacts = make([]*vigil.Artifact, len(env.Artifacts))
	for i, a := range env.Artifacts {
		meta := a.Metadata
		if len(meta) == 0 {
			meta = json.RawMessage("{}")
		}
		out.Artifacts[i] = &vigil.Artifact{ID: a.ID, OrgID: org, Source: a.Source, Raw: a.Raw,
			Timestamp: time.Unix(0, a.Timestamp).UTC(), CreatedAt: time.Unix(0, a.Created).UTC(), Metadata: meta,
			TimestampDefaulted: a.Defaulted}
	}
	return out, nil
}

// DeadLetters returns the number of messages in the dead-letter stream.
func (q *Queue) DeadLetters(ctx context.Context) (uint64, error) {
	s, err := q.js.Stream(ctx, q.names.DeadStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

// notify tells API processes waiting on these batches that the pipeline
// is done with one chunk of each (core NATS; a lost notice only costs a
// waiter its timeout).
func (q *Queue) notify(batches []string) {
	for _, b := range batches {
		if b != "" {
			q.nc.Publish(q.names.Committed+b, nil)
		}
	}
}

// waiter counts the chunks of a batch not yet finished by the pipeline.
type waiter struct {
	remaining int
	done      chan struct{}
}

// expect registers interest in batch before it is published, so that a
// notice arriving before the publish returns is not missed.
func (q *Queue) expect(batch string, chunks int) (*waiter, error) {
	if err := q.subscribeCommitted(); err != nil {
		return nil, err
	}
	w := &waiter{remaining: chunks, done: make(chan struct{})}
	q.mu.Lock()
	q.waiters[batch] = w
	q.mu.Unlock()
	return w, nil
}

func (q *Queue) forget(batch string) {
	q.mu.Lock()
	delete(q.waiters, batch)
	q.mu.Unlock()
}

func (q *Queue) subscribeCommitted() error {
	q.subOnce.Do(func() {
		q.sub, q.subErr = q.nc.Subscribe(q.names.Committed+"*", func(m *nats.Msg) {
			batch := m.Subject[len(q.names.Committed):]
			q.mu.Lock()
			if w := q.waiters[batch]; w != nil && w.remaining > 0 {
				w.remaining--
				if w.remaining == 0 {
					close(w.done)
				}
			}
			q.mu.Unlock()
		})
		if q.subErr == nil {
			q.subErr = q.nc.Flush()
		}
	})
	return q.subErr
}
