package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vigil-soc/vigil"
)

// IncidentPage is one page of incidents (without their nodes,
// observations and history) and how many there are in all.
type IncidentPage struct {
	Incidents []vigil.Incident `json:"incidents"`
	Total     int              `json:"total"`
	Limit     int              `json:"limit"`
	Offset    int              `json:"offset"`
}

// Incidents returns one page of the org's incidents, limit (1..1000; 0:
// the server's default) from offset.
func (c *Client) Incidents(ctx context.Context, limit, offset int) (*IncidentPage, error) {
	return c.incidents(ctx, "", limit, offset)
}

// IncidentsOfNode returns one page of the org's incidents that name node
// (its id), as Incidents pages them.
func (c *Client) IncidentsOfNode(ctx context.Context, node string, limit, offset int) (*IncidentPage, error) {
	return c.incidents(ctx, node, limit, offset)
}

func (c *Client) incidents(ctx context.Context, node string, limit, offset int) (*IncidentPage, error) {
	v := url.Values{}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if node != "" {
		v.Set("node", node)
	}
	path := "/v1/incidents"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var p IncidentPage
	if err := c.call(ctx, http.MethodGet, path, nil, http.StatusOK, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// NodeID returns the id of the org's node of type typ and value, or ""
// when it has none.
func (c *Client) NodeID(ctx context.Context, typ, value string) (string, error) {
	var p struct {
		Nodes []vigil.Node `json:"nodes"`
	}
	v := url.Values{"type": {typ}, "value": {value}}
	if err := c.call(ctx, http.MethodGet, "/v1/nodes?"+v.Encode(), nil, http.StatusOK, &p); err != nil {
		return "", err
	}
	if len(p.Nodes) == 0 {
		return "", nil
	}
	return p.Nodes[0].ID, nil
}

// Incident returns one incident with its nodes, observations and history.
func (c *Client) Incident(ctx context.Context, id string) (*vigil.Incident, error) {
	var i vigil.Incident
	if err := c.call(ctx, http.MethodGet, "/v1/incidents/"+url.PathEscape(id), nil, http.StatusOK, &i); err != nil {
		return nil, err
	}
	return &i, nil
}

// SetIncidentStatus sets an incident's status (1..5) and returns the
// incident as it is then.
func (c *Client) SetIncidentStatus(ctx context.Context, id string, status int) (*vigil.Incident, error) {
	var i vigil.Incident
	err := c.call(ctx, http.MethodPut, "/v1/incidents/"+url.PathEscape(id)+"/status", map[string]int{"status": status}, http.StatusOK, &i)
	if err != nil {
		return nil, err
	}
	return &i, nil
}
