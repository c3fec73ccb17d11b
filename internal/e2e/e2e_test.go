package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/queue"
)

const org = "org-e2e"

// storeTimeout bounds the wait for acknowledged artifacts to be stored
// after a restart. It must cover JetStream's ack wait (30 s): messages a
// killed process had fetched come back only once it has passed.
const storeTimeout = 60 * time.Second

func TestCrashLosesNothing_Embedded(t *testing.T) {
	crashTest(t, false)
}

func TestCrashLosesNothing_ExternalNATS(t *testing.T) {
	url, _, names := externalNATS(t)
	crashTest(t, false, "--nats-url", url, "--queue-name", names.Queue)
}

// TestCrashMidIngestLosesNothing kills the server while clients are still
// posting and its workers storing: posts in flight have no answer, and
// only what was acknowledged with a 2xx must be there after the restart,
// exactly once.
func TestCrashMidIngestLosesNothing(t *testing.T) {
	crashTest(t, true)
}

// crashTest floods a server, SIGKILLs it right after the last 2xx reply
// (midLoad: while posts are still in flight, once 10,000 artifacts were
// accepted), restarts it on the same data dir and checks that every
// acknowledged artifact is stored exactly once.
func crashTest(t *testing.T, midLoad bool, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// --ingest-wait 0: replies come as soon as the batch is durable, so
	// the workers are likely behind when the process dies.
	p1 := startVigil(t, "vigil#1", dir, append([]string{"--ingest-wait", "0"}, args...)...)
	tok := mintToken(t, dir, org, "signals:write", "signals:read")

	start := time.Now()
	var lg *ledger
	if !midLoad {
		lg = flood(ctx, newClient(p1, tok), load{clients: 4, batches: 50, size: 200})
		p1.kill(t) // right after the last 2xx reply
	} else {
		lctx, stopLoad := context.WithCancel(ctx)
		done := make(chan *ledger, 1)
		go func() { done <- flood(lctx, newClient(p1, tok), load{clients: 4, batches: 1000, size: 200}) }()
		pollUntil(t, 30*time.Second, "10,000 artifacts accepted", func() (float64, bool) {
			n, err := metric(ctx, p1, "vigil_artifacts_accepted_total")
			return n, err == nil && n >= 10_000
		})
		// The posts in flight end with their context, so their answer is
		// unknown rather than an error; the kill follows at once.
		stopLoad()
		p1.kill(t)
		lg = <-done
		t.Logf("killed with %d posts in flight or cut off", lg.cancelled)
	}
	loadTook := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(p1.err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("vigil#1 ended with %v, want death by SIGKILL (it must have run until killed)", p1.err)
	}
	requireClean(t, lg, false)
	t.Logf("load: %d posts, %d artifacts acknowledged in %v, then SIGKILL", lg.posts, len(lg.acked), loadTook.Round(time.Millisecond))

	start = time.Now()
	p2 := startVigil(t, "vigil#2", dir, args...)
	c2 := newClient(p2, tok)
	atRestart, err := c2.ArtifactTotal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := awaitStored(t, ctx, p2, c2, lg.acked)
	replayed := processed(t, ctx, p2)
	t.Logf("acknowledged %d; stored when vigil#2 was ready: %d (%d missing); processed by vigil#2 from the queue: %.0f (fetched-but-unacknowledged reset: %v); all present %v after the restart: %d present, %d duplicates, %d stored beyond the acknowledged",
		len(lg.acked), atRestart, max(len(lg.acked)-atRestart, 0), replayed, p2.logs.count("redelivering messages fetched before a crash") > 0,
		time.Since(start).Round(time.Millisecond), len(lg.acked)-s.missing(lg.acked), s.duplicates(), s.total-len(lg.acked))
	requireExactlyOnce(t, s, lg.acked)
}

