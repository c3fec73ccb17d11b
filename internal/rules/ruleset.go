package rules

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/vigil-soc/vigil"
)

// RuleSet is an org's classification rules compiled once, to classify many
// incidents. It reads the rules when built; later changes to them are not
// seen. It is safe for concurrent use.
type RuleSet struct {
	rules   []compiledRule
	nfields int
	invalid map[string]error
}

type compiledRule struct {
	rule *vigil.Rule
	cond *Condition
}

// NewRuleSet compiles rules, kept in the order given (see SortRules).
// Disabled rules are left out; rules whose conditions fail to compile are
// left out and reported by Invalid.
func NewRuleSet(rules []*vigil.Rule) *RuleSet {
	rs := &RuleSet{}
	ids := map[string]int{}
	for _, r := range rules {
		if r == nil || !r.Enabled {
			continue
		}
		c, err := compile(r.Conditions, ids, scopeIncident)
		if err != nil {
			if rs.invalid == nil {
				rs.invalid = map[string]error{}
			}
			rs.invalid[r.ID] = err
			continue
		}
		rs.rules = append(rs.rules, compiledRule{rule: r, cond: c})
	}
	rs.nfields = len(ids)
	return rs
}

// Invalid returns the compile errors of the enabled rules that were left
// out, by rule ID. Rules are validated on write, so an entry here means a
// rule stored before a validation change.
func (rs *RuleSet) Invalid() map[string]error { return rs.invalid }

// Empty reports whether rs has no rule that could match.
func (rs *RuleSet) Empty() bool { return len(rs.rules) == 0 }

// Classify returns the first rule of rs that matches f, or nil when none
// does. A rule with TargetInfrastructure also requires some node of the
// incident to be an IP address inside one of internal (the org's
// internal_networks); with no internal networks such a rule never matches.
func (rs *RuleSet) Classify(f *Facts, internal []netip.Prefix) *vigil.Rule {
	v := newView(f, rs.nfields)
	for _, cr := range rs.rules {
		if cr.rule.TargetInfrastructure && !v.targetsInternal(internal) {
			continue
		}
		if cr.cond.root == nil || cr.cond.root.match(v) {
			return cr.rule
		}
	}
	return nil
}

// Classify returns the first rule, in the order given, that is enabled and
// matches f, honoring TargetInfrastructure against internal (see
// RuleSet.Classify). The caller orders the rules (SortRules). Rules whose
// conditions fail to compile are skipped. It returns nil when none matches.
// To classify many incidents with the same rules, build a RuleSet once.
func Classify(rules []*vigil.Rule, f *Facts, internal []netip.Prefix) *vigil.Rule {
	return NewRuleSet(rules).Classify(f, internal)
}

// SortRules orders rules for evaluation: ascending priority, so that an
// org states which rule wins; older first on ties, so that a new rule of the
// same priority does not overrule the existing ones; then by ID so that the
// order is total and every run classifies alike.
func SortRules(rules []*vigil.Rule) {
	slices.SortFunc(rules, func(a, b *vigil.Rule) int {
		return cmp.Or(
			cmp.Compare(a.Priority, b.Priority),
			a.CreatedAt.Compare(b.CreatedAt),
			cmp.Compare(a.ID, b.ID),
		)
	})
}
