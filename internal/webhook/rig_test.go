package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/webhook"
)

// store is what a rig opens: the webhook service's store, and the
// correlation transactions that write incident events.
type store interface {
	vigil.Store
	correlate.Store
}

// rig is Vigil's webhook side over a data dir (SQLite or a PostgreSQL
// database, and the embedded JetStream's files), which a test may stop
// and start again as a restart of the process would.
type rig struct {
	t     *testing.T
	kind  string // sqlite or postgres
	dir   string
	pgURL string
	// natsURL and queueName: an external NATS ("": the embedded one).
	natsURL, queueName string
	store              store
	q                  *queue.Queue
	cfg                webhook.Config
	cancel             context.CancelFunc
	done               chan struct{}
}

// forEachStore runs fn on SQLite with the embedded JetStream, as vigil
// serve runs by default, and on PostgreSQL with the external NATS of
// VIGIL_TEST_NATS_URL (under a queue name of the test's own), as a
// scale-out deployment does; with the embedded JetStream when none is
// named.
func forEachStore(t *testing.T, fn func(t *testing.T, r *rig)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			r := &rig{t: t, kind: kind, dir: t.TempDir()}
			if kind == "postgres" {
				r.pgURL = pgtest.FreshDB(t)
				if r.natsURL = os.Getenv("VIGIL_TEST_NATS_URL"); r.natsURL != "" {
					r.queueName = ownQueue(t, r.natsURL)
				}
			}
			// Short retries, a short ack wait: what the test waits for
			// comes within seconds.
			r.cfg = webhook.Config{
				Policy: webhook.Policy{AllowHTTPHosts: []string{"127.0.0.1"},
					AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
				Poll: 20 * time.Millisecond, Refresh: 50 * time.Millisecond, Timeout: 2 * time.Second,
				RetryBase: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, AckWait: time.Second,
			}
			r.open()
			t.Cleanup(r.close)
			fn(t, r)
		})
	}
}

func (r *rig) open() {
	r.t.Helper()
	ctx := context.Background()
	var err error
	if r.kind == "postgres" {
		r.store, err = postgres.Open(ctx, r.pgURL, postgres.Options{})
	} else {
		r.store, err = sqlite.Open(ctx, filepath.Join(r.dir, "vigil.db"), sqlite.Options{})
	}
	if err != nil {
		r.t.Fatalf("open store: %v", err)
	}
	r.q, err = queue.Open(ctx, queue.Config{Dir: filepath.Join(r.dir, "jetstream"), URL: r.natsURL, Name: r.queueName}, nil)
	if err != nil {
		r.t.Fatalf("open queue: %v", err)
	}
}

// ownQueue returns a queue name t-<random> for the NATS at url, whose
// streams are deleted when the test ends (only its own: the server may
// be shared).
func ownQueue(t *testing.T, url string) string {
	b := make([]byte, 5)
	rand.Read(b)
	names, err := queue.NamesFor("t-" + hex.EncodeToString(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Errorf("cleanup of queue %s: %v", names.Queue, err)
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range []string{names.Stream, names.DeadStream, names.WebhookStream, "KV_" + names.OwnerBucket} {
			if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("delete stream %s: %v", s, err)
			}
		}
	})
	return names.Queue
}

// start runs the webhook service.
func (r *rig) start() {
	cfg := r.cfg
	cfg.Store, cfg.Queue = r.store, r.q
	svc := webhook.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() { defer close(r.done); svc.Run(ctx) }()
}

// stop stops the service, as a shutdown does.
func (r *rig) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

func (r *rig) close() {
	r.stop()
	if r.q != nil {
		r.q.Close()
		r.q = nil
	}
	if r.store != nil {
		r.store.Close()
		r.store = nil
	}
}

// restart closes everything and opens it again over the same data.
func (r *rig) restart() {
	r.close()
	r.open()
	r.start()
}

// subscribe creates a subscription of org to url for every type, as the
// API does (starting at the org's head).
func (r *rig) subscribe(org, url, secret string) *vigil.Webhook {
	r.t.Helper()
	head, err := r.store.IncidentEventsHead(context.Background(), org)
	if err != nil {
		r.t.Fatal(err)
	}
	now := vigil.Now()
	w := &vigil.Webhook{ID: vigil.NewID(), URL: url, EventTypes: vigil.WebhookEventTypes, Enabled: true, Secret: secret,
		Since: head, CreatedBy: "admin", CreatedAt: now, UpdatedAt: now}
	if err := r.store.CreateWebhook(context.Background(), org, w); err != nil {
		r.t.Fatal(err)
	}
	return w
}

