package webhook_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/webhook"
)

// TestReceiverFailsThenRecovers: the receiver answers 503 to its first
// requests, then takes them; every event arrives once, each incident's in
// order, and the delivery log says what happened.
func TestReceiverFailsThenRecovers(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		org := vigil.NewID()
		rc := newReceiver(t, "whsec_test-secret-of-the-receiver")
		rc.answer = func(n int) int {
			if n <= 4 {
				return http.StatusServiceUnavailable
			}
			return http.StatusNoContent
		}
		w := r.subscribe(org, rc.srv.URL+"/hook?token=abc", rc.secret)
		r.start()
		want := r.life(org, 3)
		rc.await(count(want))
		rc.check(want)
		ctx := context.Background()
		var log []*vigil.WebhookDelivery
		eventually(t, "every delivery logged as delivered", func() bool {
			list, total, err := r.store.ListWebhookDeliveries(ctx, org, w.ID, vigil.Page{Limit: 100})
			if err != nil || total != count(want) {
				return false
			}
			for _, d := range list {
				if d.State != vigil.DeliveryDelivered {
					return false
				}
			}
			log = list
			return true
		})
		// The first delivery took the four 503s, and held the others back
		// meanwhile; each of them went at the first attempt.
		retried := 0
		for _, d := range log {
			switch {
			case d.Attempts == 5 && d.StatusCode == http.StatusNoContent && d.LastError == "" && d.NextAttemptAt == nil:
				retried++
			case d.Attempts != 1:
				t.Errorf("delivery logged %+v; want 1 attempt, or 5 for the first", d)
			}
		}
		if retried != 1 {
			t.Errorf("%d deliveries logged with 5 attempts (4 answered 503, then 204), want 1", retried)
		}
		// The other organization sees none of it.
		if _, _, err := r.store.ListWebhookDeliveries(ctx, vigil.NewID(), w.ID, vigil.Page{Limit: 1}); vigil.ErrorCode(err) != vigil.ENOTFOUND {
			t.Errorf("another org reads the delivery log: %v", err)
		}
	})
}

// TestSlowReceiver: attempts that get no answer within the timeout are
// retried; the log says why they failed.
func TestSlowReceiver(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		org := vigil.NewID()
		rc := newReceiver(t, "whsec_test-secret-of-the-receiver")
		release := make(chan struct{})
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		slow := rc.srv.Config.Handler
		rc.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			// Read whole, the body can be read again by the receiver; and
			// the server notices a client that hangs up only once it was.
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			select {
			case <-release:
			case <-req.Context().Done(): // Vigil gave up waiting
				rc.mu.Lock()
				rc.requests++
				rc.mu.Unlock()
				select {
				case rc.changed <- struct{}{}:
				default:
				}
				return
			}
			slow.ServeHTTP(w, req)
		})
		r.cfg.Timeout = 100 * time.Millisecond
		w := r.subscribe(org, rc.srv.URL, rc.secret)
		r.start()
		want := r.life(org, 2)
		rc.awaitRequests(2) // two attempts timed out
		var d *vigil.WebhookDelivery
		eventually(t, "a timed-out attempt logged", func() bool {
			list, _, err := r.store.ListWebhookDeliveries(context.Background(), org, w.ID, vigil.Page{Limit: 100})
			for _, x := range list {
				if err == nil && x.Attempts > 0 {
					d = x
					return true
				}
			}
			return false
		})
		if d.State != vigil.DeliveryPending || d.StatusCode != 0 || !strings.Contains(d.LastError, "no answer within") || d.NextAttemptAt == nil {
			t.Errorf("timed-out delivery logged %+v; want pending, no status, \"no answer within\", a next attempt", d)
		}
		close(release)
		rc.await(count(want))
		rc.check(want)
	})
}

