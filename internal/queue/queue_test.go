package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigil-soc/vigil"
)

// testWait bounds every wait for the queue to do something.
const testWait = 15 * time.Second

// mustOpen opens an embedded queue in a fresh directory, closed when the
// test ends.
func mustOpen(t *testing.T, cfg Config) *Queue {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	q, err := Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(q.Close)
	return q
}

// consume runs q.Consume with h until the test ends (before the queue is
// closed: cleanups run last-in first-out).
func consume(t *testing.T, q *Queue, opt ConsumeOptions, h Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Consume(ctx, opt, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Consume: %v", err)
			}
		case <-time.After(testWait):
			t.Errorf("Consume did not return within %v of its context ending", testWait)
		}
	})
}

// mustPublish publishes arts for org without waiting for the workers.
func mustPublish(t *testing.T, q *Queue, org string, arts []*vigil.Artifact) {
	t.Helper()
	if _, err := q.Publish(context.Background(), org, arts, 0); err != nil {
		t.Fatalf("Publish(%s, %d artifacts): %v", org, len(arts), err)
	}
}

// artifacts makes n artifacts with raw lines of size bytes.
func artifacts(n, size int) []*vigil.Artifact {
	now := time.Now().UTC()
	out := make([]*vigil.Artifact, n)
	for i := range out {
		raw := fmt.Sprintf("line %d ", i)
		raw += strings.Repeat("x", max(size-len(raw), 1))
		out[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "test", Raw: raw, Timestamp: now, CreatedAt: now,
			Metadata: json.RawMessage("{}")}
	}
	return out
}

// collector records what a handler was given.
type collector struct {
	mu   sync.Mutex
	msgs []*Message
	arts int
	full chan struct{} // closed once want artifacts arrived
	want int
}

func newCollector(want int) *collector {
	return &collector{want: want, full: make(chan struct{})}
}

func (c *collector) handle(_ context.Context, msgs []*Message) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.msgs = append(c.msgs, m)
		before := c.arts
		c.arts += len(m.Artifacts)
		if before < c.want && c.arts >= c.want {
			close(c.full)
		}
	}
	return nil
}

func (c *collector) await(t *testing.T) []*Message {
	t.Helper()
	select {
	case <-c.full:
	case <-time.After(testWait):
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("handler got %d of %d artifacts within %v", c.arts, c.want, testWait)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Message(nil), c.msgs...)
}

func TestPublishConsumeRoundTrip(t *testing.T) {
	q := mustOpen(t, Config{})
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	created := time.Date(2025, 1, 2, 3, 4, 5, 987654321, time.UTC)
	sent := []*vigil.Artifact{
		{ID: vigil.NewID(), Source: "suricata", Raw: `{"event_type":"alert","msg":"é \"quoted\"\n\ttab"}`,
			Timestamp: ts, CreatedAt: created, Metadata: json.RawMessage(`{"sensor":"s1","tags":["a","b"],"n":1.5}`)},
		{ID: vigil.NewID(), Source: "auth", Raw: "Jun 14 15:16:01 combo sshd[1]: Accepted password for root",
			Timestamp: created, CreatedAt: created, TimestampDefaulted: true},
	}
	c := newCollector(len(sent))
	consume(t, q, ConsumeOptions{}, c.handle)
	mustPublish(t, q, "org-1", sent)
	msgs := c.await(t)

	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Org != "org-1" || m.Batch == "" || m.Delivered != 1 {
		t.Errorf("message org=%q batch=%q delivered=%d, want org-1, a batch id, 1", m.Org, m.Batch, m.Delivered)
	}
	if len(m.Artifacts) != len(sent) {
		t.Fatalf("got %d artifacts, want %d", len(m.Artifacts), len(sent))
	}
	wantMeta := []string{`{"sensor":"s1","tags":["a","b"],"n":1.5}`, `{}`}
	for i, got := range m.Artifacts {
		want := sent[i]
		t.Run(want.Source, func(t *testing.T) {
			if got.ID != want.ID || got.OrgID != "org-1" || got.Source != want.Source || got.Raw != want.Raw {
				t.Errorf("got id=%q org=%q source=%q raw=%q\nwant id=%q org=org-1 source=%q raw=%q",
					got.ID, got.OrgID, got.Source, got.Raw, want.ID, want.Source, want.Raw)
			}
			if !got.Timestamp.Equal(want.Timestamp) || !got.CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("timestamp=%v created=%v, want %v, %v", got.Timestamp, got.CreatedAt, want.Timestamp, want.CreatedAt)
			}
			if got.TimestampDefaulted != want.TimestampDefaulted {
				t.Errorf("TimestampDefaulted = %v, want %v", got.TimestampDefaulted, want.TimestampDefaulted)
			}
			if string(got.Metadata) != wantMeta[i] {
				t.Errorf("metadata = %s, want %s", got.Metadata, wantMeta[i])
			}
		})
	}
}

