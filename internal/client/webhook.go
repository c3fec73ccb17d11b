package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vigil-soc/vigil"
)

// CreateWebhook subscribes the org to events of types at u and returns
// the subscription's id and signing secret.
func (c *Client) CreateWebhook(ctx context.Context, u string, types []string) (id, secret string, err error) {
	var w struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	err = c.call(ctx, http.MethodPost, "/v1/webhooks", map[string]any{"url": u, "event_types": types}, http.StatusCreated, &w)
	return w.ID, w.Secret, err
}

// WebhookDeliveries counts the deliveries of subscription id by state,
// reading at most max of its delivery log, and returns them with the
// log's total.
func (c *Client) WebhookDeliveries(ctx context.Context, id string, max int) (map[string]int, int, error) {
	states := map[string]int{}
	total := 0
	for offset := 0; offset < max; offset += vigil.MaxLimit {
		var page struct {
			Deliveries []vigil.WebhookDelivery `json:"deliveries"`
			Total      int                     `json:"total"`
		}
		path := "/v1/webhooks/" + url.PathEscape(id) + "/deliveries?limit=" + strconv.Itoa(vigil.MaxLimit) + "&offset=" + strconv.Itoa(offset)
		if err := c.call(ctx, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
			return nil, 0, err
		}
		total = page.Total
		for _, d := range page.Deliveries {
			states[d.State]++
		}
		if len(page.Deliveries) < vigil.MaxLimit {
			break
		}
	}
	return states, total, nil
}