// TestRestartWhileDeliveriesPending: with the receiver down, Vigil stops
// and starts again over the same database and JetStream files; once the
// receiver is back every event arrives, in order, none lost.
func TestRestartWhileDeliveriesPending(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		org := vigil.NewID()
		rc := newReceiver(t, "whsec_test-secret-of-the-receiver")
		down := true
		rc.answer = func(int) int {
			if down {
				return http.StatusBadGateway
			}
			return http.StatusNoContent
		}
		r.subscribe(org, rc.srv.URL, rc.secret)
		r.start()
		want := r.life(org, 3)
		rc.awaitRequests(3) // the first delivery failed three times
		r.close()
		more := r.life2(org) // events written while the webhook side is down
		r.open()
		r.start()
		for inc, ids := range more {
			want[inc] = append(want[inc], ids...)
		}
		rc.mu.Lock()
		asked := rc.requests
		down = false
		rc.mu.Unlock()
		rc.await(count(want))
		rc.check(want)
		if asked < 3 {
			t.Errorf("receiver asked %d times while down", asked)
		}
		// A second restart sends nothing again: everything was acknowledged.
		rc.mu.Lock()
		before := rc.requests
		rc.mu.Unlock()
		r.restart()
		r.stop()
		rc.mu.Lock()
		after := rc.requests
		rc.mu.Unlock()
		if after != before {
			t.Logf("a restart after every delivery was taken sent %d requests again (at-least-once allows it)", after-before)
		}
	})
}

// life2 writes one more event per open incident of org (a comment)
// straight into the store, with no webhook service running, and returns
// them by incident.
func (r *rig) life2(org string) map[string][]int64 {
	r.t.Helper()
	r.open()
	defer r.close()
	ctx := context.Background()
	incs, _, err := r.store.ListIncidents(ctx, org, vigil.IncidentFilter{Page: vigil.Page{Limit: 100}})
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string][]int64{}
	for _, inc := range incs {
		c := &vigil.Comment{ID: vigil.NewID(), IncidentID: inc.ID, Author: "bob", Body: "while down", CreatedAt: vigil.Now(), UpdatedAt: vigil.Now()}
		if err := r.store.CreateComment(ctx, org, c); err != nil {
			r.t.Fatal(err)
		}
		evs, _, err := r.store.IncidentHistory(ctx, org, inc.ID, vigil.Page{Limit: 100})
		if err != nil {
			r.t.Fatal(err)
		}
		out[inc.ID] = []int64{evs[len(evs)-1].ID}
	}
	return out
}

// TestDownReceiverBlocksOnlyItsOwn: a subscription whose receiver is gone
// does not hold back another's.
func TestDownReceiverBlocksOnlyItsOwn(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		org := vigil.NewID()
		dead := newReceiver(t, "whsec_test-secret-of-the-dead-one")
		dead.srv.Close() // nothing listens on its port any more
		rc := newReceiver(t, "whsec_test-secret-of-the-receiver")
		dw := r.subscribe(org, dead.srv.URL, dead.secret)
		r.subscribe(org, rc.srv.URL, rc.secret)
		r.start()
		want := r.life(org, 3)
		rc.await(count(want))
		rc.check(want)
		eventually(t, "the dead receiver's first delivery failing", func() bool {
			list, _, err := r.store.ListWebhookDeliveries(context.Background(), org, dw.ID, vigil.Page{Limit: 100})
			if err != nil || len(list) != count(want) {
				return false
			}
			first := list[len(list)-1]
			return first.Attempts >= 2 && strings.Contains(first.LastError, "connect") && first.State == vigil.DeliveryPending
		})
	})
}

// TestDialTimeRefusal: a subscription whose host resolves, when Vigil
// connects, to an address the policy refuses (a name that was public when
// it was created and now points at the loopback: DNS rebinding) is never
// connected to.
func TestDialTimeRefusal(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		org := vigil.NewID()
		rc := newReceiver(t, "whsec_test-secret-of-the-receiver")
		r.cfg.Policy.AllowNetworks = nil // loopback refused, as by default
		r.cfg.Policy.AllowHTTPHosts = []string{"localhost"}
		// Written to the store directly: the API would refuse the URL.
		w := r.subscribe(org, strings.Replace(rc.srv.URL, "127.0.0.1", "localhost", 1), rc.secret)
		r.start()
		r.life(org, 1)
		eventually(t, "the refusal logged", func() bool {
			list, _, err := r.store.ListWebhookDeliveries(context.Background(), org, w.ID, vigil.Page{Limit: 100})
			if err != nil || len(list) == 0 {
				return false
			}
			first := list[len(list)-1] // newest first
			return first.Attempts >= 2 && strings.Contains(first.LastError, "refused by the webhook policy") &&
				strings.Contains(first.LastError, "loopback")
		})
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.requests != 0 {
			t.Errorf("the receiver on the loopback was reached %d times", rc.requests)
		}
	})
}

