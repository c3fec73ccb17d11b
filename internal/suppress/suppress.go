// Package suppress screens detection signals per org before they count:
// an org's suppressions (exceptions written in the classification rules'
// condition language over a signal's fields, compiled by
// rules.CompileSignal) and the kinds of signal it leaves out unless it
// promotes them (Suricata engine events). A Cache keeps each org's screen
// compiled for a bounded time; the pipeline takes a Screen per batch,
// hands it to detection, and then records what it swallowed.
package suppress

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/orgcache"
	"github.com/vigil-soc/vigil/internal/rules"
)

// Store is what a Cache reads and records.
type Store interface {
	ListSuppressions(ctx context.Context, org string, p vigil.Page) ([]*vigil.Suppression, int, error)
	EnrichmentSettings(ctx context.Context, org string) (*vigil.EnrichmentSettings, error)
	CountSuppressed(ctx context.Context, org string, hits []vigil.SuppressedSignal, now time.Time) ([]vigil.SuppressedSignal, error)
}

// DefaultTTL bounds how long a process uses an org's screen before it
// reads the org's suppressions and settings again: a change made through
// another process (another vigil serve, a vigil worker) applies to this
// one's signals within it. A change made through this process applies at
// once (Invalidate).
const DefaultTTL = 10 * time.Second

// Cache holds each org's screen, compiled, for at most its TTL. It is
// safe for concurrent use.
type Cache struct {
	store Store
	log   *slog.Logger
	now   func() time.Time
	sets  *orgcache.Cache[*set]
}

// NewCache returns a Cache over store keeping each org's screen for ttl
// (DefaultTTL when 0).
func NewCache(store Store, ttl time.Duration, log *slog.Logger) *Cache {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{store: store, log: log, now: vigil.Now}
	c.sets = orgcache.New(ttl, c.load)
	return c
}

// Invalidate forgets org's screen: the next batch of org reads its
// suppressions and settings again. Call it after writing either.
func (c *Cache) Invalidate(org string) { c.sets.Invalidate(org) }

// Screen returns the screen of one batch of org's signals, as org's
// suppressions and settings stand now (read again when older than the
// TTL or invalidated).
func (c *Cache) Screen(ctx context.Context, org string) (*Screen, error) {
	now := c.now()
	st, err := c.sets.Get(ctx, org, now)
	if err != nil {
		return nil, err
	}
	return &Screen{set: st, now: now}, nil
}

// RollupPolicy returns org's roll-up and risk settings, as the screen
// of its next batch reads them (correlate.Policies).
func (c *Cache) RollupPolicy(ctx context.Context, org string) (vigil.RollupPolicy, error) {
	st, err := c.sets.Get(ctx, org, c.now())
	if err != nil {
		return vigil.RollupPolicy{}, err
	}
	return st.rollup, nil
}

// Record counts what screen swallowed in org's suppressions (once per
// signal, however often its batch is delivered) and returns the hits
// counted now for the first time.
func (c *Cache) Record(ctx context.Context, org string, s *Screen) ([]vigil.SuppressedSignal, error) {
	if s == nil || len(s.hits) == 0 {
		return nil, nil
	}
	fresh, err := c.store.CountSuppressed(ctx, org, s.hits, s.now)
	if err != nil {
		return nil, fmt.Errorf("count suppressed signals: %w", err)
	}
	return fresh, nil
}

// set is an org's screen: its enabled suppressions, oldest first, and
// whether it promotes engine events.
type set struct {
	suppressions []compiled
	engineEvents bool
	// rollup is the org's roll-up and risk settings, read with the rest.
	rollup vigil.RollupPolicy
}

type compiled struct {
	id      string
	expires *time.Time
	cond    *rules.Condition
}

