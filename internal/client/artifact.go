package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// NewArtifact is one item of POST /v1/artifacts.
type NewArtifact struct {
	Source string `json:"source"`
	Raw    string `json:"raw"`
	// Timestamp is RFC 3339; empty lets the server keep the event time it
	// parses from Raw, else the time of receipt.
	Timestamp string         `json:"timestamp,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// PostResult is what POST /v1/artifacts answered. Every status is a
// result, not an error: a 429 or a 413 is an answer the caller acts on.
type PostResult struct {
	Status int
	Header http.Header
	// RetryAfter is the wait a 429 or 503 asks for: its Retry-After
	// header, or 1 s when it has none or an unreadable one; 0 for other
	// statuses.
	RetryAfter time.Duration

	// Of a 2xx: the items taken, refused, the ids of those taken (in the
	// order posted), and why each refused one was.
	Accepted int
	Rejected int
	IDs      []string
	Errors   []ItemError
	// Warnings name the accepted items' fields stored altered (invalid
	// UTF-8 replaced by U+FFFD).
	Warnings []ItemWarning

	// Of an error envelope.
	Code    string
	Message string
	Details []FieldIssue

	Body string // the start of the body, for messages
}

// ItemError is why one item of an accepted batch was refused.
type ItemError struct {
	Index  int    `json:"index"`
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// ItemWarning says that a field of an accepted item was stored altered.
type ItemWarning struct {
	Index int    `json:"index"`
	Field string `json:"field"`
	Issue string `json:"issue"`
}

// PostArtifacts posts one batch.
func (c *Client) PostArtifacts(ctx context.Context, arts []NewArtifact) (PostResult, error) {
	body, err := json.Marshal(map[string]any{"artifacts": arts})
	if err != nil {
		return PostResult{}, fmt.Errorf("POST /v1/artifacts: %w", err)
	}
	return c.PostArtifactsJSON(ctx, body)
}

// PostArtifactsJSON posts a batch already encoded as the request body
// ({"artifacts":[…]}), for callers that encode once and post many times.
// The error is of the exchange (transport, or a 2xx whose body is not the
// API's); a non-JSON body with another status is a result with no Code.
func (c *Client) PostArtifactsJSON(ctx context.Context, body []byte) (PostResult, error) {
	r, err := c.send(ctx, http.MethodPost, "/v1/artifacts", body, true)
	if err != nil {
		return PostResult{}, err
	}
	res := PostResult{Status: r.status, Header: r.header, Body: quote(r.body)}
	if r.status == http.StatusTooManyRequests || r.status == http.StatusServiceUnavailable {
		res.RetryAfter = retryAfter(r.header.Get("Retry-After"), time.Now())
	}
	var env envelope
	if err := json.Unmarshal(r.body, &env); err != nil {
		if r.status/100 == 2 {
			return res, fmt.Errorf("POST /v1/artifacts: reply: %w", err)
		}
		return res, nil
	}
	res.Code, res.Message, res.Details = env.Error.Code, env.Message, env.Error.Details
	if r.status/100 != 2 {
		return res, nil
	}
	var data struct {
		Accepted int           `json:"accepted"`
		Rejected int           `json:"rejected"`
		IDs      []string      `json:"ids"`
		Errors   []ItemError   `json:"errors"`
		Warnings []ItemWarning `json:"warnings"`
	}
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return res, fmt.Errorf("POST /v1/artifacts: reply data: %w", err)
	}
	res.Accepted, res.Rejected, res.IDs, res.Errors, res.Warnings = data.Accepted, data.Rejected, data.IDs, data.Errors, data.Warnings
	return res, nil
}

// retryAfter reads a Retry-After header (seconds or an HTTP date, as of
// now); 1 s when absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return time.Second
}

// ArtifactQuery selects artifacts: a full-text query, a source, a time
// range [Start, End) on their timestamps, and a page. Zero fields are
// left out (the server's defaults: everything, 50 from the newest).
type ArtifactQuery struct {
	Query, Source string
	Start, End    time.Time
	Limit, Offset int
}

// Values is the query string of q, as GET /v1/artifacts reads it.
func (q ArtifactQuery) Values() url.Values {
	v := url.Values{}
	if q.Query != "" {
		v.Set("query", q.Query)
	}
	if q.Source != "" {
		v.Set("source", q.Source)
	}
	if !q.Start.IsZero() {
		v.Set("start", q.Start.UTC().Format(time.RFC3339Nano))
	}
	if !q.End.IsZero() {
		v.Set("end", q.End.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	return v
}

// ArtifactPage is one page of artifacts, newest first, and how many match
// in all.
type ArtifactPage struct {
	Artifacts []vigil.Artifact `json:"artifacts"`
	Total     int              `json:"total"`
	// TotalEstimated: Total is an estimate (more than the server counts
	// exactly), not a count.
	TotalEstimated bool `json:"total_estimated"`
	Limit          int  `json:"limit"`
	Offset         int  `json:"offset"`
}

// Artifacts returns one page of the org's artifacts matching q.
func (c *Client) Artifacts(ctx context.Context, q ArtifactQuery) (*ArtifactPage, error) {
	path := "/v1/artifacts"
	if v := q.Values().Encode(); v != "" {
		path += "?" + v
	}
	var p ArtifactPage
	if err := c.call(ctx, http.MethodGet, path, nil, http.StatusOK, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ArtifactTotal returns how many artifacts the org has stored (and made
// searchable).
func (c *Client) ArtifactTotal(ctx context.Context) (int, error) {
	p, err := c.Artifacts(ctx, ArtifactQuery{Limit: 1})
	if err != nil {
		return 0, err
	}
	return p.Total, nil
}