func TestBackpressure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p := startVigil(t, "vigil", dir, "--max-queue-bytes", "1048576", "--max-pending", "5", "--workers", "1", "--ingest-wait", "0")
	tok := mintToken(t, dir, org, "signals:write", "signals:read")
	c := newClient(p, tok)

	// A batch larger than the whole queue can never be taken: 413, not a
	// 429 that no retry would cure.
	big := make([]client.NewArtifact, 5)
	for i := range big {
		big[i] = client.NewArtifact{Source: "e2e", Raw: strings.Repeat("big ", 75_000)}
	}
	r, err := c.PostArtifacts(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusRequestEntityTooLarge || r.Code != "payload_too_large" {
		t.Errorf("1.5 MB batch into a 1 MiB queue: status %d code %q, want 413 payload_too_large: %s", r.Status, r.Code, r.Body)
	}

	// Bounded flood: at most 6×20 posts of ~330 KB, at most 20 s.
	fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
	lg := flood(fctx, c, load{clients: 6, batches: 20, size: 1000, pad: 200})
	fcancel()
	requireClean(t, lg, true)
	t.Logf("load: %d posts: %v; %d artifacts accepted", lg.posts, lg.statuses, len(lg.acked))
	if len(lg.limited) == 0 {
		t.Fatalf("no 429 from a 1 MiB queue under %d posts of ~330 KB (statuses %v)", lg.posts, lg.statuses)
	}
	for _, r := range lg.limited {
		if r.Header.Get("Retry-After") == "" || r.Code != "rate_limited" {
			t.Errorf("429 with Retry-After %q and code %q, want a Retry-After and rate_limited: %s", r.Header.Get("Retry-After"), r.Code, r.Body)
			break
		}
	}
	if len(lg.acked) == 0 {
		t.Fatal("nothing was accepted")
	}

	s := awaitStored(t, ctx, p, c, lg.acked)
	requireExactlyOnce(t, s, lg.acked)
	if lg.cancelled > 0 {
		// A post cut off by the time limit may have been taken or refused.
		t.Logf("%d posts cut off by the time limit: not comparing counts", lg.cancelled)
		return
	}
	if s.total != len(lg.acked) {
		t.Errorf("stored %d artifacts, accepted %d: a refused batch must store nothing", s.total, len(lg.acked))
	}
	throttled, err := metric(ctx, p, "vigil_ingest_throttled_total")
	if err != nil {
		t.Fatal(err)
	}
	if int(throttled) != len(lg.limited) {
		t.Errorf("vigil_ingest_throttled_total = %v, want %d (the 429 replies)", throttled, len(lg.limited))
	}
}

func TestPoisonMessageDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, js, names := externalNATS(t)
	dir := t.TempDir()
	p := startVigil(t, "vigil", dir, "--nats-url", url, "--queue-name", names.Queue)
	tok := mintToken(t, dir, org, "signals:write", "signals:read")
	c := newClient(p, tok)

	before := flood(ctx, c, load{clients: 1, batches: 2, size: 50})
	// Messages the workers can never process: not JSON, no org, a
	// malformed artifact list.
	poison := [][]byte{
		[]byte("not json"),
		[]byte(`{"org":"","batch":"e2e-poison","artifacts":[]}`),
		[]byte(`{"org":"` + org + `","batch":"e2e-poison","artifacts":"not a list"}`),
	}
	for _, m := range poison {
		if _, err := js.Publish(ctx, names.Subject, m); err != nil {
			t.Fatalf("publish poison %q: %v", m, err)
		}
	}
	after := flood(ctx, c, load{clients: 1, batches: 2, size: 50})
	requireClean(t, before, false)
	requireClean(t, after, false)
	acked := before.acked
	for id, raw := range after.acked {
		acked[id] = raw
	}

	s := awaitStored(t, ctx, p, c, acked)
	requireExactlyOnce(t, s, acked)

	dead, err := js.Stream(ctx, names.DeadStream)
	if err != nil {
		t.Fatal(err)
	}
	n := pollUntil(t, 30*time.Second, "3 messages in "+names.DeadStream, func() (uint64, bool) {
		info, err := dead.Info(ctx)
		if err != nil {
			return 0, false
		}
		return info.State.Msgs, info.State.Msgs >= uint64(len(poison))
	})
	if n != uint64(len(poison)) {
		t.Errorf("%s holds %d messages, want %d", names.DeadStream, n, len(poison))
	}
	for seq := uint64(1); seq <= n; seq++ {
		m, err := dead.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("dead letter %d: %v", seq, err)
		}
		known := false
		for _, p := range poison {
			known = known || bytes.Equal(m.Data, p)
		}
		if !known {
			t.Errorf("dead letter %d is %.100q, not one of the poison messages", seq, m.Data)
		}
		if m.Header.Get("Vigil-Error") == "" {
			t.Errorf("dead letter %d (%q) has no Vigil-Error header", seq, m.Data)
		}
	}
	deadTotal, err := metric(ctx, p, "vigil_dead_letters_total")
	if err != nil {
		t.Fatal(err)
	}
	if int(deadTotal) != len(poison) {
		t.Errorf("vigil_dead_letters_total = %v, want %d", deadTotal, len(poison))
	}
	t.Logf("%d valid artifacts stored around %d poison messages; %d dead letters, vigil_dead_letters_total %v",
		len(acked), len(poison), n, deadTotal)
}

