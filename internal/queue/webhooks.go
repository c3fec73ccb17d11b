package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Webhook deliveries wait in a stream of their own until their receiver
// took them: one subject and one durable consumer per subscription, which
// hands out one delivery at a time (MaxAckPending 1), so that a
// subscription's deliveries go out in the order they were queued, a
// receiver that is down holds back only its own subscription, and a
// delivery survives restarts of Vigil and of NATS until it is
// acknowledged.

// WebhookMsg is one delivery waiting in the stream.
type WebhookMsg struct {
	Org       string `json:"org"`
	Webhook   string `json:"webhook"`
	Delivery  string `json:"delivery"`
	Incident  string `json:"incident"`
	EventID   int64  `json:"event_id"`
	EventType string `json:"event_type"`
	// Created is when the delivery was queued, from which its retries
	// are counted.
	Created time.Time `json:"created"`
	// Payload is the body sent to the receiver.
	Payload json.RawMessage `json:"payload"`
}

// Webhook stream bounds: deliveries are given up after a day of retries,
// so a week covers every one; a full stream refuses new deliveries (the
// dispatcher tries again) rather than dropping queued ones.
const (
	webhookMaxAge   = 7 * 24 * time.Hour
	webhookMaxBytes = 256 << 20
	// webhookDupWindow is how long the stream drops a delivery queued
	// again under the same id (a dispatcher restarted before it recorded
	// its progress, or two processes dispatching at once).
	webhookDupWindow = time.Hour
)

func (q *Queue) ensureWebhooks(ctx context.Context) error {
	if _, err := q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.names.WebhookStream,
		Description: "webhook deliveries waiting for their receiver",
		Subjects:    []string{q.names.WebhookSubject + "*"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		MaxBytes:    webhookMaxBytes,
		MaxAge:      webhookMaxAge,
		Discard:     jetstream.DiscardNew,
		Duplicates:  webhookDupWindow,
		Replicas:    q.cfg.Replicas,
	}); err != nil {
		return fmt.Errorf("queue: stream %s: %w", q.names.WebhookStream, err)
	}
	return nil
}

// PublishWebhooks stores msgs durably, each on its subscription's
// subject, with its delivery id as the message id; it returns once the
// server acknowledged them all.
func (q *Queue) PublishWebhooks(ctx context.Context, msgs []WebhookMsg) error {
	if len(msgs) == 0 {
		return nil
	}
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		body, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("queue: webhook delivery: %w", err)
		}
		msg := nats.NewMsg(q.names.WebhookSubject + m.Webhook)
		msg.Data = body
		msg.Header.Set(jetstream.MsgIDHeader, m.Delivery)
		f, err := q.js.PublishMsgAsync(msg)
		if err != nil {
			return fmt.Errorf("queue: publish webhook delivery: %w", err)
		}
		futures = append(futures, f)
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("queue: publish webhook delivery: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return errors.New("queue: publish webhook delivery: not acknowledged in time")
		}
	}
	return nil
}

// WebhookLane is the consumer of one subscription's deliveries.
type WebhookLane struct {
	cons jetstream.Consumer
}

// WebhookJob is a delivery handed out by a lane: until it is acknowledged
// (Ack), the lane hands out nothing else; if it is not acknowledged
// within the lane's ack wait (InProgress extends it), the lane hands it
// out again, to this process or another.
type WebhookJob struct {
	WebhookMsg
	msg jetstream.Msg
}

// Ack removes the delivery from the stream.
func (j *WebhookJob) Ack() error { return j.msg.DoubleAck(context.Background()) }

// Nak hands the delivery back to the lane at once (this process stops
// sending it: shutting down, or its subscription was disabled).
func (j *WebhookJob) Nak() error { return j.msg.Nak() }

// InProgress restarts the delivery's ack wait.
func (j *WebhookJob) InProgress() error { return j.msg.InProgress() }

// WebhookLane returns the lane of subscription webhook, creating its
// consumer if need be; a delivery not acknowledged within ackWait is
// handed out again. first says this process has not opened the lane
// before: then, on the embedded server without outside clients, a
// delivery still held by a previous run (that died before it
// acknowledged) is handed out at once rather than after ackWait — no one
// else can hold it.
func (q *Queue) WebhookLane(ctx context.Context, webhook string, ackWait time.Duration, first bool) (*WebhookLane, error) {
	cc := jetstream.ConsumerConfig{
		Durable:       q.names.WebhookConsumer + webhook,
		FilterSubject: q.names.WebhookSubject + webhook,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxAckPending: 1,
		MaxDeliver:    -1,
	}
	cons, err := q.js.CreateOrUpdateConsumer(ctx, q.names.WebhookStream, cc)
	if err != nil {
		return nil, fmt.Errorf("queue: webhook consumer: %w", err)
	}
	if first && q.ns != nil && q.cfg.ListenPort <= 0 {
		info, err := cons.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("queue: webhook consumer: %w", err)
		}
		if info.NumAckPending > 0 {
			// The work-queue stream keeps every delivery until it is
			// acknowledged: a new consumer starts again at the first.
			if err := q.js.DeleteConsumer(ctx, q.names.WebhookStream, cc.Durable); err != nil {
				return nil, fmt.Errorf("queue: reset webhook consumer: %w", err)
			}
			if cons, err = q.js.CreateOrUpdateConsumer(ctx, q.names.WebhookStream, cc); err != nil {
				return nil, fmt.Errorf("queue: webhook consumer: %w", err)
			}
		}
	}
	return &WebhookLane{cons: cons}, nil
}

// Next waits up to wait for the lane's next delivery; nil, nil when none
// came.
func (l *WebhookLane) Next(wait time.Duration) (*WebhookJob, error) {
	m, err := l.cons.Next(jetstream.FetchMaxWait(wait))
	if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue: webhook next: %w", err)
	}
	j := &WebhookJob{msg: m}
	if err := json.Unmarshal(m.Data(), &j.WebhookMsg); err != nil {
		// Nothing can deliver it: drop it rather than block the lane.
		m.Term()
		return nil, fmt.Errorf("queue: webhook delivery undecodable: %w", err)
	}
	return j, nil
}

// WebhookLanes returns the ids of the subscriptions that have a lane.
func (q *Queue) WebhookLanes(ctx context.Context) ([]string, error) {
	s, err := q.js.Stream(ctx, q.names.WebhookStream)
	if err != nil {
		return nil, fmt.Errorf("queue: webhook stream: %w", err)
	}
	var out []string
	names := s.ConsumerNames(ctx)
	for n := range names.Name() {
		if id, ok := strings.CutPrefix(n, q.names.WebhookConsumer); ok {
			out = append(out, id)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("queue: webhook lanes: %w", err)
	}
	return out, nil
}

// DropWebhook removes the lane of a deleted subscription and the
// deliveries still waiting for it.
func (q *Queue) DropWebhook(ctx context.Context, webhook string) error {
	s, err := q.js.Stream(ctx, q.names.WebhookStream)
	if err != nil {
		return fmt.Errorf("queue: webhook stream: %w", err)
	}
	if err := s.DeleteConsumer(ctx, q.names.WebhookConsumer+webhook); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("queue: drop webhook consumer: %w", err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(q.names.WebhookSubject+webhook)); err != nil {
		return fmt.Errorf("queue: purge webhook deliveries: %w", err)
	}
	return nil
}
