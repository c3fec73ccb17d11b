// Package client is a typed Go client of Vigil's HTTP API, for the
// programs and tests that talk to a server from outside: the load tool
// (vigil bench) and the end-to-end tests. It covers what they use: posting
// artifacts, listing and searching them page by page, incidents, the
// readiness probe and the Prometheus /metrics scrape.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client speaks the API of one server as the holder of one token.
type Client struct {
	base  string
	token string
	hc    *http.Client

	metricsBase, metricsToken string // of Metrics
}

// New returns a client of the server at baseURL (http://host:port) that
// sends token as its bearer token. hc carries the requests; nil means a
// client with a 60 s timeout.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	base := strings.TrimRight(baseURL, "/")
	return &Client{base: base, token: token, hc: hc, metricsBase: base}
}

// WithMetrics returns a copy of c whose Metrics scrape baseURL (the
// server's --metrics-addr, when /metrics is not on the API's address)
// with token as the bearer token (--metrics-token; "" for none).
func (c *Client) WithMetrics(baseURL, token string) *Client {
	d := *c
	d.metricsBase, d.metricsToken = strings.TrimRight(baseURL, "/"), token
	return &d
}

// MetricsURL is where Metrics scrape.
func (c *Client) MetricsURL() string { return c.metricsBase + "/metrics" }

// BaseURL is the server's address, as given to New without a trailing
// slash.
func (c *Client) BaseURL() string { return c.base }

// Error is a reply other than the success the call expects: its status
// and what its error envelope says.
type Error struct {
	Method, Path string
	Status       int
	Code         string       // error.code of the envelope; "" if the body is not one
	Message      string       // message of the envelope
	Details      []FieldIssue // error.details of the envelope
	Body         string       // the start of the body
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Body)
}

// envelope is every JSON reply of the API.
type envelope struct {
	Success bool            `json:"success"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Error   struct {
		Code    string       `json:"code"`
		Details []FieldIssue `json:"details"`
	} `json:"error"`
}

// FieldIssue names one problem with one field of a request.
type FieldIssue struct {
	Field string `json:"field"`
	Issue string `json:"issue"`
}

// bodyStart is how much of a body errors and results quote.
const bodyStart = 300

// reply is one HTTP exchange, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send makes one request; token says whether it carries the bearer token
// (the probes and /metrics need none).
func (c *Client) send(ctx context.Context, method, path string, body []byte, token bool) (*reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err // a *url.Error: it names the method and the URL
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read reply: %w", method, path, err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// call makes an authenticated request with a JSON body (if in is not nil)
// and, when the status is want, decodes the envelope's data into out (if
// not nil). Any other status is an *Error.
func (c *Client) call(ctx context.Context, method, path string, in any, want int, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	r, err := c.send(ctx, method, path, body, true)
	if err != nil {
		return err
	}
	if r.status != want {
		return replyError(method, path, r)
	}
	if out == nil {
		return nil
	}
	var env envelope
	if err := json.Unmarshal(r.body, &env); err != nil {
		return fmt.Errorf("%s %s: reply: %w", method, path, err)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%s %s: reply data: %w", method, path, err)
	}
	return nil
}

// replyError describes an unexpected reply.
func replyError(method, path string, r *reply) *Error {
	e := &Error{Method: method, Path: path, Status: r.status, Body: quote(r.body)}
	var env envelope
	if json.Unmarshal(r.body, &env) == nil {
		e.Code, e.Message, e.Details = env.Error.Code, env.Message, env.Error.Details
	}
	return e
}

func quote(body []byte) string { return string(body[:min(len(body), bodyStart)]) }

// Ready asks GET /readyz whether the server can take work. It returns
// each check's state: all "ok" with a nil error when the server answers
// 200; when it answers 503, the failed checks with why each failed, and
// an *Error whose Message names the first.
func (c *Client) Ready(ctx context.Context) (map[string]string, error) {
	r, err := c.send(ctx, http.MethodGet, "/readyz", nil, false)
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		e := replyError(http.MethodGet, "/readyz", r)
		checks := map[string]string{}
		for _, d := range e.Details {
			checks[d.Field] = d.Issue
		}
		return checks, e
	}
	var env envelope
	checks := map[string]string{}
	if err := json.Unmarshal(r.body, &env); err != nil {
		return nil, fmt.Errorf("GET /readyz: reply: %w", err)
	}
	if err := json.Unmarshal(env.Data, &checks); err != nil {
		return nil, fmt.Errorf("GET /readyz: reply data: %w", err)
	}
	return checks, nil
}
