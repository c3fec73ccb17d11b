package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detectionrules"
	"github.com/vigil-soc/vigil/internal/sigma"
	"github.com/vigil-soc/vigil/internal/starterrules"
)

// Starter rules: an addition to the contract. The Sigma rules every org
// starts with (internal/starterrules), each on or off per org: read with
// signals:read, switched with signals:write as an org's own rules are
// enabled and disabled. They cannot be edited or deleted: an org that
// wants one changed posts its own copy and turns the starter rule off.

// starterRuleView is a starter rule as the API shows it: a detection
// rule (enabled as the org has it) with where it comes from.
type starterRuleView struct {
	detectionRuleView
	Starter        bool   `json:"starter"`
	DefaultEnabled bool   `json:"default_enabled"`
	Origin         string `json:"origin"`
	Path           string `json:"path"`
	Author         string `json:"author"`
	URL            string `json:"url,omitempty"`
	License        string `json:"license"`
}

func viewStarterRule(r *starterrules.Rule, org string, states map[string]bool) starterRuleView {
	dr := r.DetectionRule
	dr.OrgID = org
	if on, ok := states[r.ID]; ok {
		dr.Enabled = on
	}
	v := starterRuleView{detectionRuleView: viewDetectionRule(&dr), Starter: true, DefaultEnabled: r.Enabled,
		Origin: r.Origin, Path: r.Path, Author: r.Author, License: "Apache-2.0"}
	if r.Origin == "SigmaHQ" {
		v.URL = "https://github.com/SigmaHQ/sigma/blob/" + starterrules.SigmaHQCommit + "/" + r.Path
		v.License = "DRL-1.1"
	}
	return v
}

func (s *Server) listStarterRules(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	p := q.page()
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	org := principal(r.Context()).OrgID
	states, err := s.store.StarterRuleStates(r.Context(), org)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all := starterrules.All()
	views := []starterRuleView{}
	for i := p.Offset; i < len(all) && len(views) < p.Limit; i++ {
		views = append(views, viewStarterRule(all[i], org, states))
	}
	ok(w, http.StatusOK, "Starter rules retrieved successfully", listData("starter_rules", views, len(all), p))
}

func (s *Server) getStarterRule(w http.ResponseWriter, r *http.Request) {
	rule := starterrules.Get(r.PathValue("id"))
	if rule == nil {
		s.fail(w, r, vigil.NotFound("starter rule"))
		return
	}
	org := principal(r.Context()).OrgID
	states, err := s.store.StarterRuleStates(r.Context(), org)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Starter rule retrieved successfully", viewStarterRule(rule, org, states))
}

func (s *Server) enableStarterRule(w http.ResponseWriter, r *http.Request) {
	s.switchStarterRule(w, r, true, "Starter rule enabled")
}

func (s *Server) disableStarterRule(w http.ResponseWriter, r *http.Request) {
	s.switchStarterRule(w, r, false, "Starter rule disabled")
}

func (s *Server) switchStarterRule(w http.ResponseWriter, r *http.Request, on bool, msg string) {
	rule := starterrules.Get(r.PathValue("id"))
	if rule == nil {
		s.fail(w, r, vigil.NotFound("starter rule"))
		return
	}
	org := principal(r.Context()).OrgID
	if err := s.store.SetStarterRuleState(r.Context(), org, rule.ID, on, s.now()); err != nil {
		s.fail(w, r, err)
		return
	}
	s.detectionRulesChanged(org)
	ok(w, http.StatusOK, msg, viewStarterRule(rule, org, map[string]bool{rule.ID: on}))
}

// checkBaseRules refuses a correlation rule naming a rule that is no
// detection rule of org (its own, but the one being replaced, id, or a
// starter rule): 400 naming correlation.rules[i].
func (s *Server) checkBaseRules(ctx context.Context, org, id string, dr *vigil.DetectionRule) error {
	if dr.Kind != "correlation" {
		return nil
	}
	parsed, err := sigma.Parse([]byte(dr.Rule))
	if err != nil {
		return err
	}
	all, err := detectionrules.OrgRules(ctx, s.store, org)
	if err != nil {
		return err
	}
	refs := map[string]bool{}
	for _, o := range all {
		if o.Kind == "detection" && o.ID != id {
			refs[o.SigmaID], refs[o.Name] = true, true
		}
	}
	var issues []vigil.FieldIssue
	for i, ref := range parsed.Correlation.Rules {
		if !refs[ref] || ref == "" {
			issues = append(issues, vigil.FieldIssue{Field: "correlation.rules[" + strconv.Itoa(i) + "]",
				Issue: "names no detection rule of the organization (by Sigma id or name, starter rules included): " + strconv.Quote(ref)})
		}
	}
	if len(issues) > 0 {
		return vigil.Invalid(issues...)
	}
	return nil
}

// checkNotBase refuses to delete a rule, or to change its Sigma id or
// name (next: its replacement, nil on delete), while one of org's
// correlation rules names it by that id or name: 409 naming the
// correlation.
func (s *Server) checkNotBase(ctx context.Context, org, id string, next *vigil.DetectionRule) error {
	cur, err := s.store.GetDetectionRule(ctx, org, id)
	if err != nil {
		return err
	}
	all, err := detectionrules.OrgRules(ctx, s.store, org)
	if err != nil {
		return err
	}
	kept := func(ref string) bool {
		return next != nil && next.Kind == "detection" && (next.SigmaID == ref || next.Name == ref)
	}
	for _, o := range all {
		if o.Kind != "correlation" || o.ID == id {
			continue
		}
		parsed, err := sigma.Parse([]byte(o.Rule))
		if err != nil || parsed.Correlation == nil {
			continue
		}
		for _, ref := range parsed.Correlation.Rules {
			if ref != "" && (ref == cur.SigmaID || ref == cur.Name) && !kept(ref) {
				return &vigil.Error{Code: vigil.ECONFLICT,
					Message: "correlation rule " + strconv.Quote(o.Title) + " (" + o.ID + ") names this rule as " + strconv.Quote(ref) + "; change or delete it first",
					Details: []vigil.FieldIssue{{Field: "id", Issue: "is a base rule of correlation rule " + o.ID}}}
			}
		}
	}
	return nil
}
