package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPublishSentAgainWhenUnanswered is what a cluster does when the
// stream's leader dies after its followers stored a message but before it
// answered: the message is in the stream and the publisher hears nothing.
// Here the stream listens elsewhere and a subscriber of the test's takes
// the first send without answering; the test then stores that very message (same
// Nats-Msg-Id), as the followers did. Publish must send it again, get the
// stream's acknowledgement of the duplicate and succeed — not answer 503
// for a batch the stream holds, which the client would send again and
// have stored twice — and the stream must hold the message once.
func TestPublishSentAgainWhenUnanswered(t *testing.T) {
	q := mustOpen(t, Config{})
	ctx := context.Background()
	s, err := q.js.Stream(ctx, q.names.Stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	away := cfg
	away.Subjects = []string{q.names.Subject + ".elsewhere"} // no stream listens on the subject
	if _, err := q.js.UpdateStream(ctx, away); err != nil {
		t.Fatal(err)
	}
	sub, err := q.nc.SubscribeSync(q.names.Subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := q.Publish(ctx, "org-a", artifacts(3, 100), 0)
		done <- err
	}()
	first, err := sub.NextMsg(testWait)
	if err != nil {
		select {
		case perr := <-done:
			t.Fatalf("Publish returned %v without sending", perr)
		default:
		}
		t.Fatalf("the first send: %v", err)
	}
	id := first.Header.Get(jetstream.MsgIDHeader)
	if id == "" {
		t.Fatal("the message has no Nats-Msg-Id")
	}
	if _, err := q.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	stored := &nats.Msg{Subject: first.Subject, Data: first.Data, Header: first.Header}
	if _, err := q.js.PublishMsg(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Publish: %v; want success, the stream holds the batch", err)
		}
	case <-time.After(testWait):
		t.Fatalf("Publish did not return within %v", testWait)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("the stream holds %d messages, want 1 (message %s stored once)", info.State.Msgs, id)
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{jetstream.ErrNoStreamResponse, true},    // no leader to answer: nothing stored
		{nats.ErrNoResponders, true},             // the same, from a synchronous publish
		{jetstream.ErrAsyncPublishTimeout, true}, // no answer: stored or not
		{nats.ErrDisconnected, true},             // the connection dropped with the publish in flight
		{nats.ErrTimeout, true},
		{fmt.Errorf("publish: %w", &jetstream.APIError{Code: 503, ErrorCode: errClusterUnavailable}), true},
		{&jetstream.APIError{Code: 503, ErrorCode: errStoreFailed}, false}, // the stream's bound: 429
		{&jetstream.APIError{Code: 503, ErrorCode: errInsufficientResources}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10054}, false}, // message too large
		{jetstream.ErrTooManyStalledMsgs, false},
		{nats.ErrConnectionClosed, false},
		{errors.New("anything else"), true},
	} {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
