package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestTransientFailureHeldNotDeadLettered: a message whose handling fails
// transiently (the store is full or unreachable) far more often than
// MaxDeliver is held and retried in place until the store takes it: it is
// never redelivered, never dead-lettered, and the messages beside it are
// not held back.
func TestTransientFailureHeldNotDeadLettered(t *testing.T) {
	const maxDeliver, failures = 2, 8
	// AckWait 300 ms: pauses of 100 ms between tries, so the test is quick,
	// and 8 tries outlast AckWait several times over: only the in-progress
	// signal keeps the held message from being redelivered.
	q := mustOpen(t, Config{MaxDeliver: maxDeliver, RetryBase: 5 * time.Millisecond, AckWait: 300 * time.Millisecond})

	var mu sync.Mutex
	calls := 0
	delivered := map[string][]uint64{}
	stored := make(chan string, 10)
	var dead []string
	consume(t, q, ConsumeOptions{OnDead: func(m *Message, _ error) {
		mu.Lock()
		dead = append(dead, m.Org)
		mu.Unlock()
	}}, func(_ context.Context, msgs []*Message) []error {
		mu.Lock()
		defer mu.Unlock()
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			delivered[m.Org] = append(delivered[m.Org], m.Delivered)
			if m.Org == "org-flaky" {
				calls++
				if calls <= failures {
					errs[i] = &vigil.Error{Code: vigil.ENOSPACE, Message: "database disk is full"}
					continue
				}
			}
			stored <- m.Org
		}
		return errs
	})

	mustPublish(t, q, "org-flaky", artifacts(2, 10))
	mustPublish(t, q, "org-fine", artifacts(2, 10))
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case org := <-stored:
			got[org] = true
		case <-time.After(testWait):
			mu.Lock()
			t.Fatalf("stored within %v: %v (handler tries of org-flaky: %d, dead letters %v)", testWait, got, calls, dead)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	if len(dead) > 0 {
		t.Errorf("dead-lettered %v; a transient failure must never dead-letter", dead)
	}
	if calls != failures+1 {
		t.Errorf("org-flaky tried %d times, want %d (%d transient failures, then stored)", calls, failures+1, failures)
	}
	// Each message is delivered once: the held one is kept alive, and a
	// message not in its batch is fetched only once the worker is free.
	for org, ns := range delivered {
		for _, n := range ns {
			if n != 1 {
				t.Errorf("%s deliveries %v: redelivered (its AckWait passed)", org, ns)
				break
			}
		}
	}
	if n, err := q.DeadLetters(context.Background()); err != nil || n != 0 {
		t.Errorf("DeadLetters = %d, %v; want 0", n, err)
	}
}

// TestShutdownHandsHeldMessagesBack: a worker stopping while it holds a
// message for a transient failure returns at once and hands the message
// back: the next consumer gets it, and nothing is dead-lettered.
func TestShutdownHandsHeldMessagesBack(t *testing.T) {
	q := mustOpen(t, Config{MaxDeliver: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failing := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, ConsumeOptions{}, func(_ context.Context, msgs []*Message) []error {
			errs := make([]error, len(msgs))
			for i := range msgs {
				errs[i] = &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "database unreachable"}
			}
			failing <- struct{}{}
			return errs
		})
	}()
	sent := artifacts(3, 10)
	mustPublish(t, q, "org-1", sent)
	select {
	case <-failing:
	case <-time.After(testWait):
		t.Fatalf("handler not called within %v", testWait)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Consume: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Consume still holding its message 5 s after its context ended")
	}

	c := newCollector(len(sent))
	consume(t, q, ConsumeOptions{}, c.handle)
	msgs := c.await(t)
	if len(msgs) != 1 || len(msgs[0].Artifacts) != len(sent) {
		t.Fatalf("next consumer got %d messages, want the 1 handed back", len(msgs))
	}
	if n, err := q.DeadLetters(context.Background()); err != nil || n != 0 {
		t.Errorf("DeadLetters = %d, %v; want 0 (MaxDeliver 1, yet the failure was transient)", n, err)
	}
}

func TestTransientDelay(t *testing.T) {
	tests := []struct {
		try     int
		ackWait time.Duration
		want    time.Duration
	}{
		{0, 30 * time.Second, 250 * time.Millisecond},
		{1, 30 * time.Second, 500 * time.Millisecond},
		{3, 30 * time.Second, 2 * time.Second},
		{5, 30 * time.Second, 8 * time.Second},
		{6, 30 * time.Second, 10 * time.Second},
		{1000, 30 * time.Second, 10 * time.Second},
		{1000, 3 * time.Second, time.Second},
		{0, 300 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("try%d,ackwait%v", tt.try, tt.ackWait), func(t *testing.T) {
			if got := transientDelay(tt.try, tt.ackWait); got != tt.want {
				t.Errorf("transientDelay(%d, %v) = %v, want %v", tt.try, tt.ackWait, got, tt.want)
			}
		})
	}
}
