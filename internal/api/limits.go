package api

import (
	"context"
	"errors"
	"fmt"
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
	return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: msg, Err: fmt.Errorf("%w: %w", errDeadline, err)}
}
