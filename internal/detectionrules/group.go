package detectionrules

import (
	"slices"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/sigma"
)

// ruleGroup reads an event for the rules of one log source compiled into
// one FieldSet (detect.Group): the event's guard fields are looked up in
// the set's index once (sigma.Prepared.Candidates), and only the rules
// whose guard it may meet, and those without a guard, are matched — an
// org's thousand Windows rules cost what the few an event may meet cost,
// not a call each.
type ruleGroup struct {
	set     *sigma.FieldSet
	rules   []*ruleDetector
	fields  []int32 // the guard fields the rules' guards test
	always  []int   // the rules without a guard
	byGuard [][]int // guard number → the rules of that guard
}

// groupedRule is a rule as its group's member (detect.Grouped).
type groupedRule struct {
	*ruleDetector
	group  *ruleGroup
	member int
}

func (g groupedRule) Group() (detect.Group, int) { return g.group, g.member }

// groupRules returns rules as detectors, those of one log source and one
// FieldSet read by one group.
func groupRules(rules []*ruleDetector) []detect.Detector {
	type key struct {
		set   *sigma.FieldSet
		scope string
	}
	groups := map[key]*ruleGroup{}
	out := make([]detect.Detector, 0, len(rules))
	for _, d := range rules {
		k := key{d.rule.FieldSet(), d.rule.Scope()}
		g := groups[k]
		if g == nil {
			g = &ruleGroup{set: k.set}
			groups[k] = g
		}
		m := len(g.rules)
		g.rules = append(g.rules, d)
		out = append(out, groupedRule{d, g, m})
		num, on := d.rule.Guard()
		if num == 0 {
			g.always = append(g.always, m)
			continue
		}
		for _, f := range on {
			if !slices.Contains(g.fields, f) {
				g.fields = append(g.fields, f)
			}
		}
		for int(num) >= len(g.byGuard) {
			g.byGuard = append(g.byGuard, nil)
		}
		g.byGuard[num] = append(g.byGuard[num], m)
	}
	return out
}

// GroupSignals matches ev against the rules that may match it.
func (g *ruleGroup) GroupSignals(ev *detect.Event, emit func(int, []vigil.Signal)) {
	for _, m := range g.always {
		if sigs := g.rules[m].ScopedSignals(ev); len(sigs) > 0 {
			emit(m, sigs)
		}
	}
	if len(g.byGuard) == 0 {
		return
	}
	for _, num := range prepared(ev, g.set).Candidates(g.fields) {
		if int(num) >= len(g.byGuard) {
			continue // another group's
		}
		for _, m := range g.byGuard[num] {
			if sigs := g.rules[m].ScopedSignals(ev); len(sigs) > 0 {
				emit(m, sigs)
			}
		}
	}
}
