package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/vigil-soc/vigil"
)

// The incident page: what the incident is, its observations, nodes,
// graph and artifacts, and its status.

func (c *Console) incidentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /incidents/{id}", c.authed(vigil.PermIncidentsRead, c.incident))
	mux.HandleFunc("POST /incidents/{id}/status", c.authed(vigil.PermIncidentsWrite, c.incidentStatus))
}

// sectionSize is how many observations, nodes and artifacts a section of
// the incident page shows at a time; each section pages on its own.
const sectionSize = 50

// The form values that hold each section's offset.
const (
	obsOffset      = "observations_offset"
	nodesOffset    = "nodes_offset"
	artifactOffset = "artifacts_offset"
)

type nodeGroup struct {
	Type  string
	Nodes []nodeView
}

type nodeView struct {
	vigil.Node
	Info *nodeInfo
}

type incidentView struct {
	Inc          vigil.Incident
	Observations []vigil.Observation
	ObsPage      pager
	Groups       []nodeGroup
	NodePage     pager
	Artifacts    []artifactView
	ArtPage      pager
	Graph        graph
	Statuses     []int // the statuses it may be moved to
	Case         caseView
	// Rollup, on a roll-up: a page of its sources; Raised, on an
	// incident an entity's risk set apart: why.
	Rollup *rollupView
	Raised *raisedView
	// What the token may not read, said instead of an empty section.
	NoObservations, NoArtifacts bool
}

// nodeTypes orders the node groups.
var nodeTypes = []string{"IP", "Domain", "Host", "User", "URL", "Hash"}

// list is a page of a list the API returns: its items under the JSON
// name of the list, in Items.
type list[T any] struct {
	Items         []T
	Total, Offset int
}

// get reads a page of the list at path, whose items are named name in
// the reply, at the offset the form value param holds.
func (l *list[T]) get(c *Console, r *http.Request, s *session, path, name, param string) error {
	q := url.Values{"limit": {strconv.Itoa(sectionSize)}}
	if off := offsetParam(r.URL.Query(), param); off > 0 {
		q.Set("offset", strconv.Itoa(off))
	}
	var raw map[string]json.RawMessage
	if _, err := c.call(r, s.token, "GET", path, q, nil, &raw); err != nil {
		return err
	}
	for key, into := range map[string]any{name: &l.Items, "total": &l.Total, "offset": &l.Offset} {
		if err := json.Unmarshal(raw[key], into); err != nil {
			return fmt.Errorf("console: decode %s of %s: %w", key, path, err)
		}
	}
	return nil
}