// load reads and compiles org's screen.
func (c *Cache) load(ctx context.Context, org string) (*set, error) {
	settings, err := c.store.EnrichmentSettings(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("suppressions: settings: %w", err)
	}
	st := &set{engineEvents: settings.SuricataEngineEvents, rollup: settings.RollupPolicy()}
	var all []*vigil.Suppression
	for off := 0; ; off += vigil.MaxLimit {
		page, total, err := c.store.ListSuppressions(ctx, org, vigil.Page{Limit: vigil.MaxLimit, Offset: off})
		if err != nil {
			return nil, fmt.Errorf("suppressions: %w", err)
		}
		all = append(all, page...)
		if off+len(page) >= total || len(page) == 0 {
			break
		}
	}
	// Listed newest first; the oldest that matches is credited.
	slices.Reverse(all)
	for _, s := range all {
		if !s.Enabled {
			continue
		}
		cond, err := rules.CompileSignal(s.Conditions)
		if err != nil {
			// Conditions are validated on write: this one was stored
			// before a validation change. It suppresses nothing.
			c.log.Warn("suppression left out: its conditions do not compile", slog.String("org", org),
				slog.String("suppression_id", s.ID), slog.String("error", err.Error()))
			continue
		}
		st.suppressions = append(st.suppressions, compiled{id: s.ID, expires: s.ExpiresAt, cond: cond})
	}
	return st, nil
}

// Screen judges the signals of one batch of one org (detect.Screen) and
// keeps what it swallowed. It is used by one goroutine.
type Screen struct {
	set          *set
	now          time.Time
	hits         []vigil.SuppressedSignal
	engineEvents map[string]int
}

var _ detect.Screen = (*Screen)(nil)

// Admit reports whether a signal counts: an engine event only where the
// org promotes them; any signal only when none of the org's active
// suppressions (enabled, not expired at the screen's time) matches it,
// the oldest match being credited with it.
func (s *Screen) Admit(detector string, ev *detect.Event, sg *vigil.Signal) bool {
	if sg.EngineEvent && !s.set.engineEvents {
		if s.engineEvents == nil {
			s.engineEvents = map[string]int{}
		}
		s.engineEvents[detector]++
		return false
	}
	if len(s.set.suppressions) == 0 {
		return true
	}
	var f *rules.Facts
	for _, c := range s.set.suppressions {
		if c.expires != nil && !s.now.Before(*c.expires) {
			continue
		}
		if f == nil {
			f = Facts(detector, ev, sg)
		}
		if c.cond.Match(f) {
			s.hits = append(s.hits, vigil.SuppressedSignal{SuppressionID: c.id, Detector: detector, Key: sg.Key, ArtifactID: sg.ArtifactID})
			return false
		}
	}
	return true
}

// Hits returns the signals the screen's suppressions swallowed.
func (s *Screen) Hits() []vigil.SuppressedSignal { return s.hits }

// EngineEvents returns how many engine-event signals the screen left out,
// by detector.
func (s *Screen) EngineEvents() map[string]int { return s.engineEvents }

// Facts is what a suppression sees of the signal sg that detector drew
// from ev: the signal's own fields, its artifact's source and event, and
// the nodes it names.
func Facts(detector string, ev *detect.Event, sg *vigil.Signal) *rules.Facts {
	f := &rules.Facts{Signal: rules.SignalFacts{Detector: detector, Key: sg.Key, Member: sg.Member}}
	if ev != nil {
		f.Artifacts = []rules.ArtifactFacts{{Source: ev.Source, Event: ev.Fields}}
		f.Signal.SourceIP = canonicalIP(field(ev, "source.ip"))
		f.Signal.User = field(ev, "user.name")
		f.Signal.Signature = field(ev, "rule.name")
	}
	if len(sg.Nodes) > 0 {
		f.Nodes = make([]rules.NodeFacts, len(sg.Nodes))
		for i, n := range sg.Nodes {
			f.Nodes[i] = rules.NodeFacts{Type: n.Type, Value: n.Value}
		}
	}
	return f
}

func field(ev *detect.Event, k string) string {
	s, _ := ev.Fields[k].(string)
	return s
}

// canonicalIP writes an address as the nodes do (IPv4-mapped unmapped,
// zone dropped, IPv6 compressed lower case); anything else is kept.
func canonicalIP(s string) string {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return s
}
