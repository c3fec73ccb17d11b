package detectionrules

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/orgcache"
	"github.com/vigil-soc/vigil/internal/sigma"
	"github.com/vigil-soc/vigil/internal/starterrules"
)

// Store is what a Cache reads.
type Store interface {
	ListDetectionRules(ctx context.Context, org string, p vigil.Page) ([]*vigil.DetectionRule, int, error)
	StarterRuleStates(ctx context.Context, org string) (map[string]bool, error)
}

// DefaultTTL bounds how long a process runs an org's rules before it
// reads them again: a change made through another process applies here
// within it; one made through this process at once (Invalidate).
const DefaultTTL = 10 * time.Second

// Cache holds each org's compiled rules for at most its TTL. It is safe
// for concurrent use.
type Cache struct {
	store   Store
	log     *slog.Logger
	now     func() time.Time
	local   string // the local-source policy (WithLocalSources)
	engines *orgcache.Cache[*detect.Engine]
	// compiled holds each org's last compiled rules by their fingerprint:
	// a reload that reads the same rules (as most do, every TTL) takes
	// them as they are instead of parsing and compiling them again.
	compiledMu sync.Mutex
	compiled   map[string]compiledRules
}

// compiledRules is an org's rules compiled: the detectors and the errors
// of the rules left out, for rules of fingerprint fp.
type compiledRules struct {
	fp   [sha256.Size]byte
	dets []detect.Detector
	errs map[string]error
}

// maxCompiledOrgs bounds the orgs whose compiled rules are kept between
// reloads; past it, the kept ones are forgotten.
const maxCompiledOrgs = 4096

