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
// recently active; each costs the facts of up to 500 artifacts), and the
// closed ones (those closed within previewClosedWithin, the most recently
// active), the time spent looking at each kind (past it, the incidents
// not yet looked at are left out, and scanned says so) and the matches
// listed of each.
const (
	previewScan         = 500
	previewClosedScan   = 200
	previewClosedWithin = 30 * 24 * time.Hour
	previewMatches      = 100
	previewBudget       = 2 * time.Second
	previewWorkers      = 4
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
	if !s.decodeValid(w, r, &b, false) {
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
	pv, err := rules.NewClassifier(s.store).NewPreview(r.Context(), org, rule)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The most recently active open incidents (New, Investigating), which
	// the rule would classify once saved; then those closed lately, which
	// it would have matched (closed incidents keep their severity).
	open, err := s.previewScan(r.Context(), pv, org, []int{vigil.StatusNew, vigil.StatusInvestigating}, time.Time{}, previewScan)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	since := s.now().Add(-previewClosedWithin).UTC()
	closed, err := s.previewScan(r.Context(), pv, org, []int{vigil.StatusResolved, vigil.StatusClosed, vigil.StatusDisrupted}, since, previewClosedScan)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Rule preview computed", map[string]any{
		"matches": open.matches, "matched": open.matched, "scanned": open.scanned, "open_incidents": open.total,
		"severity": rule.Severity,
		"closed": map[string]any{"matches": closed.matches, "matched": closed.matched, "scanned": closed.scanned,
			"closed_incidents": closed.total, "since": since},
	})
}

// previewed is what a preview found among incidents of some statuses.
type previewed struct {
	matches                 []previewMatch // at most previewMatches
	matched, scanned, total int
}

// previewScan runs pv over the most recently active incidents of org in
// the statuses given (closed at or after since, unless zero), at most
// limit of them, for at most previewBudget: what was looked at by then is
// the answer, in order, and scanned says how many that was.
func (s *Server) previewScan(ctx context.Context, pv *rules.Preview, org string, statuses []int, since time.Time, limit int) (previewed, error) {
	var out previewed
	var incs []*vigil.Incident
	for _, st := range statuses {
		page, n, err := s.store.ListIncidents(ctx, org, vigil.IncidentFilter{Status: st, Sort: vigil.IncidentSortActivity,
			ResolvedSince: since, Page: vigil.Page{Limit: limit}})
		if err != nil {
			return out, err
		}
		incs, out.total = append(incs, page...), out.total+n
	}
	slices.SortFunc(incs, func(a, b *vigil.Incident) int {
		return cmp.Or(b.LastActivityAt.Compare(a.LastActivityAt), cmp.Compare(b.ID, a.ID))
	})
	incs = incs[:min(len(incs), limit)]
	// The facts of an incident are read from its newest 500 artifacts:
	// the scan stops at a time budget, and says how far it got.
	budget, cancel := context.WithTimeout(ctx, previewBudget)
	defer cancel()
	// A few readers at once (each incident is a handful of indexed reads);
	// the answer is the most recently active incidents looked at, in order.
	type result struct {
		m    *rules.PreviewMatch
		err  error
		done bool
	}
	results := make([]result, len(incs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(previewWorkers, len(incs)) {
		wg.Go(func() {
			for budget.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(incs) {
					return
				}
				m, err := pv.Match(budget, incs[i].ID)
				results[i] = result{m: m, err: err, done: true}
			}
		})
	}
	wg.Wait()
	out.matches = []previewMatch{}
	for i, res := range results {
		if !res.done {
			break
		}
		if res.err != nil {
			if budget.Err() != nil && ctx.Err() == nil {
				break // out of time: what was looked at is the answer
			}
			return out, res.err
		}
		out.scanned++
		if res.m == nil {
			continue
		}
		if out.matched++; len(out.matches) < previewMatches {
			inc := incs[i]
			pm := previewMatch{ID: inc.ID, Title: inc.Title, Severity: inc.Severity, Status: inc.Status, StatusName: inc.StatusName,
				LastActivityAt: inc.LastActivityAt, Decides: res.m.Decides}
			if sb := res.m.ShadowedBy; sb != nil {
				pm.ShadowedBy = &vigil.RuleRef{ID: sb.ID, Name: sb.Name}
			}
			out.matches = append(out.matches, pm)
		}
	}
	return out, nil
}
