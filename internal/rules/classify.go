package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// Classifier applies an org's classification rules to its incidents:
// enabled rules by ascending priority, older first on ties (SortRules); the
// first match sets the severity and is recorded as classified_by; an
// incident no rule matches keeps (or goes back to) its computed severity,
// so that disabling or deleting a rule undoes what it did. The rules as
// users see them are described in docs/detections.md.
type Classifier struct {
	store Store
	now   func() time.Time
}

// Store is what classification reads and records: an org's rules and
// internal networks, and what rules see and decide of its incidents.
type Store interface {
	vigil.ClassificationStore
	ListRules(ctx context.Context, org string, p vigil.Page) ([]*vigil.Rule, int, error)
	EnrichmentSettings(ctx context.Context, org string) (*vigil.EnrichmentSettings, error)
}

// NewClassifier returns a Classifier over store.
func NewClassifier(store Store) *Classifier {
	return &Classifier{store: store, now: vigil.Now}
}

// Incidents classifies the incidents ids of org. Closed incidents keep
// whatever they had: their severity is the analyst's record.
func (c *Classifier) Incidents(ctx context.Context, org string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rs, internal, err := c.load(ctx, org)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	batch, _ := c.store.(batchStore)
	var todo []string
	var decided []*vigil.Rule
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		rule, ok, err := c.decide(ctx, org, id, rs, internal)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if batch == nil {
			if err := c.store.ClassifyIncident(ctx, org, id, rule, c.now()); err != nil {
				return err
			}
			continue
		}
		todo, decided = append(todo, id), append(decided, rule)
	}
	if len(todo) == 0 {
		return nil
	}
	return batch.ClassifyIncidents(ctx, org, todo, decided, c.now())
}

// batchStore is a Store that records the decisions of many incidents in
// one transaction: ClassifyIncident of each of ids with the rule of the
// same index.
type batchStore interface {
	ClassifyIncidents(ctx context.Context, org string, ids []string, rules []*vigil.Rule, now time.Time) error
}

// decide returns the rule that decides incident id (nil: none), false
// when the incident is gone.
func (c *Classifier) decide(ctx context.Context, org, id string, rs *RuleSet, internal []netip.Prefix) (*vigil.Rule, bool, error) {
	if rs.Empty() {
		return nil, true, nil
	}
	vf, err := c.store.IncidentFacts(ctx, org, id)
	if err != nil {
		if vigil.ErrorCode(err) == vigil.ENOTFOUND {
			return nil, false, nil // merged or deleted meanwhile
		}
		return nil, false, fmt.Errorf("classify %s: %w", id, err)
	}
	return rs.Classify(facts(vf), internal), true, nil
}

// load reads org's rules (all pages) and internal networks.
func (c *Classifier) load(ctx context.Context, org string) (*RuleSet, []netip.Prefix, error) {
	rules, internal, err := c.rulesOf(ctx, org)
	if err != nil {
		return nil, nil, err
	}
	return NewRuleSet(rules), internal, nil
}

// rulesOf reads org's rules (all pages, sorted) and internal networks.
func (c *Classifier) rulesOf(ctx context.Context, org string) ([]*vigil.Rule, []netip.Prefix, error) {
	var rules []*vigil.Rule
	for off := 0; ; off += vigil.MaxLimit {
		page, total, err := c.store.ListRules(ctx, org, vigil.Page{Limit: vigil.MaxLimit, Offset: off})
		if err != nil {
			return nil, nil, fmt.Errorf("classify: rules: %w", err)
		}
		rules = append(rules, page...)
		if off+len(page) >= total || len(page) == 0 {
			break
		}
	}
	set, err := c.store.EnrichmentSettings(ctx, org)
	if err != nil {
		return nil, nil, fmt.Errorf("classify: settings: %w", err)
	}
	var internal []netip.Prefix
	for _, n := range set.InternalNetworks {
		if p, err := netip.ParsePrefix(n); err == nil {
			internal = append(internal, p)
		}
	}
	SortRules(rules)
	return rules, internal, nil
}

// facts converts the store's view of an incident into the rule engine's.
func facts(vf *vigil.IncidentFacts) *Facts {
	f := &Facts{Severity: vf.Severity, ArtifactCount: vf.ArtifactCount, NodeCount: vf.NodeCount, Title: vf.Title}
	if r := vf.Rollup; r != nil {
		f.Rollup = &RollupFacts{Detector: r.Detector, Name: r.Name, Sources: r.Sources, Count: r.Count}
	}
	if vf.RaisedBy != nil {
		f.RaisedBy = vf.RaisedBy.Reason
	}
	for _, o := range vf.Observations {
		f.Observations = append(f.Observations, ObservationFacts{Type: o.Type, Severity: o.Severity, Description: o.Description})
	}
	for _, n := range vf.Nodes {
		f.Nodes = append(f.Nodes, NodeFacts{Type: n.Type, Value: n.Value})
	}
	for _, a := range vf.Artifacts {
		af := ArtifactFacts{Source: a.Source}
		ev := a.Event
		if len(ev) == 0 {
			ev = parse.EventJSON(a.Source, a.Raw, a.Timestamp)
		}
		if len(ev) > 0 {
			json.Unmarshal(ev, &af.Event)
		}
		f.Artifacts = append(f.Artifacts, af)
	}
	return f
}

// PreviewMatch is an incident that a rule's conditions match.
type PreviewMatch struct {
	IncidentID string
	// Decides: the rule would set the incident's severity, no enabled
	// rule before it (by priority) matching first.
	Decides bool
	// ShadowedBy is the rule that would decide instead, when not Decides.
	ShadowedBy *vigil.Rule
}

// Preview runs a rule before it is saved, as if it were saved and
// enabled: rule replaces the org's rule with its ID, if any, among the
// org's rules read once by NewPreview. Nothing is written.
type Preview struct {
	c               *Classifier
	org, id         string
	alone, together *RuleSet
	internal        []netip.Prefix
}

// NewPreview compiles rule with the org's other rules.
func (c *Classifier) NewPreview(ctx context.Context, org string, rule *vigil.Rule) (*Preview, error) {
	rules, internal, err := c.rulesOf(ctx, org)
	if err != nil {
		return nil, err
	}
	r := *rule
	r.Enabled = true
	all := []*vigil.Rule{&r}
	for _, o := range rules {
		if o.ID != r.ID {
			all = append(all, o)
		}
	}
	SortRules(all)
	p := &Preview{c: c, org: org, id: r.ID, alone: NewRuleSet([]*vigil.Rule{&r}), together: NewRuleSet(all), internal: internal}
	if inv := p.alone.Invalid(); len(inv) > 0 {
		return nil, inv[r.ID]
	}
	return p, nil
}

// Match tells whether the rule's conditions match incident id, and
// whether the rule would decide it (rather than an earlier rule of the
// org); nil when they do not match or the incident is gone.
func (p *Preview) Match(ctx context.Context, id string) (*PreviewMatch, error) {
	vf, err := p.c.store.IncidentFacts(ctx, p.org, id)
	if vigil.ErrorCode(err) == vigil.ENOTFOUND {
		return nil, nil // merged meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("preview %s: %w", id, err)
	}
	f := facts(vf)
	if p.alone.Classify(f, p.internal) == nil {
		return nil, nil
	}
	m := &PreviewMatch{IncidentID: id}
	if w := p.together.Classify(f, p.internal); w != nil && w.ID != p.id {
		m.ShadowedBy = w
	} else {
		m.Decides = true
	}
	return m, nil
}
