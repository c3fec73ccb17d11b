package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/rules"
)

// Suppressions: an addition to the contract. An org's exceptions to
// detection, written in the classification rules' condition language over
// a signal's fields; read with the signals they judge, written with
// signals:manage, as the settings that decide what detection counts.

type suppressionBody struct {
	Name       *string          `json:"name"`
	Enabled    *bool            `json:"enabled"`
	Reason     *string          `json:"reason"`
	Conditions *json.RawMessage `json:"conditions"`
	// ExpiresAt is absent (unchanged), null (never expires) or a time.
	ExpiresAt json.RawMessage `json:"expires_at"`
}

// suppressionView is a suppression as the API shows it: with whether it
// applies now.
type suppressionView struct {
	*vigil.Suppression
	Active bool `json:"active"`
}

func (s *Server) viewSuppression(sp *vigil.Suppression) suppressionView {
	return suppressionView{Suppression: sp, Active: sp.Active(s.now())}
}

// validate checks the fields present; create also requires name and
// conditions. Conditions are compiled as a signal's, so a bad tree is
// refused on write with the path of its bad part; an empty tree, which
// would swallow every signal, is refused. It returns the expiry when the
// body sets one (set, with a nil time for null).
func (b *suppressionBody) validate(create bool) (expires *time.Time, set bool, err error) {
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	switch {
	case b.Name == nil && create:
		bad("name", "is required")
	case b.Name != nil:
		if n := utf8.RuneCountInString(strings.TrimSpace(*b.Name)); n < 1 || utf8.RuneCountInString(*b.Name) > vigil.MaxSuppressionNameLen {
			bad("name", "must be 1..200 characters")
		} else if strings.ContainsRune(*b.Name, 0) {
			bad("name", "must not contain NUL characters")
		}
	}
	if b.Reason != nil {
		if utf8.RuneCountInString(*b.Reason) > vigil.MaxSuppressionReasonLen {
			bad("reason", "must be at most 2000 characters")
		} else if strings.ContainsRune(*b.Reason, 0) {
			bad("reason", "must not contain NUL characters")
		}
	}
	switch {
	case b.Conditions == nil && create:
		bad("conditions", "is required: a suppression names the signals it swallows")
	case b.Conditions != nil:
		if c, err := rules.CompileSignal(*b.Conditions); err != nil {
			d := vigil.ErrorDetails(err)
			if len(d) == 0 {
				d = []vigil.FieldIssue{{Field: "conditions", Issue: vigil.ErrorMessage(err)}}
			}
			issues = append(issues, d...)
		} else if c.MatchesAll() {
			bad("conditions", "must not be empty: a suppression of every signal would silence detection")
		} else {
			var buf bytes.Buffer
			json.Compact(&buf, *b.Conditions)
			*b.Conditions = buf.Bytes()
		}
	}
	if b.ExpiresAt != nil {
		set = true
		var ok bool
		if expires, ok = expiry(b.ExpiresAt); !ok {
			bad("expires_at", "must be an RFC 3339 time between 1900 and 2200, e.g. 2026-01-02T15:04:05Z, or null for never")
		}
	}
	if len(issues) > 0 {
		return nil, false, vigil.Invalid(issues...)
	}
	return expires, set, nil
}

// expiry reads expires_at: null (nil) or an RFC 3339 time.
func expiry(raw json.RawMessage) (*time.Time, bool) {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !vigil.ValidTimestamp(t) {
		return nil, false
	}
	t = t.UTC()
	return &t, true
}

func (s *Server) createSuppression(w http.ResponseWriter, r *http.Request) {
	var b suppressionBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	expires, _, err := b.validate(true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := principal(r.Context())
	now := s.now()
	sp := &vigil.Suppression{ID: vigil.NewID(), Name: *b.Name, Enabled: true, Conditions: *b.Conditions,
		ExpiresAt: expires, CreatedBy: p.Subject, CreatedAt: now, UpdatedAt: now}
	if b.Enabled != nil {
		sp.Enabled = *b.Enabled
	}
	if b.Reason != nil {
		sp.Reason = *b.Reason
	}
	if err := s.store.CreateSuppression(r.Context(), p.OrgID, sp); err != nil {
		s.fail(w, r, err)
		return
	}
	s.suppressionsChanged(p.OrgID)
	ok(w, http.StatusCreated, "Suppression created successfully", s.viewSuppression(sp))
}

func (s *Server) getSuppression(w http.ResponseWriter, r *http.Request) {
	sp, err := s.store.GetSuppression(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Suppression retrieved successfully", s.viewSuppression(sp))
}

func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	p := q.page()
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	list, total, err := s.store.ListSuppressions(r.Context(), principal(r.Context()).OrgID, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]suppressionView, len(list))
	for i, sp := range list {
		views[i] = s.viewSuppression(sp)
	}
	ok(w, http.StatusOK, "Suppressions retrieved successfully", listData("suppressions", views, total, p))
}

func (s *Server) updateSuppression(w http.ResponseWriter, r *http.Request) {
	var b suppressionBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	expires, set, err := b.validate(false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	u := vigil.SuppressionUpdate{Name: b.Name, Enabled: b.Enabled, Reason: b.Reason, Conditions: b.Conditions,
		SetExpiresAt: set, ExpiresAt: expires}
	org := principal(r.Context()).OrgID
	sp, err := s.store.UpdateSuppression(r.Context(), org, r.PathValue("id"), u, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.suppressionsChanged(org)
	ok(w, http.StatusOK, "Suppression updated successfully", s.viewSuppression(sp))
}

func (s *Server) deleteSuppression(w http.ResponseWriter, r *http.Request) {
	org := principal(r.Context()).OrgID
	if err := s.store.DeleteSuppression(r.Context(), org, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	s.suppressionsChanged(org)
	ok(w, http.StatusOK, "Suppression deleted successfully", nil)
}

// suppressionsChanged tells this process's workers that org's screen
// changed; other processes see it within their cache's bound.
func (s *Server) suppressionsChanged(org string) {
	if s.screens != nil {
		s.screens.Invalidate(org)
	}
}
