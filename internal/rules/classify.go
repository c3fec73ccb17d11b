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
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if err := c.one(ctx, org, id, rs, internal); err != nil {
			return err
		}
	}
	return nil
}

func (c *Classifier) one(ctx context.Context, org, id string, rs *RuleSet, internal []netip.Prefix) error {
	if rs.Empty() {
		return c.store.ClassifyIncident(ctx, org, id, nil, c.now())
	}
	vf, err := c.store.IncidentFacts(ctx, org, id)
	if err != nil {
		if vigil.ErrorCode(err) == vigil.ENOTFOUND {
			return nil // merged or deleted meanwhile
		}
		return fmt.Errorf("classify %s: %w", id, err)
	}
	return c.store.ClassifyIncident(ctx, org, id, rs.Classify(facts(vf), internal), c.now())
}

// load reads org's rules (all pages) and internal networks.
func (c *Classifier) load(ctx context.Context, org string) (*RuleSet, []netip.Prefix, error) {
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
	return NewRuleSet(rules), internal, nil
}

// facts converts the store's view of an incident into the rule engine's.
func facts(vf *vigil.IncidentFacts) *Facts {
	f := &Facts{Severity: vf.Severity, ArtifactCount: vf.ArtifactCount, NodeCount: vf.NodeCount}
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
