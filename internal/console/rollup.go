package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/vigil-soc/vigil"
)

// What the incident page says of roll-ups (docs/detections.md, "Roll-ups
// and entity risk"): a roll-up's sources, heaviest first with their
// counts, a page at a time, and its window; on an incident an entity's
// risk set apart, why, and the roll-ups it left.

// srcOffset is the form value that holds the offset of a roll-up's
// sources.
const srcOffset = "sources_offset"

// maxRaisedLinks bounds the roll-ups an incident's page names by title
// (one API call each); the rest are named by id.
const maxRaisedLinks = 10

// rollupView is a roll-up's part of its incident page.
type rollupView struct {
	Sources []vigil.RollupSource
	Page    pager
}

// raisedView is why an incident stands apart from the roll-ups.
type raisedView struct {
	*vigil.RaisedBy
	// Left are the roll-ups its entity's observations left, with their
	// titles when read.
	Left []incidentLink
}

type incidentLink struct{ ID, Title string }

// loadRollup reads a page of roll-up id's sources (base is its API path),
// heaviest first.
func (c *Console) loadRollup(r *http.Request, s *session, base, here string, form url.Values) (*rollupView, error) {
	var srcs list[vigil.RollupSource]
	if err := srcs.get(c, r, s, base+"/sources", "sources", srcOffset); err != nil {
		return nil, err
	}
	return &rollupView{Sources: srcs.Items,
		Page: sectionPager(here, "sources", srcOffset, heaviestFirst, form, srcs.Total, srcs.Offset, sectionSize)}, nil
}

// heaviestFirst names the pages of a roll-up's sources.
var heaviestFirst = pagerWords{"Heaviest", "Heavier", "Lighter", "Lightest"}

// loadRaised names the roll-ups by reads the titles of (the first
// maxRaisedLinks): a roll-up closed or gone since is named by its id.
func (c *Console) loadRaised(r *http.Request, s *session, by *vigil.RaisedBy) *raisedView {
	v := &raisedView{RaisedBy: by}
	for k, id := range by.Rollups {
		l := incidentLink{ID: id}
		if k < maxRaisedLinks && vigil.ValidID(id) {
			var inc vigil.Incident
			if _, err := c.call(r, s.token, "GET", "/v1/incidents/"+url.PathEscape(id), nil, nil, &inc); err == nil {
				l.Title = inc.Title
			}
		}
		v.Left = append(v.Left, l)
	}
	return v
}

// Why says in words what raised the incident.
func (v *raisedView) Why() string {
	e := v.Entity.Type + " " + v.Entity.Value
	if v.Reason == vigil.RaisedDetections {
		return e + " was seen by " + vigil.Thousands(len(v.Detections)) + " different detections within 24 h (the org sets apart a source seen by " +
			vigil.Thousands(v.DetectionsThreshold) + "): " + strings.Join(v.Detections, ", ")
	}
	return e + " reached a risk of " + vigil.Thousands(v.Risk) + " within 24 h (the org's threshold: " + vigil.Thousands(v.RiskThreshold) + ")"
}