func (c *Console) incident(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	base := "/v1/incidents/" + url.PathEscape(id)
	var v incidentView
	if _, err := c.call(r, s.token, "GET", base, nil, nil, &v.Inc); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	// A merged incident has left the queue: its observations, nodes and
	// artifacts are the other's now, and so is its page (a chain of
	// merges is followed one redirect at a time).
	if to := v.Inc.MergedInto; to != nil && vigil.ValidID(*to) {
		http.Redirect(w, r, "/incidents/"+url.PathEscape(*to)+"?merged_from="+url.QueryEscape(v.Inc.ID), http.StatusFound)
		return
	}
	p := page{Title: v.Inc.Title, Nav: "queue"}
	// Each section's pager keeps the other sections where they are, and
	// drops the flash of what was just done.
	form := without(r.URL.Query(), "changed", "saved")
	here := "/incidents/" + url.PathEscape(id)
	// fail records the first error of a section, unless the session
	// expired (true: the user was sent to sign in).
	fail := func(err error) bool {
		if c.expired(w, r, err) {
			return true
		}
		if p.Err == nil {
			p.Err = err
		}
		return false
	}

	// Observations, whole (their nodes and artifacts), when the token may
	// read them; else the short forms the incident carries.
	v.NoObservations = !s.Can(vigil.PermObservationsRead)
	var obs list[vigil.Observation]
	if v.NoObservations {
		off := min(offsetParam(form, obsOffset), len(v.Inc.Observations))
		for _, ref := range v.Inc.Observations[off:min(off+sectionSize, len(v.Inc.Observations))] {
			obs.Items = append(obs.Items, vigil.Observation{ID: ref.ID, Type: ref.Type, Description: ref.Description, Severity: ref.Severity})
		}
		obs.Total, obs.Offset = len(v.Inc.Observations), off
	} else if err := obs.get(c, r, s, base+"/observations", "observations", obsOffset); err != nil && fail(err) {
		return
	}
	v.Observations = obs.Items
	v.ObsPage = sectionPager(here, "observations", obsOffset, inOrder, form, obs.Total, obs.Offset, sectionSize)

	// The artifacts, newest first, when the token may read signals.
	v.NoArtifacts = !s.Can(vigil.PermSignalsRead)
	info := map[string]*nodeInfo{}
	if !v.NoArtifacts {
		var arts list[*vigil.Artifact]
		if err := arts.get(c, r, s, base+"/artifacts", "artifacts", artifactOffset); err != nil && fail(err) {
			return
		}
		for _, a := range arts.Items {
			v.Artifacts = append(v.Artifacts, newArtifactView(a, nil))
			mergeInfo(info, a.Enrichment)
		}
		v.ArtPage = sectionPager(here, "artifacts", artifactOffset, newestFirst, form, arts.Total, arts.Offset, sectionSize)
	}

	// The nodes, by type, key nodes first in each type, with what
	// enrichment found about them in the artifacts shown.
	var nodes list[vigil.Node]
	if err := nodes.get(c, r, s, base+"/nodes", "nodes", nodesOffset); err != nil && fail(err) {
		return
	}
	v.NodePage = sectionPager(here, "nodes", nodesOffset, inOrder, form, nodes.Total, nodes.Offset, sectionSize)
	byType := map[string][]nodeView{}
	for _, n := range nodes.Items {
		byType[n.Type] = append(byType[n.Type], nodeView{Node: n, Info: info[n.Value]})
	}
	for _, t := range nodeTypes {
		if ns := byType[t]; len(ns) > 0 {
			// Key nodes first: they are what the incident is about.
			sort.SliceStable(ns, func(i, j int) bool { return isKey(ns[i].Node) && !isKey(ns[j].Node) })
			v.Groups = append(v.Groups, nodeGroup{Type: t, Nodes: ns})
		}
	}
	v.Graph = newGraph(v.Inc.Nodes, v.Observations)
	if v.Inc.Rollup != nil {
		rv, err := c.loadRollup(r, s, base, here, form)
		if err != nil && fail(err) {
			return
		}
		v.Rollup = rv
	}
	if v.Inc.RaisedBy != nil {
		v.Raised = c.loadRaised(r, s, v.Inc.RaisedBy)
	}
	if p.Err == nil {
		cv, err := c.loadCase(r, s, id)
		if c.expired(w, r, err) {
			return
		}
		v.Case, p.Err = cv, err
	}
	for _, st := range []int{vigil.StatusNew, vigil.StatusInvestigating, vigil.StatusResolved, vigil.StatusClosed, vigil.StatusDisrupted} {
		if st != v.Inc.Status {
			v.Statuses = append(v.Statuses, st)
		}
	}
	if from := r.URL.Query().Get("merged_from"); vigil.ValidID(from) {
		p.Flash = "Incident " + from + " was merged into this one: its observations, nodes and artifacts are here."
	}
	if r.URL.Query().Get("changed") == "1" {
		p.Flash = "Status changed to " + v.Inc.StatusName + "."
	}
	switch r.URL.Query().Get("saved") {
	case "case":
		p.Flash = "Assignee and tags saved."
	case "comment":
		p.Flash = "Comment added."
	case "deleted":
		p.Flash = "Comment deleted."
	}
	p.Data = v
	c.render(w, r, http.StatusOK, "incident", p)
}

func isKey(n vigil.Node) bool { return n.Key != nil && *n.Key }

func (c *Console) incidentStatus(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	st, err := strconv.Atoi(r.PostFormValue("status"))
	if err != nil || !vigil.ValidStatus(st) {
		c.renderError(w, r, s, http.StatusBadRequest, "Choose a status from 1 to 5.")
		return
	}
	if _, err := c.call(r, s.token, "PUT", "/v1/incidents/"+url.PathEscape(id)+"/status", nil, map[string]int{"status": st}, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/incidents/"+url.PathEscape(id)+"?changed=1", http.StatusSeeOther)
}

// nodeInfo is what enrichment found about one value: the part the page
// shows beside an address.
type nodeInfo struct {
	Geo *struct {
		Country string `json:"country_iso_code"`
		City    string `json:"city_name"`
	} `json:"geo"`
	ASN *struct {
		Number       uint   `json:"number"`
		Organization string `json:"organization"`
	} `json:"asn"`
	Intel []struct {
		Feed      string `json:"feed"`
		Indicator string `json:"indicator"`
	} `json:"intel"`
}

// mergeInfo adds an artifact's enrichment (value → what was found) to
// info; the first found of each value is kept.
func mergeInfo(info map[string]*nodeInfo, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var m map[string]*nodeInfo
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	for k, v := range m {
		if v == nil {
			continue
		}
		if cur := info[k]; cur == nil {
			info[k] = v
		} else if len(cur.Intel) == 0 && len(v.Intel) > 0 {
			cur.Intel = v.Intel
		}
	}
}
