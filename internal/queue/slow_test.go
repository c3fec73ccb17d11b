package queue

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestSlowBatchesNotRedelivered: two workers whose batches take several
// times AckWait (a loaded machine, a store making its writes durable)
// process every message once. Neither the messages they hold nor the
// ones queued behind them are handed out again meanwhile: a redelivery
// would be the same artifacts parsed, enriched, checked against their
// claims and run through detection twice.
func TestSlowBatchesNotRedelivered(t *testing.T) {
	const ackWait = time.Second
	q := mustOpen(t, Config{AckWait: ackWait})

	release := make(chan struct{})
	started, finished := make(chan struct{}, 10), make(chan struct{}, 10)
	var mu sync.Mutex
	var handled []*Message
	slow := func(_ context.Context, msgs []*Message) []error {
		started <- struct{}{}
		<-release
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, msgs...)
		finished <- struct{}{}
		return nil
	}
	// One message per batch, as the pipeline's workers take up to 16:
	// the third message waits while both workers are busy.
	for range 2 {
		consume(t, q, ConsumeOptions{MaxBatch: 1}, slow)
	}
	const sent = 3
	for range sent {
		mustPublish(t, q, "org-1", artifacts(1, 10))
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(testWait):
			t.Fatalf("the two workers did not both start a batch within %v", testWait)
		}
	}
	// The deadline under test: the workers hold their batches for four
	// times AckWait, which a message's ack deadline would not outlast.
	time.Sleep(4 * ackWait)
	info, err := q.cons.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	close(release)

	if info.Delivered.Consumer > 2 {
		t.Errorf("while both workers were busy the queue made %d deliveries of %d messages, want 2 "+
			"(the held messages redelivered after their ack deadline, or the waiting one delivered to a buffer "+
			"where its deadline passed)", info.Delivered.Consumer, sent)
	}
	for n := 0; n < sent; n++ {
		select {
		case <-finished:
		case <-time.After(testWait):
			t.Fatalf("handled %d of %d batches within %v of the release", n, sent, testWait)
		}
	}
	// Every delivery the workers were given (a redelivered copy may be on
	// its way to a handler still) is counted by the server.
	info, err = q.cons.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != sent {
		t.Errorf("%d deliveries for %d messages; want each delivered once", info.Delivered.Consumer, sent)
	}
	mu.Lock()
	defer mu.Unlock()
	batches := map[string]int{}
	for _, m := range handled {
		batches[m.Batch]++
		if m.Delivered != 1 {
			t.Errorf("batch %s handled at delivery %d, want 1", m.Batch, m.Delivered)
		}
	}
	if len(batches) != sent {
		t.Errorf("handled %d distinct batches, want %d", len(batches), sent)
	}
}
