package api

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

type observationBody struct {
	Type        *string   `json:"type"`
	Description *string   `json:"description"`
	Severity    *string   `json:"severity"`
	NodeIDs     *[]string `json:"node_ids"`
	ArtifactIDs *[]string `json:"artifact_ids"`
}

// validate checks the fields present; create also requires type and
// description.
func (b *observationBody) validate(create bool) error {
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	switch {
	case b.Type == nil && create:
		bad("type", "is required")
	case b.Type != nil:
		if issue := vigil.ValidateObservationType(*b.Type); issue != "" {
			bad("type", issue)
		}
	}
	switch {
	case b.Description == nil && create:
		bad("description", "is required")
	case b.Description != nil:
		if n := utf8.RuneCountInString(*b.Description); n < 1 || n > vigil.MaxDescriptionLen {
			bad("description", "must be 1..10000 characters")
		} else if strings.ContainsRune(*b.Description, 0) {
			bad("description", "must not contain NUL characters")
		}
	}
	if b.Severity != nil && !vigil.ValidSeverity(*b.Severity) {
		bad("severity", "must be one of low, medium, high, critical")
	}
	for _, ref := range []struct {
		name string
		ids  *[]string
	}{{"node_ids", b.NodeIDs}, {"artifact_ids", b.ArtifactIDs}} {
		if ref.ids == nil {
			continue
		}
		if len(*ref.ids) > vigil.MaxRefsPerRecord {
			bad(ref.name, "must have at most 10000 items")
			continue
		}
		for i, id := range *ref.ids {
			if !vigil.ValidID(id) {
				bad(fmt.Sprintf("%s[%d]", ref.name, i), "must be the id of an existing record")
				break
			}
		}
	}
	if len(issues) > 0 {
		return vigil.Invalid(issues...)
	}
	return nil
}

func (s *Server) createObservation(w http.ResponseWriter, r *http.Request) {
	var b observationBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := b.validate(true); err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.now()
	o := &vigil.Observation{
		ID: vigil.NewID(), Type: *b.Type, Description: *b.Description, Severity: vigil.SeverityMedium,
		NodeIDs: []string{}, ArtifactIDs: []string{}, CreatedAt: now, UpdatedAt: now,
	}
	if b.Severity != nil {
		o.Severity = *b.Severity
	}
	if b.NodeIDs != nil {
		o.NodeIDs = *b.NodeIDs
	}
	if b.ArtifactIDs != nil {
		o.ArtifactIDs = *b.ArtifactIDs
	}
	// Nodes named through the API are all keys (DESIGN §8).
	o.KeyNodeIDs = o.NodeIDs
	org := principal(r.Context()).OrgID
	if err := s.store.RecordObservation(r.Context(), org, o, observationTitle(o), s.corr); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.classify.Incidents(r.Context(), org, []string{o.IncidentID}); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusCreated, "Observation created successfully", o)
}

// observationTitle names an incident opened by an API observation.
func observationTitle(o *vigil.Observation) string {
	d := o.Description
	if utf8.RuneCountInString(d) > 120 {
		d = string([]rune(d)[:117]) + "..."
	}
	return o.Type + ": " + d
}

func (s *Server) getObservation(w http.ResponseWriter, r *http.Request) {
	o, err := s.store.GetObservation(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Observation retrieved successfully", o)
}

func (s *Server) listObservations(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	f := vigil.ObservationFilter{Type: q.str("type"), Severity: q.severity(), Range: q.timeRange(), Page: q.page()}
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	obs, total, err := s.store.ListObservations(r.Context(), principal(r.Context()).OrgID, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Observations retrieved successfully", listData("observations", obs, total, f.Page))
}

func (s *Server) updateObservation(w http.ResponseWriter, r *http.Request) {
	var b observationBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := b.validate(false); err != nil {
		s.fail(w, r, err)
		return
	}
	u := vigil.ObservationUpdate{Type: b.Type, Description: b.Description, Severity: b.Severity, NodeIDs: b.NodeIDs, ArtifactIDs: b.ArtifactIDs}
	org := principal(r.Context()).OrgID
	o, err := s.store.UpdateObservation(r.Context(), org, r.PathValue("id"), u, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.classify.Incidents(r.Context(), org, []string{o.IncidentID}); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Observation updated successfully", o)
}

func (s *Server) deleteObservation(w http.ResponseWriter, r *http.Request) {
	org := principal(r.Context()).OrgID
	o, err := s.store.GetObservation(r.Context(), org, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.DeleteObservation(r.Context(), org, o.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.classify.Incidents(r.Context(), org, []string{o.IncidentID}); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Observation deleted successfully", nil)
}
