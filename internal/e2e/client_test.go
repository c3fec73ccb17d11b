package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// client speaks the HTTP API of one child as one org.
type client struct {
	base  string
	token string
	hc    *http.Client
}

func newClient(p *proc, token string) *client {
	return &client{base: p.base, token: token, hc: &http.Client{
		Timeout:   60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16},
	}}
}

// artifactIn is one item of POST /v1/artifacts.
type artifactIn struct {
	Source    string         `json:"source"`
	Raw       string         `json:"raw"`
	Timestamp string         `json:"timestamp,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// postResult is what a POST /v1/artifacts answered.
type postResult struct {
	Status     int
	RetryAfter string
	Code       string // error.code of an error envelope
	Accepted   int
	IDs        []string
	Body       string // the start of the body, for messages
}

func (c *client) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func (c *client) post(ctx context.Context, arts []artifactIn) (postResult, error) {
	body, err := json.Marshal(map[string]any{"artifacts": arts})
	if err != nil {
		return postResult{}, err
	}
	resp, b, err := c.do(ctx, "POST", "/v1/artifacts", bytes.NewReader(body))
	if err != nil {
		return postResult{}, err
	}
	r := postResult{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Body: string(b[:min(len(b), 300)])}
	var env struct {
		Success bool `json:"success"`
		Data    struct {
			Accepted int      `json:"accepted"`
			IDs      []string `json:"ids"`
		} `json:"data"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return r, fmt.Errorf("POST /v1/artifacts: status %d, body not JSON: %v: %s", r.Status, err, r.Body)
	}
	r.Code, r.Accepted, r.IDs = env.Error.Code, env.Data.Accepted, env.Data.IDs
	return r, nil
}

// storedArtifact is an artifact as GET /v1/artifacts shows it.
type storedArtifact struct {
	ID  string `json:"id"`
	Raw string `json:"raw"`
}

// page returns one page of the org's artifacts and the total.
func (c *client) page(ctx context.Context, limit, offset int) ([]storedArtifact, int, error) {
	resp, b, err := c.do(ctx, "GET", fmt.Sprintf("/v1/artifacts?limit=%d&offset=%d", limit, offset), nil)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET /v1/artifacts: status %d: %.300s", resp.StatusCode, b)
	}
	var env struct {
		Data struct {
			Artifacts []storedArtifact `json:"artifacts"`
			Total     int              `json:"total"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, 0, fmt.Errorf("GET /v1/artifacts: %v", err)
	}
	return env.Data.Artifacts, env.Data.Total, nil
}

// total returns how many artifacts the org has.
func (c *client) total(ctx context.Context) (int, error) {
	_, n, err := c.page(ctx, 1, 0)
	return n, err
}

// snapshot is every artifact of the org, read page by page.
type snapshot struct {
	total int               // as the API counts them
	rows  int               // as the pages listed them
	count map[string]int    // id → times listed
	raw   map[string]string // id → raw
}

// snapshot pages through the org's artifacts with limit=1000. Pages are
// offsets into a list the workers may still be adding to, so it reads
// again until the total did not change while it paged.
func (c *client) snapshot(ctx context.Context) (*snapshot, error) {
	var s *snapshot
	for try := 0; try < 5; try++ {
		s = &snapshot{total: -1, count: map[string]int{}, raw: map[string]string{}}
		for offset := 0; s.total < 0 || offset < s.total; offset += 1000 {
			arts, total, err := c.page(ctx, 1000, offset)
			if err != nil {
				return nil, err
			}
			if s.total < 0 {
				s.total = total
			}
			for _, a := range arts {
				s.rows++
				s.count[a.ID]++
				s.raw[a.ID] = a.Raw
			}
			if len(arts) < 1000 {
				break
			}
		}
		after, err := c.total(ctx)
		if err != nil {
			return nil, err
		}
		if after == s.total {
			return s, nil
		}
	}
	return s, fmt.Errorf("the artifact count kept changing while paging (last %d)", s.total)
}

// missing returns the acknowledged ids not listed.
func (s *snapshot) missing(acked map[string]string) int {
	n := 0
	for id := range acked {
		if s.count[id] == 0 {
			n++
		}
	}
	return n
}

// duplicates returns how many listed rows repeat an id.
func (s *snapshot) duplicates() int { return s.rows - len(s.count) }

// metric returns the sum of every series of a Prometheus metric on p.
func metric(ctx context.Context, p *proc, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", p.base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// load is a set of concurrent clients posting batches.
type load struct {
	clients int // concurrent clients
	batches int // batches per client
	size    int // artifacts per batch
	pad     int // extra bytes per raw line
}

// ledger records what the server answered to a load.
type ledger struct {
	mu         sync.Mutex
	acked      map[string]string // id → raw of every artifact a 2xx accepted
	statuses   map[int]int
	limited    []postResult // the 429 replies
	unexpected []string     // replies neither 202 nor 429, and transport errors
	posts      int
	cancelled  int // posts cut off by the end of the load's context, answer unknown
}

// flood runs l against c until every client has posted its batches or
// ctx ends. Each raw line carries a token unique to the run, client,
// batch and item. Refused batches are not retried.
func flood(ctx context.Context, c *client, l load) *ledger {
	var b [6]byte
	rand.Read(b[:])
	run := hex.EncodeToString(b[:])
	pad := strings.Repeat("p", l.pad)
	lg := &ledger{acked: map[string]string{}, statuses: map[int]int{}}
	var wg sync.WaitGroup
	for ci := 0; ci < l.clients; ci++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := time.Now().UTC()
			for bi := 0; bi < l.batches && ctx.Err() == nil; bi++ {
				arts := make([]artifactIn, l.size)
				for i := range arts {
					arts[i] = artifactIn{
						Source: "e2e",
						Raw: fmt.Sprintf("vigil-e2e token=%s-c%d-b%d-i%d user=user%d src_ip=10.%d.%d.%d action=login outcome=success %s",
							run, ci, bi, i, i%50, ci, bi%256, i%256, pad),
						Timestamp: ts.Add(time.Duration(bi*l.size+i) * time.Millisecond).Format(time.RFC3339Nano),
						Metadata:  map[string]any{"client": ci, "batch": bi},
					}
				}
				r, err := c.post(ctx, arts)
				lg.record(arts, r, err, ctx.Err() != nil)
			}
		}()
	}
	wg.Wait()
	return lg
}

func (lg *ledger) record(arts []artifactIn, r postResult, err error, cancelled bool) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.posts++
	switch {
	case err != nil && cancelled:
		lg.cancelled++
	case err != nil:
		lg.unexpected = append(lg.unexpected, err.Error())
	case r.Status == http.StatusAccepted:
		lg.statuses[r.Status]++
		if r.Accepted != len(arts) || len(r.IDs) != len(arts) {
			lg.unexpected = append(lg.unexpected, fmt.Sprintf("202 accepted %d, %d ids, of %d: %s", r.Accepted, len(r.IDs), len(arts), r.Body))
			return
		}
		for i, id := range r.IDs {
			lg.acked[id] = arts[i].Raw
		}
	case r.Status == http.StatusTooManyRequests:
		lg.statuses[r.Status]++
		lg.limited = append(lg.limited, r)
	default:
		lg.statuses[r.Status]++
		lg.unexpected = append(lg.unexpected, fmt.Sprintf("status %d: %s", r.Status, r.Body))
	}
}
