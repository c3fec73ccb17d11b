package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// PostElasticBulk posts an Elasticsearch bulk request body (NDJSON, already
// encoded) to the bulk endpoint, /v1/ingest/elastic/_bulk. Accepted counts
// the items answered 2xx, Rejected the others; a 429 or 503 of the whole
// request carries its Retry-After. The error is of the exchange
// (transport, or a 200 whose body is not a bulk response).
func (c *Client) PostElasticBulk(ctx context.Context, body []byte) (PostResult, error) {
	const path = "/v1/ingest/elastic/_bulk"
	r, err := c.send(ctx, http.MethodPost, path, body, true)
	if err != nil {
		return PostResult{}, err
	}
	res := PostResult{Status: r.status, Header: r.header, Body: quote(r.body)}
	if r.status == http.StatusTooManyRequests || r.status == http.StatusServiceUnavailable {
		res.RetryAfter = retryAfter(r.header.Get("Retry-After"), time.Now())
	}
	if r.status != http.StatusOK {
		return res, nil
	}
	var bulk struct {
		Items []map[string]struct {
			Status int `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.body, &bulk); err != nil {
		return res, fmt.Errorf("POST %s: reply: %w", path, err)
	}
	for _, it := range bulk.Items {
		for _, v := range it {
			if v.Status/100 == 2 {
				res.Accepted++
			} else {
				res.Rejected++
			}
		}
	}
	return res, nil
}
