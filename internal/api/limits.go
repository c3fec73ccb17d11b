package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// Defaults of the bounds on the work of one request (Config).
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultSearchTimeout  = 10 * time.Second
	DefaultMaxOrgSearches = 2
)

// orgSlots counts the requests of each org in flight in this process, so
// that one org (an analyst's script, a compromised key) cannot run more
// than max expensive requests at once.
type orgSlots struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newOrgSlots(max int) *orgSlots { return &orgSlots{max: max, n: map[string]int{}} }

// acquire takes a slot of org; false when org already holds max.
func (l *orgSlots) acquire(org string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[org] >= l.max {
		return false
	}
	l.n[org]++
	return true
}

func (l *orgSlots) release(org string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[org]--; l.n[org] <= 0 {
		delete(l.n, org)
	}
}

// withDeadline gives the request the deadline d: every store call made
// with its context is cancelled at d (SQLite interrupts the statement,
// PostgreSQL cancels it), and fail then says that the request took too
// long.
func withDeadline(d time.Duration, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next(w, r.WithContext(ctx))
	}
}

// errDeadline marks the errors timedOut made.
var errDeadline = errors.New("deadline")

// timedOut returns the error to answer when err ended a request whose
// context passed its deadline (whatever the driver made of the
// cancellation: a context error, an interrupted statement), else err.
func timedOut(ctx context.Context, err error, msg string) error {
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, errDeadline) {
		return err
	}
	// A store that found why it ran out of time (a node of the artifact
	// store down) says so itself.
	var down interface{ StoreDown() bool }
	if errors.As(err, &down) && down.StoreDown() {
		return err
	}
	return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: msg, Err: fmt.Errorf("%w: %w", errDeadline, err)}
}

// Defaults of the bounds on request bodies (Config).
const (
	DefaultBodyBudget       = 64 << 20
	DefaultClientBodyBudget = 24 << 20
	DefaultBodyMinRate      = 128 << 10
	DefaultBodyGrace        = 10 * time.Second
)

// bodyBudget bounds the bytes of request bodies being read or processed:
// in all, and per client, a client being both its remote address and
// its org. Forty unfinished 10 MiB bodies held 390 MB for up to the
// server's 2-minute read timeout; now a body is refused, before it is
// read, when it would take more than a budget, and it must arrive at a
// minimum rate.
type bodyBudget struct {
	total, perClient int64
	minRate          int64         // bytes per second a body must arrive at, on average
	grace            time.Duration // added to the time that rate allows

	mu   sync.Mutex
	used int64
	by   map[string]int64
}

func newBodyBudget(total, perClient, minRate int64, grace time.Duration) *bodyBudget {
	return &bodyBudget{total: total, perClient: min(perClient, total), minRate: minRate, grace: grace, by: map[string]int64{}}
}

// errBodyBusy marks the refusals of reserve, which are answered with a
// Retry-After.
var errBodyBusy = errors.New("request bodies in flight")

// reserve takes n bytes of the budget for each of keys and of the whole,
// or nothing: a 503 when the whole would pass its bound (the server is
// busy), a 429 when a client's would (that client is).
func (b *bodyBudget) reserve(keys []string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		if b.by[k]+n > b.perClient {
			return &vigil.Error{Code: vigil.ERATELIMITED, Err: errBodyBusy, Message: fmt.Sprintf(
				"this client already has %d MiB of request bodies in flight (with what bulk requests decode from theirs), "+
					"the most it may (per address and per organization); retry when they are done",
				b.perClient>>20)}
		}
	}
	if b.used+n > b.total {
		return &vigil.Error{Code: vigil.EUNAVAILABLE, Err: errBodyBusy,
			Message: "the server is reading (or decoding) as many request bodies as it may hold at once; retry shortly"}
	}
	b.used += n
	for _, k := range keys {
		b.by[k] += n
	}
	return nil
}

func (b *bodyBudget) release(keys []string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	for _, k := range keys {
		if b.by[k] -= n; b.by[k] <= 0 {
			delete(b.by, k)
		}
	}
}

// bodyStep is how much of the budget a body of unknown length (chunked)
// takes at a time as it is read.
const bodyStep = 256 << 10