// life writes the events of n incidents of org, interleaved: each is
// created, changes status, is commented and assigned. It returns the
// event ids of each incident in the order of its history.
func (r *rig) life(org string, n int) map[string][]int64 {
	r.t.Helper()
	ctx := vigil.WithActor(context.Background(), "ana")
	eng := correlate.NewEngine(r.store, nil, vigil.DefaultCorrelationPolicy())
	var incs []string
	for i := range n {
		now := vigil.Now()
		o := &vigil.Observation{ID: vigil.NewID(), Type: "test.finding", Description: "finding " + strconv.Itoa(i),
			Severity: vigil.SeverityMedium, CreatedAt: now, UpdatedAt: now}
		if err := eng.Record(ctx, org, o, "incident "+strconv.Itoa(i)); err != nil {
			r.t.Fatal(err)
		}
		incs = append(incs, o.IncidentID)
	}
	for _, inc := range incs {
		if _, err := r.store.SetIncidentStatus(ctx, org, inc, 2, "ana", vigil.Now()); err != nil {
			r.t.Fatal(err)
		}
	}
	for _, inc := range incs {
		c := &vigil.Comment{ID: vigil.NewID(), IncidentID: inc, Author: "ana", Body: "looking", CreatedAt: vigil.Now(), UpdatedAt: vigil.Now()}
		if err := r.store.CreateComment(ctx, org, c); err != nil {
			r.t.Fatal(err)
		}
	}
	bob := "bob"
	for _, inc := range incs {
		if _, err := r.store.UpdateIncidentCase(ctx, org, inc, vigil.CaseUpdate{Assignee: &bob}, "ana", vigil.Now()); err != nil {
			r.t.Fatal(err)
		}
	}
	out := map[string][]int64{}
	for _, inc := range incs {
		evs, _, err := r.store.IncidentHistory(context.Background(), org, inc, vigil.Page{Limit: 100})
		if err != nil {
			r.t.Fatal(err)
		}
		for _, ev := range evs {
			out[inc] = append(out[inc], ev.ID)
		}
	}
	return out
}

// receiver is a webhook receiver as its docs tell one to write it: it
// checks the signature (HMAC-SHA256 of timestamp "." body, computed here
// from the documented scheme, not by Vigil's code), drops a delivery id
// it already took, and records the events in the order they came.
type receiver struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu       sync.Mutex
	answer   func(n int) int // the status of the n-th request (1-based); nil: 204
	requests int
	bad      []string
	seen     map[string]bool
	order    map[string][]int64 // incident → event ids, first arrivals
	total    int
	changed  chan struct{}
}

func newReceiver(t *testing.T, secret string) *receiver {
	rc := &receiver{t: t, secret: secret, seen: map[string]bool{}, order: map[string][]int64{}, changed: make(chan struct{}, 1)}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	defer func() {
		select {
		case rc.changed <- struct{}{}:
		default:
		}
	}()
	rc.requests++
	if rc.answer != nil {
		if code := rc.answer(rc.requests); code != http.StatusNoContent {
			w.WriteHeader(code)
			return
		}
	}
	ts := r.Header.Get("Vigil-Webhook-Timestamp")
	m := hmac.New(sha256.New, []byte(rc.secret))
	m.Write([]byte(ts + "." + string(body)))
	want := "v1=" + hex.EncodeToString(m.Sum(nil))
	sec, _ := strconv.ParseInt(ts, 10, 64)
	if !hmac.Equal([]byte(r.Header.Get("Vigil-Webhook-Signature")), []byte(want)) || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		rc.bad = append(rc.bad, "signature or timestamp of "+r.Header.Get("Vigil-Webhook-Id"))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil || p.Event == nil || p.ID != r.Header.Get("Vigil-Webhook-Id") ||
		p.Type != r.Header.Get("Vigil-Webhook-Event") || p.Type != p.Event.Type {
		rc.bad = append(rc.bad, "payload "+string(body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if !rc.seen[p.ID] {
		rc.seen[p.ID] = true
		rc.order[p.Event.IncidentID] = append(rc.order[p.Event.IncidentID], p.Event.ID)
		rc.total++
	}
	w.WriteHeader(http.StatusNoContent)
}

// await waits until the receiver took n distinct deliveries, failing t
// after 30 s.
func (rc *receiver) await(n int) {
	rc.t.Helper()
	rc.waitFor("distinct deliveries taken", n, func() int { return rc.total })
}

// awaitRequests waits until the receiver was asked n times.
func (rc *receiver) awaitRequests(n int) {
	rc.t.Helper()
	rc.waitFor("requests", n, func() int { return rc.requests })
}

// waitFor waits until count (read under the receiver's lock) reaches n,
// woken by each request.
func (rc *receiver) waitFor(what string, n int, count func() int) {
	rc.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		rc.mu.Lock()
		got := count()
		rc.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-rc.changed:
		case <-deadline:
			rc.t.Fatalf("receiver: %d %s, want %d", got, what, n)
		}
	}
}

// check fails t unless the receiver took exactly the events of want, each
// incident's in the order of its history, every signature good.
func (rc *receiver) check(want map[string][]int64) {
	rc.t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		rc.t.Errorf("receiver refused: %q", rc.bad)
	}
	for inc, ids := range want {
		got := rc.order[inc]
		if len(got) != len(ids) {
			rc.t.Errorf("incident %s: received events %v, want %v", inc, got, ids)
			continue
		}
		for i := range ids {
			if got[i] != ids[i] {
				rc.t.Errorf("incident %s: received events %v, want %v in this order", inc, got, ids)
				break
			}
		}
	}
	if len(rc.order) != len(want) {
		rc.t.Errorf("received events of %d incidents, want %d", len(rc.order), len(want))
	}
}

func count(m map[string][]int64) int {
	n := 0
	for _, ids := range m {
		n += len(ids)
	}
	return n
}
