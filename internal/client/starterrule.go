package client

import (
	"context"
	"net/http"
	"net/url"
)

// StarterRule is a starter Sigma rule as the org has it (the fields a
// client needs of GET /v1/starter-rules).
type StarterRule struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Kind    string `json:"kind"`
	Enabled bool   `json:"enabled"`
}

// StarterRules returns every starter rule, enabled as the org has it.
func (c *Client) StarterRules(ctx context.Context) ([]StarterRule, error) {
	var p struct {
		Rules []StarterRule `json:"starter_rules"`
	}
	if err := c.call(ctx, http.MethodGet, "/v1/starter-rules?limit=1000", nil, http.StatusOK, &p); err != nil {
		return nil, err
	}
	return p.Rules, nil
}

// SetStarterRule turns a starter rule on or off for the org.
func (c *Client) SetStarterRule(ctx context.Context, id string, enabled bool) error {
	action := "/disable"
	if enabled {
		action = "/enable"
	}
	return c.call(ctx, http.MethodPost, "/v1/starter-rules/"+url.PathEscape(id)+action, nil, http.StatusOK, nil)
}