// limitBody bounds the body of the request: one declared larger than
// MaxBodyBytes is a 413 before it is read; one that would pass a budget
// is refused before it is read; a body of unknown length takes budget as
// it arrives. The body must arrive within the grace plus its size at the
// minimum rate (else 408), and its budget is held until the handler
// returns, the decoded request living as long (a handler that decodes
// more than its body takes more: holdBody). A request whose context
// allows it (waitDeadline) waits for room before it is refused. fail
// answers a refusal.
func (s *Server) limitBody(fail func(http.ResponseWriter, *http.Request, error), next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next(w, r)
			return
		}
		if r.ContentLength > MaxBodyBytes {
			fail(w, r, &vigil.Error{Code: vigil.ETOOLARGE, Message: "request body exceeds 10 MiB"})
			return
		}
		keys := []string{"org " + principal(r.Context()).OrgID}
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			keys = append(keys, "address "+host)
		}
		br := &budgetBody{ReadCloser: r.Body, s: s, keys: keys, rc: http.NewResponseController(w), start: time.Now()}
		defer br.release()
		if r.ContentLength > 0 {
			// A request that may wait for room (waitDeadline) waits for
			// it, before any of its body is read.
			var err error
			retryUntil(r.Context(), waitDeadline(r.Context()), func() bool {
				err = s.bodies.reserve(keys, r.ContentLength)
				return err == nil
			})
			if err != nil {
				fail(w, r, err)
				return
			}
			br.reserved, br.known, br.start = r.ContentLength, true, time.Now()
		}
		br.take(0) // the read deadline; takes no budget, cannot fail
		r.Body = br
		next(w, r.WithContext(context.WithValue(r.Context(), budgetKey{}, br)))
	}
}

// budgetKey is the key of a request's *budgetBody in its context.
type budgetKey struct{}

// holdBody takes n more bytes of the budget held by the body of the
// request of ctx, for what its handler decodes from the body, held as
// long as the body's: until the handler returns. A request holds at most
// a client's whole budget, so that any request may be taken once its
// client has nothing else in flight. A refusal is tried again until
// deadline (none when it has passed).
func holdBody(ctx context.Context, n int64, deadline time.Time) error {
	br, _ := ctx.Value(budgetKey{}).(*budgetBody)
	if br == nil {
		return nil // no body: nothing decoded
	}
	n = min(n, br.s.bodies.perClient-br.reserved)
	if n <= 0 {
		return nil
	}
	var err error
	retryUntil(ctx, deadline, func() bool {
		err = br.s.bodies.reserve(br.keys, n)
		return err == nil
	})
	if err == nil {
		br.reserved += n
	}
	return err
}

// budgetBody is a request body that holds its share of the budget.
type budgetBody struct {
	io.ReadCloser
	s               *Server
	keys            []string
	rc              *http.ResponseController
	start           time.Time
	known           bool  // the length was declared and reserved whole
	reserved, count int64 // bytes reserved, bytes read
}

// take reserves n more bytes and moves the read deadline to what the
// reserved bytes allow at the minimum rate.
func (b *budgetBody) take(n int64) error {
	if n > 0 {
		if err := b.s.bodies.reserve(b.keys, n); err != nil {
			return err
		}
		b.reserved += n
	}
	bb := b.s.bodies
	b.rc.SetReadDeadline(b.start.Add(bb.grace + time.Duration(float64(b.reserved)/float64(bb.minRate)*float64(time.Second))))
	return nil
}

func (b *budgetBody) release() {
	if b.reserved > 0 {
		b.s.bodies.release(b.keys, b.reserved)
		b.reserved = 0
	}
}

func (b *budgetBody) Read(p []byte) (int, error) {
	if !b.known && b.count+int64(len(p)) > b.reserved && b.reserved <= MaxBodyBytes {
		if err := b.take(max(bodyStep, int64(len(p)))); err != nil {
			return 0, err
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.count += int64(n)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return n, &vigil.Error{Code: vigil.ETIMEOUT, Err: err, Message: fmt.Sprintf(
			"request body not received in time: a body must arrive within %s plus 1 s per %d KiB", b.s.bodies.grace, b.s.bodies.minRate>>10)}
	}
	return n, err
}

// retryUntil calls try until it succeeds, the deadline would pass before
// the next try, or ctx ends, waiting between tries from 20 ms doubling to
// 1 s.
func retryUntil(ctx context.Context, deadline time.Time, try func() bool) {
	backoff := 20 * time.Millisecond
	for !try() && time.Until(deadline) >= backoff {
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}