// fingerprint identifies what Compile reads of rules: each rule's id,
// kind, whether it is enabled and its text, and the local-source policy.
func fingerprint(rules []*vigil.DetectionRule, local string) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put(local)
	for _, r := range rules {
		put(r.ID)
		put(r.Kind)
		put(r.Rule)
		if r.Enabled {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// NewCache returns a Cache over store keeping each org's rules for ttl
// (DefaultTTL when 0).
func NewCache(store Store, ttl time.Duration, log *slog.Logger) *Cache {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{store: store, log: log, now: vigil.Now}
	c.engines = orgcache.New(ttl, c.load)
	return c
}

// WithLocalSources sets what the rules do with a local source (detect's
// LocalReport, the default, or LocalIgnore), as every built-in detector
// does (--detect local_sources=).
func (c *Cache) WithLocalSources(policy string) *Cache {
	c.local = policy
	return c
}

// Invalidate forgets org's rules: its next batch reads them again.
func (c *Cache) Invalidate(org string) { c.engines.Invalidate(org) }

// Detections returns what org's enabled rules find in evs, counting
// only the signals screen admits (nil: all), as detect.Engine.Screened.
func (c *Cache) Detections(ctx context.Context, org string, evs []*detect.Event, screen detect.Screen) ([]*vigil.Detection, error) {
	eng, err := c.engine(ctx, org)
	if err != nil {
		return nil, err
	}
	if len(eng.Detectors()) == 0 {
		return nil, nil
	}
	return eng.Screened(evs, screen), nil
}

func (c *Cache) engine(ctx context.Context, org string) (*detect.Engine, error) {
	return c.engines.Get(ctx, org, c.now())
}

// load reads and compiles org's enabled rules: the starter rules as org
// has them, then its own.
func (c *Cache) load(ctx context.Context, org string) (*detect.Engine, error) {
	all, err := OrgRules(ctx, c.store, org)
	if err != nil {
		return nil, err
	}
	set, errs := c.compile(org, all)
	for id, err := range errs {
		// Rules are validated on write: this one was stored before a
		// change of what Vigil supports. It detects nothing.
		c.log.Warn("detection rule left out: it does not compile", slog.String("org", org),
			slog.String("detection_rule_id", id), slog.String("error", err.Error()))
	}
	return detect.NewEngine(set...), nil
}

// compile is Compile(rules, c.local), or what it gave for the same rules
// of org last time.
func (c *Cache) compile(org string, rules []*vigil.DetectionRule) ([]detect.Detector, map[string]error) {
	fp := fingerprint(rules, c.local)
	c.compiledMu.Lock()
	prev, ok := c.compiled[org]
	c.compiledMu.Unlock()
	if ok && prev.fp == fp {
		return prev.dets, prev.errs
	}
	dets, errs := Compile(rules, c.local)
	c.compiledMu.Lock()
	if c.compiled == nil || len(c.compiled) >= maxCompiledOrgs {
		c.compiled = map[string]compiledRules{}
	}
	c.compiled[org] = compiledRules{fp: fp, dets: dets, errs: errs}
	c.compiledMu.Unlock()
	return dets, errs
}

// OrgRules returns every rule of org, enabled or not: the starter rules
// (each enabled as org chose, else by default), then org's own, oldest
// first. A correlation naming a rule by Sigma id or name reads org's own
// rule where one of them has it.
func OrgRules(ctx context.Context, store Store, org string) ([]*vigil.DetectionRule, error) {
	states, err := store.StarterRuleStates(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("starter rules: %w", err)
	}
	all := starterrules.ForOrg(org, states)
	for off := 0; ; off += vigil.MaxLimit {
		page, total, err := store.ListDetectionRules(ctx, org, vigil.Page{Limit: vigil.MaxLimit, Offset: off})
		if err != nil {
			return nil, fmt.Errorf("detection rules: %w", err)
		}
		all = append(all, page...)
		if off+len(page) >= total || len(page) == 0 {
			break
		}
	}
	return all, nil
}

// Compile compiles the enabled rules of one org into detectors: its
// detection rules, each with the enabled filters that name it (by Sigma
// id or name) as exceptions, and its correlation rules over the
// detection rules they name (enabled or not: a base rule that should not
// report on its own is disabled). It returns the errors of the rules it
// left out, by rule id. local is the local-source policy (detect's
// LocalReport or LocalIgnore; "" reports).
func Compile(rules []*vigil.DetectionRule, local string) ([]detect.Detector, map[string]error) {
	errs := map[string]error{}
	type comp struct {
		r *vigil.DetectionRule
		c *sigma.Compiled
	}
	var all, dets, filters []comp
	var corrs []*vigil.DetectionRule
	byRef := map[string]*sigma.Compiled{} // detection rules by Sigma id and name
	set := sigma.NewFieldSet()            // the fields all the rules read, numbered once
	for _, r := range rules {
		if r.Kind == "correlation" {
			if r.Enabled {
				corrs = append(corrs, r)
			}
			continue
		}
		if !r.Enabled && r.Kind != "detection" {
			continue
		}
		parsed, err := sigma.Parse([]byte(r.Rule))
		if err != nil {
			errs[r.ID] = err
			continue
		}
		c, err := sigma.CompileIn(parsed, set)
		if err != nil {
			errs[r.ID] = err
			continue
		}
		switch {
		case parsed.Filter != nil:
			filters = append(filters, comp{r, c})
		default:
			all = append(all, comp{r, c})
			for _, ref := range []string{parsed.ID, parsed.Name} {
				if ref != "" {
					byRef[ref] = c
				}
			}
			if r.Enabled {
				dets = append(dets, comp{r, c})
			}
		}
	}
	for _, d := range all {
		for _, f := range filters {
			if f.c.Rule.Filter.Names(d.c.Rule) {
				d.c.AddFilter(f.c)
			}
		}
	}
	rds := make([]*ruleDetector, 0, len(dets))
	for _, d := range dets {
		rds = append(rds, newRuleDetector(d.r.ID, d.c, local))
	}
	out := make([]detect.Detector, 0, len(dets)+len(corrs))
	out = append(out, groupRules(rds)...)
	for _, r := range corrs {
		parsed, err := sigma.Parse([]byte(r.Rule))
		if err != nil {
			errs[r.ID] = err
			continue
		}
		cc, err := sigma.CompileCorrelation(parsed)
		if err != nil {
			errs[r.ID] = err
			continue
		}
		var bases []corrBase
		for _, ref := range parsed.Correlation.Rules {
			c, ok := byRef[ref]
			if !ok {
				err = fmt.Errorf("correlation.rules: %q names no detection rule of the organization", ref)
				break
			}
			bases = append(bases, corrBase{ref: ref, rule: c})
		}
		if err != nil {
			errs[r.ID] = err
			continue
		}
		out = append(out, newCorrDetector(r.ID, cc, bases, local))
	}
	return out, errs
}
