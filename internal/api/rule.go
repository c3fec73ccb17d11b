package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/rules"
)

type ruleBody struct {
	Name                 *string          `json:"name"`
	Priority             *int             `json:"priority"`
	Enabled              *bool            `json:"enabled"`
	Severity             *string          `json:"severity"`
	TargetInfrastructure *bool            `json:"target_infrastructure"`
	Conditions           *json.RawMessage `json:"conditions"`
}

// validate checks the fields present; create also requires name, priority
// and severity. Conditions are compiled, so a bad tree is refused on write
// with the path of its bad part.
func (b *ruleBody) validate(create bool) error {
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	if b.Name == nil && create {
		bad("name", "is required")
	} else if b.Name != nil {
		if n := utf8.RuneCountInString(strings.TrimSpace(*b.Name)); n < 1 || utf8.RuneCountInString(*b.Name) > vigil.MaxRuleNameLen {
			bad("name", "must be 1..200 characters")
		} else if strings.ContainsRune(*b.Name, 0) {
			bad("name", "must not contain NUL characters")
		}
	}
	if b.Priority == nil && create {
		bad("priority", "is required")
	} else if b.Priority != nil && (*b.Priority < 0 || *b.Priority > vigil.MaxRulePriority) {
		bad("priority", "must be between 0 and 2147483647")
	}
	if b.Severity == nil && create {
		bad("severity", "is required")
	} else if b.Severity != nil && !vigil.ValidSeverity(*b.Severity) {
		bad("severity", "must be one of low, medium, high, critical")
	}
	if b.Conditions != nil {
		if _, err := rules.Compile(*b.Conditions); err != nil {
			d := vigil.ErrorDetails(err)
			if len(d) == 0 {
				d = []vigil.FieldIssue{{Field: "conditions", Issue: vigil.ErrorMessage(err)}}
			}
			issues = append(issues, d...)
		} else {
			var c bytes.Buffer
			json.Compact(&c, *b.Conditions)
			*b.Conditions = c.Bytes()
		}
	}
	if len(issues) > 0 {
		return vigil.Invalid(issues...)
	}
	return nil
}

func (s *Server) createRule(w http.ResponseWriter, r *http.Request) {
	var b ruleBody
	if !s.decodeValid(w, r, &b, true) {
		return
	}
	now := s.now()
	rule := &vigil.Rule{ID: vigil.NewID(), Name: *b.Name, Priority: *b.Priority, Enabled: true, Severity: *b.Severity,
		Conditions: json.RawMessage("{}"), CreatedAt: now, UpdatedAt: now}
	if b.Enabled != nil {
		rule.Enabled = *b.Enabled
	}
	if b.TargetInfrastructure != nil {
		rule.TargetInfrastructure = *b.TargetInfrastructure
	}
	if b.Conditions != nil {
		rule.Conditions = *b.Conditions
	}
	org := principal(r.Context()).OrgID
	if err := s.store.CreateRule(r.Context(), org, rule); err != nil {
		s.fail(w, r, err)
		return
	}
	s.ruleWritten(w, r, http.StatusCreated, "Classification rule created successfully", rule)
}

// ruleView is a rule as a write answers it: with whether the org's open
// incidents await re-classification, which runs in the background.
type ruleView struct {
	*vigil.Rule
	ReclassificationPending bool `json:"reclassification_pending"`
}

// ruleWritten answers a rule write (rule nil for a delete) once the
// store has marked the org's re-classification, which it leaves to the
// background: re-classifying every open incident in the request took
// seconds per write.
func (s *Server) ruleWritten(w http.ResponseWriter, r *http.Request, status int, msg string, rule *vigil.Rule) {
	pending, err := s.store.ReclassifyPending(r.Context(), principal(r.Context()).OrgID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if pending {
		if s.reclassify != nil {
			s.reclassify.Notify()
		}
		msg += "; open incidents are being re-classified"
	}
	if rule == nil {
		ok(w, status, msg, nil)
		return
	}
	ok(w, status, msg, ruleView{Rule: rule, ReclassificationPending: pending})
}

func (s *Server) getRule(w http.ResponseWriter, r *http.Request) {
	rule, err := s.store.GetRule(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Classification rule retrieved successfully", rule)
}

func (s *Server) listRules(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, "rules", "Classification rules retrieved successfully", s.store.ListRules)
}

func (s *Server) updateRule(w http.ResponseWriter, r *http.Request) {
	var b ruleBody
	if !s.decodeValid(w, r, &b, false) {
		return
	}
	u := vigil.RuleUpdate{Name: b.Name, Priority: b.Priority, Enabled: b.Enabled, Severity: b.Severity,
		TargetInfrastructure: b.TargetInfrastructure, Conditions: b.Conditions}
	rule, err := s.store.UpdateRule(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"), u, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.ruleWritten(w, r, http.StatusOK, "Classification rule updated successfully", rule)
}

func (s *Server) deleteRule(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeleteRule(r.Context(), principal(r.Context()).OrgID, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	s.ruleWritten(w, r, http.StatusOK, "Classification rule deleted successfully", nil)
}