func TestPublishChunksLargeBatch(t *testing.T) {
	q := mustOpen(t, Config{})
	// 12 raw lines of 400 KiB are about 9.6 MiB of estimated message, more
	// than the 4 MiB a message may hold.
	sent := artifacts(12, 400<<10)
	c := newCollector(len(sent))
	consume(t, q, ConsumeOptions{}, c.handle)
	mustPublish(t, q, "org-1", sent)
	msgs := c.await(t)

	if len(msgs) < 2 {
		t.Fatalf("batch went in %d message(s), want it split in several", len(msgs))
	}
	var got []string
	for _, m := range msgs {
		if m.Batch != msgs[0].Batch {
			t.Errorf("chunks carry batches %q and %q, want one batch id", msgs[0].Batch, m.Batch)
		}
		if len(m.msg.Data()) > q.maxChunk {
			t.Errorf("chunk of %d bytes exceeds the %d byte limit", len(m.msg.Data()), q.maxChunk)
		}
		for _, a := range m.Artifacts {
			got = append(got, a.ID)
			if a.Raw != sent[len(got)-1].Raw {
				t.Errorf("artifact %d: raw differs", len(got)-1)
			}
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("delivered %d artifacts, want %d", len(got), len(sent))
	}
	for i, a := range sent {
		if got[i] != a.ID {
			t.Errorf("artifact %d: id %s, want %s (order kept across chunks)", i, got[i], a.ID)
		}
	}
	t.Logf("%d artifacts in %d messages", len(got), len(msgs))
}

func TestPublishRefusesWhenBehind(t *testing.T) {
	t.Run("max pending", func(t *testing.T) {
		q := mustOpen(t, Config{MaxPending: 2})
		// No consumer: every message stays pending.
		mustPublish(t, q, "org-1", artifacts(1, 10))
		mustPublish(t, q, "org-1", artifacts(1, 10))
		// The backlog is cached for up to 250 ms; wait until it shows both.
		deadline := time.Now().Add(testWait)
		for {
			n, err := q.Backlog(context.Background())
			if err != nil {
				t.Fatalf("Backlog: %v", err)
			}
			if n >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("backlog still %d after %v, want 2", n, testWait)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, err := q.Publish(context.Background(), "org-1", artifacts(1, 10), 0)
		if code := vigil.ErrorCode(err); code != vigil.ERATELIMITED {
			t.Fatalf("Publish over MaxPending: %v (code %q), want %s", err, code, vigil.ERATELIMITED)
		}
	})
	t.Run("max bytes", func(t *testing.T) {
		q := mustOpen(t, Config{MaxBytes: 1 << 20})
		var refused bool
		for i := 0; i < 6 && !refused; i++ {
			_, err := q.Publish(context.Background(), "org-1", artifacts(1, 300<<10), 0)
			switch code := vigil.ErrorCode(err); code {
			case "":
			case vigil.ERATELIMITED:
				refused = true
				if i < 2 {
					t.Errorf("refused publish %d of 300 KiB into a 1 MiB stream: %v", i+1, err)
				}
			default:
				t.Fatalf("publish %d: %v (code %q), want success or %s", i+1, err, code, vigil.ERATELIMITED)
			}
		}
		if !refused {
			t.Fatal("6 publishes of 300 KiB fit into a stream of 1 MiB")
		}
	})
	t.Run("batch larger than the stream", func(t *testing.T) {
		q := mustOpen(t, Config{MaxBytes: 1 << 20})
		// 1.5 MiB could never fit: no retry helps, so not a 429.
		_, err := q.Publish(context.Background(), "org-1", artifacts(5, 300<<10), 0)
		if code := vigil.ErrorCode(err); code != vigil.ETOOLARGE {
			t.Fatalf("Publish of 1.5 MiB into a 1 MiB stream: %v (code %q), want %s", err, code, vigil.ETOOLARGE)
		}
		info, err := q.stream.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != 0 {
			t.Errorf("refused batch left %d messages in the stream", info.State.Msgs)
		}
	})
}

func TestPublishWaitsForWorkers(t *testing.T) {
	t.Run("processed", func(t *testing.T) {
		q := mustOpen(t, Config{})
		sent := artifacts(12, 400<<10) // several chunks: all must be done
		var mu sync.Mutex
		handled := 0
		consume(t, q, ConsumeOptions{}, func(_ context.Context, msgs []*Message) []error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				handled += len(m.Artifacts)
			}
			return nil
		})
		processed, err := q.Publish(context.Background(), "org-1", sent, testWait)
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !processed || handled != len(sent) {
			t.Fatalf("Publish returned processed=%v with %d of %d artifacts handled; want true once all were",
				processed, handled, len(sent))
		}
	})
	t.Run("no workers", func(t *testing.T) {
		q := mustOpen(t, Config{})
		start := time.Now()
		processed, err := q.Publish(context.Background(), "org-1", artifacts(1, 10), 200*time.Millisecond)
		if err != nil || processed {
			t.Fatalf("Publish without workers = %v, %v; want false, nil (a timeout is no error)", processed, err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("Publish returned after %v, before its wait of 200ms", d)
		}
	})
}

func TestFailingMessageDeadLettered(t *testing.T) {
	const maxDeliver = 3
	q := mustOpen(t, Config{MaxDeliver: maxDeliver, RetryBase: 5 * time.Millisecond})

	var mu sync.Mutex
	deliveries := map[string][]uint64{} // org → Delivered of each try
	dead := make(chan *Message, 10)
	var causes []error
	consume(t, q, ConsumeOptions{OnDead: func(m *Message, cause error) {
		mu.Lock()
		causes = append(causes, cause)
		mu.Unlock()
		dead <- m
	}}, func(_ context.Context, msgs []*Message) []error {
		mu.Lock()
		defer mu.Unlock()
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			deliveries[m.Org] = append(deliveries[m.Org], m.Delivered)
			if m.Org == "bad" {
				errs[i] = errors.New("boom: store refused")
			}
		}
		return errs
	})

	mustPublish(t, q, "good-1", artifacts(2, 10))
	mustPublish(t, q, "bad", artifacts(2, 10))
	mustPublish(t, q, "good-2", artifacts(2, 10))
	if _, err := q.js.Publish(context.Background(), q.names.Subject, []byte("not json")); err != nil {
		t.Fatalf("publish undecodable message: %v", err)
	}

	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case m := <-dead:
			got[m.Org] = true
		case <-time.After(testWait):
			t.Fatalf("dead-lettered within %v: %v; want the failing and the undecodable message", testWait, got)
		}
	}
	if !got["bad"] || !got[""] {
		t.Errorf("dead-lettered orgs %v, want \"bad\" and \"\" (undecodable)", got)
	}

	mu.Lock()
	if d := deliveries["bad"]; fmt.Sprint(d) != "[1 2 3]" {
		t.Errorf("failing message delivered as %v, want [1 2 3] (MaxDeliver %d)", d, maxDeliver)
	}
	for _, org := range []string{"good-1", "good-2"} {
		if d := deliveries[org]; fmt.Sprint(d) != "[1]" {
			t.Errorf("%s delivered as %v, want once", org, d)
		}
	}
	mu.Unlock()

	n, err := q.DeadLetters(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("DeadLetters = %d, %v; want 2", n, err)
	}
	ds, err := q.js.Stream(context.Background(), q.names.DeadStream)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		m, err := ds.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatalf("dead letter %d: %v", seq, err)
		}
		cause := m.Header.Get("Vigil-Error")
		switch {
		case bytes.Equal(m.Data, []byte("not json")):
			if !strings.Contains(cause, "decode") {
				t.Errorf("undecodable dead letter: Vigil-Error %q, want the decode error", cause)
			}
		case bytes.Contains(m.Data, []byte(`"org":"bad"`)):
			if cause != "boom: store refused" {
				t.Errorf("failing dead letter: Vigil-Error %q, want the handler's error", cause)
			}
		default:
			t.Errorf("unexpected dead letter %.100q", m.Data)
		}
		if m.Header.Get("Vigil-Stream-Seq") == "" {
			t.Errorf("dead letter %d has no Vigil-Stream-Seq header", seq)
		}
	}

	// Everything was acknowledged: nothing is left for the workers.
	deadline := time.Now().Add(testWait)
	for {
		n, err := q.Backlog(context.Background())
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backlog %d, %v after %v; want 0", n, err, testWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		base      time.Duration
		delivered uint64
		want      time.Duration
	}{
		{time.Second, 1, time.Second},
		{time.Second, 2, 4 * time.Second},
		{time.Second, 3, 16 * time.Second},
		{time.Second, 4, time.Minute},
		{time.Second, 40, time.Minute},
		{5 * time.Millisecond, 2, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v×%d", tt.base, tt.delivered), func(t *testing.T) {
			if got := retryDelay(tt.base, tt.delivered); got != tt.want {
				t.Errorf("retryDelay(%v, %d) = %v, want %v", tt.base, tt.delivered, got, tt.want)
			}
		})
	}
}

func TestReopenRedeliversFetchedAtOnce(t *testing.T) {
	dir := t.TempDir()
	// AckWait far beyond testWait: only the reset on reopen can deliver in time.
	cfg := Config{Dir: dir, AckWait: 10 * time.Minute}
	q1, err := Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := artifacts(3, 10)
	mustPublish(t, q1, "org-1", sent)
	batch, err := q1.cons.Fetch(1, jetstream.FetchMaxWait(testWait))
	if err != nil {
		q1.Close()
		t.Fatal(err)
	}
	fetched := 0
	for range batch.Messages() {
		fetched++ // and never acknowledged: the run "dies"
	}
	q1.Close()
	if fetched != 1 {
		t.Fatalf("fetched %d messages, want 1", fetched)
	}

	q2 := mustOpen(t, cfg)
	c := newCollector(len(sent))
	consume(t, q2, ConsumeOptions{}, c.handle)
	msgs := c.await(t)
	if len(msgs) != 1 || len(msgs[0].Artifacts) != len(sent) {
		t.Fatalf("after reopening got %d messages, want the 1 fetched before", len(msgs))
	}
}
