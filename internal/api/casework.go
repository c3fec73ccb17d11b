package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// Case work: additions to the contract. PUT /v1/incidents/{id} changes
// only the assignee and the tags (the status keeps its own endpoint, as
// promised); comments are a sub-resource of their incident.

func (s *Server) updateIncidentCase(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b struct {
		Assignee json.RawMessage `json:"assignee"`
		Tags     json.RawMessage `json:"tags"`
	}
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	u, err := parseCaseUpdate(b.Assignee, b.Tags)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := principal(r.Context())
	i, err := s.store.UpdateIncidentCase(r.Context(), p.OrgID, id, u, vigil.ActorFrom(r.Context()), s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Incident updated successfully", detail(i))
}

// parseCaseUpdate reads the assignee (a sub, or null for nobody) and the
// tags (the whole set) of a case update; at least one is required.
func parseCaseUpdate(assignee, tags json.RawMessage) (vigil.CaseUpdate, error) {
	var u vigil.CaseUpdate
	if assignee == nil && tags == nil {
		return u, vigil.InvalidField("body", "must set assignee or tags (the status has PUT /v1/incidents/{id}/status)")
	}
	if assignee != nil {
		var a *string
		if err := json.Unmarshal(assignee, &a); err != nil {
			return u, vigil.InvalidField("assignee", "must be a string or null")
		}
		if a == nil {
			a = new(string)
		} else if !vigil.ValidAssignee(*a) {
			return u, vigil.InvalidField("assignee", "must be 1 to 256 bytes of printable text, or null to unassign")
		}
		u.Assignee = a
	}
	if tags != nil {
		var ts []string
		if err := json.Unmarshal(tags, &ts); err != nil || ts == nil {
			return u, vigil.InvalidField("tags", "must be an array of strings")
		}
		var issues []vigil.FieldIssue
		for i, t := range ts {
			if !vigil.ValidTag(t) {
				issues = append(issues, vigil.FieldIssue{Field: "tags[" + strconv.Itoa(i) + "]",
					Issue: "must be 1 to 64 letters, digits or - _ . : /"})
			}
		}
		if len(issues) > 0 {
			return u, vigil.Invalid(issues...)
		}
		if ts = vigil.NormalizeTags(ts); len(ts) > vigil.MaxTags {
			return u, vigil.InvalidField("tags", "must hold at most 32 distinct tags")
		}
		u.Tags = ts
	}
	return u, nil
}

// commentBody reads the body of a comment written or edited.
func commentBody(w http.ResponseWriter, r *http.Request) (string, error) {
	var b struct {
		Body *string `json:"body"`
	}
	if err := decode(w, r, &b); err != nil {
		return "", err
	}
	switch {
	case b.Body == nil:
		return "", vigil.InvalidField("body", "is required")
	case *b.Body == "":
		return "", vigil.InvalidField("body", "must not be empty")
	case len(*b.Body) > vigil.MaxCommentBytes || !utf8.ValidString(*b.Body):
		return "", vigil.InvalidField("body", "must be UTF-8 text of at most 16384 bytes")
	}
	return *b.Body, nil
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := commentBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.now()
	c := &vigil.Comment{ID: vigil.NewID(), IncidentID: id, Author: vigil.ActorFrom(r.Context()), Body: body, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateComment(r.Context(), principal(r.Context()).OrgID, c); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusCreated, "Comment created successfully", c)
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	servePage(s, w, r, "comments", "Comments retrieved successfully", func(ctx context.Context, org string, p vigil.Page) ([]*vigil.Comment, int, error) {
		return s.store.ListComments(ctx, org, id, p)
	})
}

// ownComment returns the comment the path names when the caller may
// change it: its author, or an admin of the org.
func (s *Server) ownComment(r *http.Request) (*vigil.Comment, error) {
	id, err := incidentID(r)
	if err != nil {
		return nil, err
	}
	p := principal(r.Context())
	c, err := s.store.GetComment(r.Context(), p.OrgID, id, r.PathValue("comment"))
	if err != nil {
		return nil, err
	}
	if c.Author != vigil.ActorFrom(r.Context()) && !p.allowed(vigil.PermAdmin) {
		return nil, vigil.Errorf(vigil.EFORBIDDEN, "only the author of a comment or an admin may change it")
	}
	return c, nil
}

func (s *Server) updateComment(w http.ResponseWriter, r *http.Request) {
	c, err := s.ownComment(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := commentBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err = s.store.UpdateComment(r.Context(), principal(r.Context()).OrgID, c.IncidentID, c.ID, body, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Comment updated successfully", c)
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request) {
	c, err := s.ownComment(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.DeleteComment(r.Context(), principal(r.Context()).OrgID, c.IncidentID, c.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Comment deleted successfully", nil)
}