func TestGracefulShutdown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p1 := startVigil(t, "vigil#1", dir, "--ingest-wait", "0", "--workers", "1")
	tok := mintToken(t, dir, org, "signals:write", "signals:read")

	// Many small batches: more messages than the workers fetch ahead, so
	// that some are still queued when the process stops.
	lg := flood(ctx, newClient(p1, tok), load{clients: 4, batches: 150, size: 50})
	depth, err := metric(ctx, p1, "vigil_queue_depth")
	if err != nil {
		t.Fatal(err)
	}
	took, err := p1.terminate(t, 40*time.Second)
	if err != nil {
		t.Fatalf("vigil#1 exited with %v after SIGTERM, want status 0", err)
	}
	if p1.logs.count(`"msg":"workers drained"`) != 1 {
		t.Errorf("vigil#1 did not log that its workers drained")
	}
	requireClean(t, lg, false)

	p2 := startVigil(t, "vigil#2", dir)
	c2 := newClient(p2, tok)
	atRestart, err := c2.ArtifactTotal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := awaitStored(t, ctx, p2, c2, lg.acked)
	t.Logf("acknowledged %d; queue depth at SIGTERM %.0f messages; exit 0 after %v; stored when vigil#2 was ready: %d; processed by vigil#2: %.0f; at the end: %d present, %d duplicates",
		len(lg.acked), depth, took.Round(time.Millisecond), atRestart, processed(t, ctx, p2), len(lg.acked)-s.missing(lg.acked), s.duplicates())
	requireExactlyOnce(t, s, lg.acked)
}

// externalNATS connects to the NATS server the external-mode tests use
// and gives the test a queue name of its own there (pass it as
// --queue-name), so that runs and other tests sharing the server never
// see each other's messages.
func externalNATS(t *testing.T) (string, jetstream.JetStream, queue.Names) {
	t.Helper()
	url, js := connectNATS(t)
	return url, js, ownQueue(t, js)
}

// connectNATS connects to the NATS server the external-mode tests use.
func connectNATS(t *testing.T) (string, jetstream.JetStream) {
	t.Helper()
	url := os.Getenv("VIGIL_TEST_NATS_URL")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	nc, err := nats.Connect(url, nats.Timeout(3*time.Second), nats.Name("vigil-e2e"))
	if err != nil {
		t.Fatalf("NATS at %s is unreachable: %v\nThis test needs a NATS server with JetStream: run `nats-server -js -a 127.0.0.1 -p 4222` "+
			"(Debian package nats-server), or set VIGIL_TEST_NATS_URL to one.", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("NATS at %s has no JetStream (%v): start it with -js", url, err)
	}
	return url, js
}

// ownQueue returns the names of a fresh queue name t-<random> and deletes
// its streams and owner bucket when the test ends: only its own, never
// another deployment's on the shared server. A failed test's streams are
// listed first, for a look at what they held.
func ownQueue(t *testing.T, js jetstream.JetStream) queue.Names {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	names, err := queue.NamesFor("t-" + hex.EncodeToString(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, name := range []string{names.Stream, names.DeadStream, names.WebhookStream, "KV_" + names.OwnerBucket} {
			if t.Failed() {
				if s, err := js.Stream(ctx, name); err == nil {
					t.Logf("stream %s at the end: %+v", name, s.CachedInfo().State)
				}
			}
			if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("delete stream %s: %v", name, err)
			}
		}
	})
	return names
}

