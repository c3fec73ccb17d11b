package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
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

// Bounds of one incident page: each observation and artifact is one API
// call; the page says when it shows only part.
const (
	pageObservations = 50
	pageArtifacts    = 50
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
	MoreObs      int
	Groups       []nodeGroup
	Artifacts    []artifactView
	ArtifactIDs  int // distinct artifacts of the observations
	Graph        graph
	Statuses     []int // the statuses it may be moved to
	Case         caseView
	// What the token may not read, said instead of an empty section.
	NoObservations, NoArtifacts bool
}

// nodeTypes orders the node groups.
var nodeTypes = []string{"IP", "Domain", "Host", "User", "URL", "Hash"}

func (c *Console) incident(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	var v incidentView
	if _, err := c.call(r, s.token, "GET", "/v1/incidents/"+url.PathEscape(id), nil, nil, &v.Inc); err != nil {
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
	// Observations, whole (their nodes and artifacts), when the token may
	// read them.
	obsRead := s.Can(vigil.PermObservationsRead)
	v.NoObservations = !obsRead
	for i, ref := range v.Inc.Observations {
		if !obsRead {
			break
		}
		if i == pageObservations {
			v.MoreObs = len(v.Inc.Observations) - i
			break
		}
		var o vigil.Observation
		if _, err := c.call(r, s.token, "GET", "/v1/observations/"+url.PathEscape(ref.ID), nil, nil, &o); err != nil {
			if c.expired(w, r, err) {
				return
			}
			p.Err = err
			break
		}
		v.Observations = append(v.Observations, o)
	}
	if !obsRead { // the refs the incident carries
		for _, ref := range v.Inc.Observations {
			v.Observations = append(v.Observations, vigil.Observation{ID: ref.ID, Type: ref.Type, Description: ref.Description, Severity: ref.Severity})
		}
	}
	// The artifacts, newest first, when the token may read signals.
	var artIDs []string
	seen := map[string]bool{}
	for _, o := range v.Observations {
		for _, a := range o.ArtifactIDs {
			if !seen[a] {
				seen[a] = true
				artIDs = append(artIDs, a)
			}
		}
	}
	v.ArtifactIDs = len(artIDs)
	v.NoArtifacts = !s.Can(vigil.PermSignalsRead)
	info := map[string]*nodeInfo{}
	if !v.NoArtifacts && p.Err == nil {
		// Artifact ids are time-ordered (UUIDv7): the newest are last.
		slices.Sort(artIDs)
		slices.Reverse(artIDs)
		for _, a := range artIDs[:min(len(artIDs), pageArtifacts)] {
			var art vigil.Artifact
			if _, err := c.call(r, s.token, "GET", "/v1/artifacts/"+url.PathEscape(a), nil, nil, &art); err != nil {
				if c.expired(w, r, err) {
					return
				}
				var ae *apiError
				if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
					continue // dropped by retention
				}
				p.Err = err
				break
			}
			av := newArtifactView(&art, nil)
			v.Artifacts = append(v.Artifacts, av)
			mergeInfo(info, art.Enrichment)
		}
		sort.SliceStable(v.Artifacts, func(i, j int) bool { return v.Artifacts[i].Timestamp.After(v.Artifacts[j].Timestamp) })
	}
	byType := map[string][]nodeView{}
	for _, n := range v.Inc.Nodes {
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
