package api

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/rules"
)

// Bounds of a rule preview: the open incidents looked at (the most
// recently active; each costs the facts of up to 500 artifacts), the time
// spent looking (past it, the incidents not yet looked at are left out,
// and scanned says so) and the matches listed.
const (
	previewScan    = 500
	previewMatches = 100
	previewBudget  = 2 * time.Second
	previewWorkers = 4
)

// previewBody is a rule as it would be saved; id names the rule it would
// replace, when an existing one is being edited.
type previewBody struct {
	ruleBody
	ID *string `json:"id"`
}

// previewMatch is one open incident the rule's conditions match.
type previewMatch struct {
	ID             string         `json:"id"`
	Title          string         `json:"title"`
	Severity       string         `json:"severity"`
	Status         int            `json:"status"`
	StatusName     string         `json:"status_name"`
	LastActivityAt time.Time      `json:"last_activity_at"`
	Decides        bool           `json:"decides"`
	ShadowedBy     *vigil.RuleRef `json:"shadowed_by"`
}

// previewRule answers which open incidents a rule would match before it
// is saved (an addition to the contract): the same validation as a
// create, the same rules engine, nothing written. It lists incidents, so
// it needs incidents:read.
func (s *Server) previewRule(w http.ResponseWriter, r *http.Request) {
	var b previewBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := b.validate(false); err != nil {
		s.fail(w, r, err)
		return
	}
	rule := &vigil.Rule{ID: vigil.NewID(), Name: "preview", Priority: vigil.MaxRulePriority, Enabled: true,
		Severity: vigil.SeverityMedium, Conditions: json.RawMessage("{}")}
	if b.ID != nil {
		rule.ID = *b.ID
	}
	if b.Name != nil {
		rule.Name = *b.Name
	}
	if b.Priority != nil {
		rule.Priority = *b.Priority
	}
	if b.Severity != nil {
		rule.Severity = *b.Severity
	}
	if b.TargetInfrastructure != nil {
		rule.TargetInfrastructure = *b.TargetInfrastructure
	}
	if b.Conditions != nil {
		rule.Conditions = *b.Conditions
	}
	org := principal(r.Context()).OrgID
	// The most recently active open incidents, New and Investigating.
	var open []*vigil.Incident
	total := 0
	for _, st := range []int{vigil.StatusNew, vigil.StatusInvestigating} {
		incs, n, err := s.store.ListIncidents(r.Context(), org, vigil.IncidentFilter{Status: st, Sort: vigil.IncidentSortActivity,
			Page: vigil.Page{Limit: previewScan}})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		open, total = append(open, incs...), total+n
	}
	slices.SortFunc(open, func(a, b *vigil.Incident) int {
		return cmp.Or(b.LastActivityAt.Compare(a.LastActivityAt), cmp.Compare(b.ID, a.ID))
	})
	open = open[:min(len(open), previewScan)]
	byID := make(map[string]*vigil.Incident, len(open))
	ids := make([]string, len(open))
	for i, inc := range open {
		ids[i], byID[inc.ID] = inc.ID, inc
	}
	// The facts of an incident are read from its newest 500 artifacts:
	// the scan stops at a time budget, and says how far it got.
	pv, err := rules.NewClassifier(s.store).NewPreview(r.Context(), org, rule)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	budget, cancel := context.WithTimeout(r.Context(), previewBudget)
	defer cancel()
	// A few readers at once (each incident is a handful of indexed reads);
	// the answer is the most recently active incidents looked at, in order.
	type result struct {
		m    *rules.PreviewMatch
		err  error
		done bool
	}
	results := make([]result, len(ids))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(previewWorkers, len(ids)) {
		wg.Go(func() {
			for budget.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				m, err := pv.Match(budget, ids[i])
				results[i] = result{m: m, err: err, done: true}
			}
		})
	}
	wg.Wait()
	var found []rules.PreviewMatch
	scanned := 0
	for _, res := range results {
		if !res.done {
			break
		}
		if res.err != nil {
			if budget.Err() != nil && r.Context().Err() == nil {
				break // out of time: what was looked at is the answer
			}
			s.fail(w, r, res.err)
			return
		}
		scanned++
		if res.m != nil {
			found = append(found, *res.m)
		}
	}
	matches := []previewMatch{}
	for _, m := range found[:min(len(found), previewMatches)] {
		inc := byID[m.IncidentID]
		pm := previewMatch{ID: inc.ID, Title: inc.Title, Severity: inc.Severity, Status: inc.Status, StatusName: inc.StatusName,
			LastActivityAt: inc.LastActivityAt, Decides: m.Decides}
		if m.ShadowedBy != nil {
			pm.ShadowedBy = &vigil.RuleRef{ID: m.ShadowedBy.ID, Name: m.ShadowedBy.Name}
		}
		matches = append(matches, pm)
	}
	ok(w, http.StatusOK, "Rule preview computed", map[string]any{
		"matches": matches, "matched": len(found), "scanned": scanned, "open_incidents": total,
		"severity": rule.Severity,
	})
}