// TestDisabledAndDeleted: a disabled subscription gets nothing of what
// happens while it is disabled; a deleted one's queued deliveries go.
func TestDisabledAndDeleted(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		org := vigil.NewID()
		rc := newReceiver(t, "whsec_test-secret-of-the-receiver")
		w := r.subscribe(org, rc.srv.URL, rc.secret)
		off, on := false, true
		if _, err := r.store.UpdateWebhook(ctx, org, w.ID, vigil.WebhookUpdate{Enabled: &off}, vigil.Now()); err != nil {
			t.Fatal(err)
		}
		r.start()
		r.life(org, 1)
		// The dispatcher went past the events without queueing any.
		eventually(t, "the dispatcher past the events", func() bool {
			head, _ := r.store.IncidentEventsHead(ctx, org)
			pos, ok, _ := r.store.WebhookCursor(ctx, org)
			return ok && pos == head
		})
		if _, err := r.store.UpdateWebhook(ctx, org, w.ID, vigil.WebhookUpdate{Enabled: &on}, vigil.Now()); err != nil {
			t.Fatal(err)
		}
		want := r.life(org, 1)
		rc.await(count(want))
		rc.check(want)
		if err := r.store.DeleteWebhook(ctx, org, w.ID); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the deleted subscription's lane removed", func() bool {
			lanes, err := r.q.WebhookLanes(ctx)
			return err == nil && len(lanes) == 0
		})
	})
}

// eventually polls cond until it holds, failing t after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTwoProcesses: two webhook services over one store and one queue
// (with an external NATS, each with its own connection, as two vigil
// processes of a scale-out deployment) both dispatch and deliver; each
// event arrives, each incident's in order, though the receiver failed
// the first attempts.
func TestTwoProcesses(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		q2 := r.q
		if r.natsURL != "" {
			var err error
			if q2, err = queue.Open(context.Background(), queue.Config{URL: r.natsURL, Name: r.queueName}, nil); err != nil {
				t.Fatal(err)
			}
			defer q2.Close()
		}
		org := vigil.NewID()
		rc := newReceiver(t, "whsec_test-secret-of-the-receiver")
		rc.answer = func(n int) int {
			if n <= 3 {
				return http.StatusInternalServerError
			}
			return http.StatusNoContent
		}
		r.subscribe(org, rc.srv.URL, rc.secret)
		r.start()
		cfg := r.cfg
		cfg.Store, cfg.Queue = r.store, q2
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); webhook.New(cfg).Run(ctx) }()
		defer func() { cancel(); <-done }()
		want := r.life(org, 4)
		rc.await(count(want))
		rc.check(want)
	})
}

// TestRedirectNotFollowed: a receiver answering 302 to another URL (an
// address the policy would refuse, say) fails the attempt; the target
// is never asked.
func TestRedirectNotFollowed(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *rig) {
		org := vigil.NewID()
		target := newReceiver(t, "whsec_test-secret-of-the-receiver")
		redirector := httptest.NewServer(http.RedirectHandler(target.srv.URL+"/elsewhere", http.StatusFound))
		t.Cleanup(redirector.Close)
		w := r.subscribe(org, redirector.URL, target.secret)
		r.start()
		r.life(org, 1)
		eventually(t, "the redirect logged as a failure", func() bool {
			list, _, err := r.store.ListWebhookDeliveries(context.Background(), org, w.ID, vigil.Page{Limit: 100})
			if err != nil {
				return false
			}
			for _, d := range list {
				if d.Attempts >= 2 && d.StatusCode == http.StatusFound && strings.Contains(d.LastError, "redirects are not followed") {
					return true
				}
			}
			return false
		})
		target.mu.Lock()
		defer target.mu.Unlock()
		if target.requests != 0 {
			t.Errorf("the redirect's target was asked %d times", target.requests)
		}
	})
}
