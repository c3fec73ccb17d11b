package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
)

// natsServerBin is the nats-server the test starts and kills; the
// machine's shared NATS is never touched.
const natsServerBin = "/usr/sbin/nats-server"

// TestNATSRestart kills the external NATS server with SIGKILL while
// clients post to a vigil serve on PostgreSQL, and starts it again on the
// same store dir. During the outage POST answers 503 — never a 2xx for
// what no server took, never a 500 —; the workers and the API resume by
// themselves, and every artifact acknowledged with a 2xx is stored exactly
// once.
func TestNATSRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := startNATS(t)
	dir := t.TempDir()
	// --ack-wait 5s: messages the workers fetched and had not acknowledged
	// when the server died come back 5 s after it restarts.
	p := startProcess(t, "vigil", "serve", dir, []string{"VIGIL_DATABASE_URL=" + pgtest.FreshDB(t)},
		"--nats-url", ns.url, "--ingest-wait", "0", "--ack-wait", "5s", "--no-enrichment")
	tok := mintToken(t, dir, org, "signals:write", "signals:read")
	c := newClient(p, tok)

	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	ld := startLoad(lctx, c, 4)
	ld.awaitAcked(t, 20_000)
	killedAt := time.Now()
	ns.kill(t)
	// The outage lasts until the clients have had 40 more refusals (about
	// a second: they back off 100 ms after each).
	ld.awaitRefused(t, ld.refusedCount()+40)
	t.Logf("NATS killed; %d posts refused during the outage", ld.refusedCount())
	restartedAt := time.Now()
	ns.start(t)
	before := ld.ackedCount()
	ld.awaitAcked(t, before+20_000) // ingest resumes by itself
	stopLoad()
	ld.wait()

	ld.mu.Lock()
	defer ld.mu.Unlock()
	t.Logf("load: %d posts: statuses %v; %d artifacts acknowledged; outage %v",
		ld.posts, ld.statuses, len(ld.acked), restartedAt.Sub(killedAt).Round(time.Millisecond))
	for _, e := range ld.unexpected {
		t.Errorf("unexpected reply: %s", e)
	}
	outage503 := 0
	for _, r := range ld.replies {
		if r.start.After(killedAt) && r.end.Before(restartedAt) {
			// Began and ended while no server was up: nothing can have taken it.
			if r.status != http.StatusServiceUnavailable {
				t.Errorf("a post during the outage got %d: %s; want 503", r.status, r.body)
			} else {
				outage503++
			}
		}
	}
	if outage503 == 0 {
		t.Errorf("no post began and ended during the outage with a 503")
	}
	s := awaitStored(t, ctx, p, c, ld.acked)
	requireExactlyOnce(t, s, ld.acked)
	t.Logf("%d acknowledged, %d stored (%d more: posts answered 503 whose batch the restarted server had nonetheless taken)",
		len(ld.acked), s.total, s.total-len(ld.acked))
	if n := p.logs.count(`"msg":"queue: next"`); n > 100 {
		t.Errorf("the workers logged %d errors fetching during a second of outage: a busy loop", n)
	}
	if p.logs.count("disconnected from NATS") == 0 {
		t.Errorf("vigil did not log that it lost NATS")
	}
}

// startNATS starts a JetStream nats-server (natsServerBin) on a free
// port, killed when the test ends, and waits until JetStream answers.
func startNATS(t *testing.T) *natsNode {
	t.Helper()
	port := freePorts(t, 1)[0]
	ns := newNATSNode(t, "nats-server", natsServerBin, fmt.Sprintf("nats://127.0.0.1:%d", port),
		"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", t.TempDir())
	ns.start(t)
	return ns
}

// reply is one answer of a load.
type reply struct {
	start, end time.Time
	status     int
	body       string
}

// load is clients posting batches of 200 lines as fast as they are
// answered until its context ends, recording every reply.
type loadRun struct {
	mu         sync.Mutex
	acked      map[string]string
	statuses   map[int]int
	replies    []reply
	unexpected []string // 500s, other statuses, transport errors
	posts      int
	refused    atomic.Int64
	nacked     atomic.Int64
	wg         sync.WaitGroup
}

func startLoad(ctx context.Context, c *client.Client, clients int) *loadRun {
	return startLoadOf(ctx, c, clients, 200, 0)
}

// startLoadOf is clients posting batches of batch lines, each client at
// most one post every interval (0: as fast as they are answered).
func startLoadOf(ctx context.Context, c *client.Client, clients, batch int, every time.Duration) *loadRun {
	ld := &loadRun{acked: map[string]string{}, statuses: map[int]int{}}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for ci := range clients {
		ld.wg.Add(1)
		go func() {
			defer ld.wg.Done()
			for bi := 0; ctx.Err() == nil; bi++ {
				arts := make([]client.NewArtifact, batch)
				for i := range arts {
					arts[i] = client.NewArtifact{Source: "e2e", Raw: fmt.Sprintf("vigil-e2e run=%s-c%d-b%d-i%d user=user%d src_ip=10.%d.%d.%d",
						run, ci, bi, i, i%50, ci, bi%256, i%256)}
				}
				start := time.Now()
				// Not cut off when the load ends: every post begun is
				// answered and recorded, so that what is stored beyond the
				// acknowledged artifacts was refused, not left unanswered.
				r, err := c.PostArtifacts(context.WithoutCancel(ctx), arts)
				end := time.Now()
				ld.record(arts, reply{start: start, end: end, status: r.Status, body: r.Body}, r, err)
				if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
					time.Sleep(100 * time.Millisecond) // backing off as a shipper would, not waiting for an event
				}
				if pause := every - time.Since(start); pause > 0 {
					time.Sleep(pause) // the client's rate, not waiting for an event
				}
			}
		}()
	}
	return ld
}

func (ld *loadRun) record(arts []client.NewArtifact, rp reply, r client.PostResult, err error) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	ld.posts++
	if err != nil {
		ld.unexpected = append(ld.unexpected, err.Error())
		return
	}
	ld.statuses[r.Status]++
	ld.replies = append(ld.replies, rp)
	switch {
	case r.Status == http.StatusAccepted && len(r.IDs) == len(arts):
		for i, id := range r.IDs {
			ld.acked[id] = arts[i].Raw
		}
		ld.nacked.Add(int64(len(arts)))
	case r.Status == http.StatusServiceUnavailable && r.Code == "unavailable":
		ld.refused.Add(1)
	case r.Status == http.StatusTooManyRequests:
	default:
		ld.unexpected = append(ld.unexpected, fmt.Sprintf("status %d: %s", r.Status, strings.TrimSpace(r.Body)))
	}
}

func (ld *loadRun) ackedCount() int   { return int(ld.nacked.Load()) }
func (ld *loadRun) refusedCount() int { return int(ld.refused.Load()) }
func (ld *loadRun) wait()             { ld.wg.Wait() }

// awaitAcked waits until n artifacts were acknowledged in all.
func (ld *loadRun) awaitAcked(t *testing.T, n int) {
	t.Helper()
	pollUntil(t, 30*time.Second, fmt.Sprintf("%d artifacts acknowledged", n), func() (int, bool) {
		got := ld.ackedCount()
		return got, got >= n
	})
}

// awaitRefused waits until n posts were refused with 503.
func (ld *loadRun) awaitRefused(t *testing.T, n int) {
	t.Helper()
	pollUntil(t, 30*time.Second, fmt.Sprintf("%d posts refused with 503", n), func() (int, bool) {
		got := ld.refusedCount()
		return got, got >= n
	})
}