// requireClean fails the test if the load got replies other than 202
// (and 429 when allowed) or transport errors.
func requireClean(t *testing.T, lg *ledger, allow429 bool) {
	t.Helper()
	for status, n := range lg.statuses {
		if status >= 500 {
			t.Errorf("%d replies with status %d", n, status)
		}
	}
	if len(lg.limited) > 0 && !allow429 {
		t.Errorf("%d replies 429: %s", len(lg.limited), lg.limited[0].Body)
	}
	if len(lg.unexpected) > 0 {
		t.Fatalf("%d unexpected replies, the first: %s", len(lg.unexpected), lg.unexpected[0])
	}
}

// awaitStored polls until the queue of p is drained and every acknowledged
// artifact is listed, and returns the listing. It fails the test after
// storeTimeout.
func awaitStored(t *testing.T, ctx context.Context, p *proc, c *client.Client, acked map[string]string) *snapshot {
	t.Helper()
	return awaitStoredWithin(t, ctx, p, c, acked, storeTimeout)
}

// awaitStoredWithin is awaitStored waiting up to limit.
func awaitStoredWithin(t *testing.T, ctx context.Context, p *proc, c *client.Client, acked map[string]string, limit time.Duration) *snapshot {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		total, terr := c.ArtifactTotal(ctx)
		depth, derr := metric(ctx, p, "vigil_queue_depth")
		var s *snapshot
		var serr error
		if terr == nil && derr == nil && total >= len(acked) && depth == 0 {
			if s, serr = takeSnapshot(ctx, c); serr == nil && s.missing(acked) == 0 {
				return s
			}
		}
		if time.Now().After(deadline) {
			missing := -1
			if s != nil {
				missing = s.missing(acked)
			}
			t.Fatalf("after %v: total %d (%v) of %d acknowledged, queue depth %v (%v), missing %d (%v)",
				limit, total, terr, len(acked), depth, derr, missing, serr)
		}
		select {
		case <-time.After(200 * time.Millisecond): // polling the store
		case <-p.exited:
			t.Fatalf("%s exited: %v", p.name, p.err)
		}
	}
}

// requireExactlyOnce checks that every acknowledged artifact is listed
// once, with its raw line intact.
func requireExactlyOnce(t *testing.T, s *snapshot, acked map[string]string) {
	t.Helper()
	if s.rows != s.total {
		t.Errorf("listed %d rows, total says %d", s.rows, s.total)
	}
	if d := s.duplicates(); d > 0 {
		t.Errorf("%d duplicate rows among %d", d, s.rows)
	}
	if m := s.missing(acked); m > 0 {
		t.Errorf("%d of %d acknowledged artifacts missing", m, len(acked))
	}
	bad := 0
	for id, raw := range acked {
		if got, ok := s.raw[id]; ok && got != raw {
			if bad == 0 {
				t.Errorf("artifact %s: raw %q, want %q", id, got, raw)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d artifacts with a changed raw line", bad)
	}
}

// processed returns how many artifacts the workers of p handled, parsed
// or not: after a restart, those it took from the queue.
func processed(t *testing.T, ctx context.Context, p *proc) float64 {
	t.Helper()
	var sum float64
	for _, name := range []string{"vigil_artifacts_parsed_total", "vigil_artifacts_unparsed_total"} {
		v, err := metric(ctx, p, name)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// pollUntil calls f until it reports done or limit passes, and returns its
// last value.
func pollUntil[T any](t *testing.T, limit time.Duration, what string, f func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v, done := f()
		if done {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v (last: %v)", what, limit, v)
		}
		time.Sleep(100 * time.Millisecond) // polling an observable condition
	}
}
