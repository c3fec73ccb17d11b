package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// apiError is an error reply of the API, shown to the user as it came:
// its message and the fields it names.
type apiError struct {
	Status  int
	Code    string
	Message string
	Details []fieldIssue
}

type fieldIssue struct {
	Field string `json:"field"`
	Issue string `json:"issue"`
}

func (e *apiError) Error() string { return e.Message }

// Field returns the issue the error names for field, or "".
func (e *apiError) Field(field string) string {
	if e == nil {
		return ""
	}
	var out []string
	for _, d := range e.Details {
		if d.Field == field || strings.HasPrefix(d.Field, field+".") || strings.HasPrefix(d.Field, field+"[") {
			out = append(out, d.Field+": "+d.Issue)
		}
	}
	return strings.Join(out, "; ")
}

// envelope is every reply of the API.
type envelope struct {
	Success bool            `json:"success"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Error   struct {
		Code    string       `json:"code"`
		Details []fieldIssue `json:"details"`
	} `json:"error"`
}

// recorder is the ResponseWriter of an in-process API call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) Flush() {}

// call sends one request to the API as the signed-in user, in-process:
// the API authenticates the token and checks the route's permission as
// for any client. out, when not nil, receives the reply's data; the
// reply's message is returned. A reply of 4xx or 5xx is an *apiError.
func (c *Console) call(r *http.Request, token, method, path string, q url.Values, body, out any) (string, error) {
	if body == nil {
		return c.callRaw(r, token, method, path, q, "", nil, out)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("console: encode %s %s: %w", method, path, err)
	}
	return c.callRaw(r, token, method, path, q, "application/json", b, out)
}

// callRaw is call with a body already encoded, of contentType ("" and
// nil: no body), such as a Sigma rule's YAML.
func (c *Console) callRaw(r *http.Request, token, method, path string, q url.Values, contentType string, body []byte, out any) (string, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	target := path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(r.Context(), method, target, rd)
	if err != nil {
		return "", fmt.Errorf("console: %s %s: %w", method, path, err)
	}
	req.RemoteAddr = r.RemoteAddr
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if id := r.Header.Get("X-Request-ID"); id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	rec := &recorder{header: http.Header{}}
	c.api.ServeHTTP(rec, req)
	var env envelope
	if err := json.Unmarshal(rec.body.Bytes(), &env); err != nil {
		return "", &apiError{Status: rec.status, Code: "internal", Message: fmt.Sprintf("the API answered %s %s with %d and no readable body", method, path, rec.status)}
	}
	if rec.status >= 400 || !env.Success {
		msg := env.Message
		if msg == "" {
			msg = http.StatusText(rec.status)
		}
		return "", &apiError{Status: rec.status, Code: env.Error.Code, Message: msg, Details: env.Error.Details}
	}
	if out != nil && len(env.Data) > 0 {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return "", fmt.Errorf("console: decode %s %s: %w", method, path, err)
		}
	}
	return env.Message, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
