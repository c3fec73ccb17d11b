package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// incidentSummary is an incident in a list: without nodes, observations
// and history.
type incidentSummary struct {
	*vigil.Incident
	Nodes        []vigil.Node           `json:"nodes,omitempty"`
	Observations []vigil.ObservationRef `json:"observations,omitempty"`
	History      []vigil.StatusChange   `json:"history,omitempty"`
}

// incidentDetail is the single-incident response: always with the arrays.
type incidentDetail struct {
	*vigil.Incident
	Nodes        []vigil.Node           `json:"nodes"`
	Observations []vigil.ObservationRef `json:"observations"`
	History      []vigil.StatusChange   `json:"history"`
}

func detail(i *vigil.Incident) incidentDetail {
	return incidentDetail{Incident: i, Nodes: i.Nodes, Observations: i.Observations, History: i.History}
}

// incidentID reads the id path value; a malformed UUID is a 400 naming
// field id, as API users were promised (other resources answer 404).
func incidentID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !vigil.ValidID(id) {
		return "", vigil.InvalidField("id", "must be a UUID")
	}
	return id, nil
}

func (s *Server) getIncident(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	i, err := s.store.GetIncident(r.Context(), principal(r.Context()).OrgID, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Incident retrieved successfully", detail(i))
}

func (s *Server) listIncidents(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	f := vigil.IncidentFilter{Severity: q.severity(), Range: q.timeRange(), Page: q.page(),
		Assignee: q.str("assignee"), Tag: q.str("tag"),
		// An addition to the contract: when it happened, beside when
		// Vigil saw it (which start and end filter).
		EventRange: q.rangeOf("event_start", "event_end")}
	if f.Assignee != "" && !vigil.ValidAssignee(f.Assignee) {
		q.bad("assignee", "must be 1 to 256 bytes of printable text")
	}
	if f.Tag != "" && !vigil.ValidTag(f.Tag) {
		q.bad("tag", "must be 1 to 64 letters, digits or - _ . : /")
	}
	if f.Node = q.str("node"); f.Node != "" && !vigil.ValidID(f.Node) {
		q.bad("node", "must be a node's id (a UUID)")
	}
	if st := q.str("status"); st != "" {
		n, err := strconv.Atoi(st)
		if err != nil || !vigil.ValidStatus(n) {
			q.bad("status", "must be an integer from 1 to 5")
		}
		f.Status = n
	}
	// Additions to the contract: a title search and the list's order.
	f.Text = q.str("q")
	if len(f.Text) > 200 {
		q.bad("q", "must be at most 200 bytes")
	} else if !utf8.ValidString(f.Text) || strings.ContainsFunc(f.Text, unicode.IsControl) {
		q.bad("q", "must be UTF-8 text without control characters")
	}
	f.Sort = q.str("sort")
	if !vigil.ValidIncidentSort(f.Sort) {
		q.bad("sort", "must be one of "+strings.Join(vigil.IncidentSorts, ", "))
	}
	// And whether the incidents merged into another are listed: they have
	// left the queue, so not unless asked.
	if f.Merged = q.str("merged"); !vigil.ValidMerged(f.Merged) {
		q.bad("merged", "must be one of exclude, include, only")
	}
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	incs, total, err := s.store.ListIncidents(r.Context(), principal(r.Context()).OrgID, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items := make([]incidentSummary, len(incs))
	for i, inc := range incs {
		items[i] = incidentSummary{Incident: inc}
	}
	ok(w, http.StatusOK, "Incidents retrieved successfully", listData("incidents", items, total, f.Page))
}

func (s *Server) setIncidentStatus(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b struct {
		Status json.RawMessage `json:"status"`
	}
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(b.Status) == 0 || string(b.Status) == "null" {
		s.fail(w, r, vigil.InvalidField("status", "is required"))
		return
	}
	// Only a JSON integer literal: "3" (a string) and 3.0 are refused.
	n, err := strconv.Atoi(string(b.Status))
	if err != nil || !vigil.ValidStatus(n) {
		s.fail(w, r, vigil.InvalidField("status", "must be an integer from 1 to 5"))
		return
	}
	p := principal(r.Context())
	actor := vigil.ActorFrom(r.Context())
	i, err := s.store.SetIncidentStatus(r.Context(), p.OrgID, id, n, actor, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Incident status updated to "+i.StatusName, map[string]any{
		"id": i.ID, "status": i.Status, "status_name": i.StatusName,
		"classification": i.Classification, "resolved_at": i.ResolvedAt,
	})
}

func (s *Server) incidentHistory(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	servePage(s, w, r, "events", "Incident history retrieved successfully", func(ctx context.Context, org string, p vigil.Page) ([]*vigil.IncidentEvent, int, error) {
		return s.store.IncidentHistory(ctx, org, id, p)
	})
}

// rollupSources serves GET /v1/incidents/{id}/sources, an addition to the
// contract: a page of a roll-up's sources, heaviest first, each with its
// count; 404 when the incident is none of the org's roll-ups.
func (s *Server) rollupSources(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	servePage(s, w, r, "sources", "Roll-up sources retrieved successfully", func(ctx context.Context, org string, p vigil.Page) ([]vigil.RollupSource, int, error) {
		return s.store.RollupSources(ctx, org, id, p)
	})
}

// The parts of an incident, a page at a time (additions to the contract):
// the single-incident response carries at most 1000 nodes and
// observations (the short form) and no artifact, which an incident of
// thousands cannot show whole.

func (s *Server) incidentObservations(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	servePage(s, w, r, "observations", "Incident observations retrieved successfully", func(ctx context.Context, org string, p vigil.Page) ([]*vigil.Observation, int, error) {
		return s.store.IncidentObservations(ctx, org, id, p)
	})
}

func (s *Server) incidentNodes(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	servePage(s, w, r, "nodes", "Incident nodes retrieved successfully", func(ctx context.Context, org string, p vigil.Page) ([]vigil.Node, int, error) {
		return s.store.IncidentNodes(ctx, org, id, p)
	})
}

// incidentArtifacts answers as GET /v1/artifacts does: previews, and one
// of the org's search slots held while they are read and written.
func (s *Server) incidentArtifacts(w http.ResponseWriter, r *http.Request) {
	id, err := incidentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := newQuery(r.URL.Query())
	p := q.page()
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	org := principal(r.Context()).OrgID
	if !s.searchSlot(w, r, org) {
		return
	}
	defer s.searches.release(org)
	arts, total, err := s.store.IncidentArtifacts(r.Context(), org, id, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeArtifacts(w, r, arts, total, false, p)
}
