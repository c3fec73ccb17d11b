// Package webhook sends each org's incident events to the receivers it
// subscribed: a dispatcher follows the orgs' event streams and queues a
// delivery per event and subscription in JetStream, and a lane per
// subscription sends them one at a time, signed, retrying with backoff,
// so that a receiver that is down holds back only its own deliveries and
// never ingest. It also holds the policy of where deliveries may go.
package webhook

import (
	"cmp"
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/queue"
)

// Store is what the service reads and writes.
type Store interface {
	vigil.WebhookStore
	vigil.HistoryStore
}

// Defaults of Config.
const (
	DefaultPoll        = time.Second
	DefaultRefresh     = 5 * time.Second
	DefaultTimeout     = 10 * time.Second
	DefaultRetryBase   = 10 * time.Second
	DefaultRetryMax    = time.Hour
	DefaultRetryFor    = 24 * time.Hour
	DefaultAckWait     = time.Minute
	DefaultMaxResponse = 64 << 10
	// DefaultKeepLog is how long finished deliveries stay in the log.
	DefaultKeepLog = 7 * 24 * time.Hour
)

// Config wires a Service; zero durations are the Default… values.
type Config struct {
	Store  Store
	Queue  *queue.Queue
	Policy Policy
	Log    *slog.Logger
	// Poll is how often the dispatcher reads the orgs' new events.
	Poll time.Duration
	// Refresh is how often the subscriptions are read again: a change
	// (disabled, a new URL) reaches the lanes within it.
	Refresh time.Duration
	// Timeout bounds each attempt (connect, TLS, answer).
	Timeout time.Duration
	// A failed attempt is retried after RetryBase, doubling at each
	// failure up to RetryMax, with jitter (a random half of it taken off),
	// until RetryFor after the delivery was queued.
	RetryBase, RetryMax, RetryFor time.Duration
	// AckWait is how long a delivery held by a process that died waits
	// before another process (or the next start) takes it.
	AckWait time.Duration
	// MaxResponse bounds what is read of a receiver's answer.
	MaxResponse int64
	// TLS configures the client (tests trust their own CA); nil: the
	// system's roots.
	TLS *tls.Config
	// Now returns the current time; tests may fix it.
	Now func() time.Time
}

// Service runs the dispatcher and the lanes.
type Service struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	hooks  atomic.Pointer[map[string]*vigil.Webhook]

	mu     sync.Mutex
	opened map[string]bool // the lanes this process opened
}

// New returns a Service; Run starts it.
func New(cfg Config) *Service {
	cfg.Poll = cmp.Or(cfg.Poll, DefaultPoll)
	cfg.Refresh = cmp.Or(cfg.Refresh, DefaultRefresh)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.RetryBase = cmp.Or(cfg.RetryBase, DefaultRetryBase)
	cfg.RetryMax = cmp.Or(cfg.RetryMax, DefaultRetryMax)
	cfg.RetryFor = cmp.Or(cfg.RetryFor, DefaultRetryFor)
	cfg.AckWait = cmp.Or(cfg.AckWait, DefaultAckWait)
	cfg.MaxResponse = cmp.Or(cfg.MaxResponse, DefaultMaxResponse)
	if cfg.Now == nil {
		cfg.Now = vigil.Now
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, log: log, client: cfg.Policy.Client(cfg.Timeout, cfg.TLS)}
	s.hooks.Store(&map[string]*vigil.Webhook{})
	s.opened = map[string]bool{}
	return s
}

// firstLane reports whether lane id was not opened by this process
// before, and records that it is now.
func (s *Service) firstLane(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.opened[id]
	s.opened[id] = true
	return first
}

// hook returns subscription id as last read, or nil if it is gone.
func (s *Service) hook(id string) *vigil.Webhook { return (*s.hooks.Load())[id] }

// Run dispatches and delivers until ctx ends, then waits for the lanes:
// a delivery in flight finishes its attempt, one waiting for its next
// attempt goes back to the queue.
func (s *Service) Run(ctx context.Context) {
	lanes := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer func() {
		for _, stop := range lanes {
			stop()
		}
		wg.Wait()
	}()
	refresh := time.NewTicker(s.cfg.Refresh)
	defer refresh.Stop()
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	var pruned time.Time
	for {
		s.refresh(ctx, lanes, &wg)
		if now := s.cfg.Now(); now.Sub(pruned) > time.Hour {
			pruned = now
			if n, err := s.cfg.Store.PruneWebhookDeliveries(ctx, now.Add(-DefaultKeepLog)); err != nil {
				s.log.Warn("webhook: prune delivery logs", slog.String("error", err.Error()))
			} else if n > 0 {
				s.log.Info("webhook: pruned delivery logs", slog.Int("deliveries", n))
			}
		}
		for next := false; !next; {
			s.dispatch(ctx)
			select {
			case <-ctx.Done():
				return
			case <-refresh.C:
				next = true
			case <-poll.C:
			}
		}
	}
}

// refresh reads the subscriptions again, starts a lane for each enabled
// one that has none, stops those of the others, and removes the lanes
// (and queued deliveries) of subscriptions that were deleted.
func (s *Service) refresh(ctx context.Context, lanes map[string]context.CancelFunc, wg *sync.WaitGroup) {
	// The lanes are listed before the subscriptions: a lane listed was
	// made for a subscription that existed then, so one missing from the
	// list read after was deleted.
	queued, qerr := s.cfg.Queue.WebhookLanes(ctx)
	all, err := s.cfg.Store.AllWebhooks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("webhook: read subscriptions", slog.String("error", err.Error()))
		}
		return
	}
	hooks := make(map[string]*vigil.Webhook, len(all))
	for _, h := range all {
		hooks[h.ID] = h
	}
	s.hooks.Store(&hooks)
	for id, stop := range lanes {
		if h := hooks[id]; h == nil || !h.Enabled {
			stop()
			delete(lanes, id)
		}
	}
	for id, h := range hooks {
		if _, ok := lanes[id]; ok || !h.Enabled {
			continue
		}
		lctx, stop := context.WithCancel(ctx)
		lanes[id] = stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.lane(lctx, id)
		}()
	}
	if qerr != nil {
		s.log.Warn("webhook: list lanes", slog.String("error", qerr.Error()))
		return
	}
	for _, id := range queued {
		if hooks[id] == nil {
			if err := s.cfg.Queue.DropWebhook(ctx, id); err != nil {
				s.log.Warn("webhook: drop the lane of a deleted subscription", slog.String("webhook", id), slog.String("error", err.Error()))
			}
		}
	}
}
