package api

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/parse"
)

type observationBody struct {
	Type        *string   `json:"type"`
	Description *string   `json:"description"`
	Severity    *string   `json:"severity"`
	NodeIDs     *[]string `json:"node_ids"`
	ArtifactIDs *[]string `json:"artifact_ids"`
	// Nodes names nodes by type and value, an addition to the contract's
	// fields: they are created when the org has no such node and join
	// node_ids (the response lists them all there).
	Nodes *[]nodeBody `json:"nodes"`
}

// nodeBody is one node named by value.
type nodeBody struct {
	Type  *string `json:"type"`
	Value *string `json:"value"`
}

// namesNodes reports whether the body names the observation's nodes.
func (b *observationBody) namesNodes() bool { return b.NodeIDs != nil || b.Nodes != nil }

// validate checks the fields present; create also requires type and
// description. It returns the nodes named by value, normalized, as keys:
// an analyst naming a node means it to join incidents.
func (b *observationBody) validate(create bool) ([]vigil.NodeRef, error) {
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
	var refs []vigil.NodeRef
	if b.Nodes != nil {
		if len(*b.Nodes) > vigil.MaxNodesPerRequest {
			bad("nodes", fmt.Sprintf("must have at most %d items", vigil.MaxNodesPerRequest))
		} else {
			for i, n := range *b.Nodes {
				field := fmt.Sprintf("nodes[%d]", i)
				switch {
				case n.Type == nil:
					bad(field+".type", "is required")
					continue
				case !vigil.ValidNodeType(*n.Type):
					bad(field+".type", "must be one of IP, Domain, Host, User, Hash, URL")
					continue
				case n.Value == nil:
					bad(field+".value", "is required")
					continue
				}
				v, issue := vigil.NormalizeNodeValue(*n.Type, *n.Value)
				if issue != "" {
					bad(field+".value", issue)
					continue
				}
				refs = append(refs, vigil.NodeRef{Type: *n.Type, Value: v, Key: true})
			}
		}
	}
	if len(issues) > 0 {
		return nil, vigil.Invalid(issues...)
	}
	return vigil.MergeNodeRefs(refs), nil
}

// maxDerivedNodes bounds the nodes an observation takes from its
// artifacts (keys first), so that a finding over thousands of lines does
// not record every address in them.
const maxDerivedNodes = 1000

// artifactNodes returns the entities of the artifacts of org named by
// ids, with the roles a detector gives them (detect.Entities): each
// artifact's stored line parsed again, as the pipeline parsed it. Ids
// naming no artifact of org are skipped here; the store refuses them.
func (s *Server) artifactNodes(ctx context.Context, org string, ids []string) ([]vigil.NodeRef, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	settings, err := s.store.EnrichmentSettings(ctx, org)
	if err != nil {
		return nil, err
	}
	internal := settings.InternalPrefixes()
	ids = vigil.Dedupe(ids)
	var refs []vigil.NodeRef
	// In chunks: a line may be up to 1 MiB.
	const chunk = 100
	for start := 0; start < len(ids); start += chunk {
		arts, err := s.store.GetArtifacts(ctx, org, ids[start:min(start+chunk, len(ids))])
		if err != nil {
			return nil, err
		}
		for _, a := range arts {
			refs = vigil.MergeNodeRefs(refs, entities(a, internal))
		}
	}
	if len(refs) > maxDerivedNodes {
		sort.SliceStable(refs, func(i, j int) bool { return refs[i].Key && !refs[j].Key })
		refs = refs[:maxDerivedNodes]
	}
	return refs, nil
}

// entities parses a stored artifact's line and returns its nodes. A line
// that makes a parser panic names none, as it has no event.
func entities(a *vigil.Artifact, internal []netip.Prefix) (refs []vigil.NodeRef) {
	defer func() {
		if recover() != nil {
			refs = nil
		}
	}()
	return detect.Entities(parse.Parse(a.Source, []byte(a.Raw), a.Timestamp).Event, internal)
}

func (s *Server) createObservation(w http.ResponseWriter, r *http.Request) {
	var b observationBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	named, err := b.validate(true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	org := principal(r.Context()).OrgID
	now := s.now()
	o := &vigil.Observation{
		ID: vigil.NewID(), Type: *b.Type, Description: *b.Description, Severity: vigil.SeverityMedium,
		NodeIDs: []string{}, ArtifactIDs: []string{}, CreatedAt: now, UpdatedAt: now,
		// An analyst's own finding names its incident over a detector's
		// of the same severity.
		Specificity: vigil.SpecificityAnalyst,
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
	// Nodes named through the API are all keys (the analyst chose them);
	// the entities of the artifacts are added with the roles a detector
	// gives them.
	o.KeyNodeIDs = slices.Clone(o.NodeIDs)
	derived, err := s.artifactNodes(r.Context(), org, o.ArtifactIDs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o.Nodes = vigil.MergeNodeRefs(named, derived)
	if err := s.engine.Record(r.Context(), org, o, observationTitle(o)); err != nil {
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
	named, err := b.validate(false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	u := vigil.ObservationUpdate{Type: b.Type, Description: b.Description, Severity: b.Severity, NodeIDs: b.NodeIDs, ArtifactIDs: b.ArtifactIDs}
	org, id := principal(r.Context()).OrgID, r.PathValue("id")
	if b.namesNodes() || b.ArtifactIDs != nil {
		// node_ids and nodes together replace the nodes; the entities of
		// the artifacts (those given, else the current ones) are added
		// again, so that the nodes always include them.
		if b.NodeIDs == nil && b.Nodes != nil {
			u.NodeIDs = &[]string{}
		}
		var artifactIDs []string
		if b.ArtifactIDs != nil {
			artifactIDs = *b.ArtifactIDs
		} else {
			cur, err := s.store.GetObservation(r.Context(), org, id)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			artifactIDs = cur.ArtifactIDs
		}
		derived, err := s.artifactNodes(r.Context(), org, artifactIDs)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		u.Nodes = vigil.MergeNodeRefs(named, derived)
	}
	o, err := s.engine.Update(r.Context(), org, id, u, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Observation updated successfully", o)
}

func (s *Server) deleteObservation(w http.ResponseWriter, r *http.Request) {
	if err := s.engine.Delete(r.Context(), principal(r.Context()).OrgID, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Observation deleted successfully", nil)
}
