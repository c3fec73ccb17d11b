package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// newClient returns a client of p's API as the holder of token.
func newClient(p *proc, token string) *client.Client {
	return client.New(p.base, token, &http.Client{
		Timeout:   60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16},
	})
}

// snapshot is every artifact of the org, read page by page.
type snapshot struct {
	total int               // as the API counts them
	rows  int               // as the pages listed them
	count map[string]int    // id → times listed
	raw   map[string]string // id → raw
}

// takeSnapshot pages through the org's artifacts with limit=1000. Pages
// are offsets into a list the workers may still be adding to, so it reads
// again until the total did not change while it paged.
func takeSnapshot(ctx context.Context, c *client.Client) (*snapshot, error) {
	var s *snapshot
	for try := 0; try < 5; try++ {
		s = &snapshot{total: -1, count: map[string]int{}, raw: map[string]string{}}
		for offset := 0; s.total < 0 || offset < s.total; offset += 1000 {
			page, err := c.Artifacts(ctx, client.ArtifactQuery{Limit: 1000, Offset: offset})
			if err != nil {
				return nil, err
			}
			arts := page.Artifacts
			if s.total < 0 {
				s.total = page.Total
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
		after, err := c.ArtifactTotal(ctx)
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
	m, err := client.New(p.metrics, "", nil).Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return m.Sum(name), nil
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
	limited    []client.PostResult // the 429 replies
	unexpected []string            // replies neither 202 nor 429, and transport errors
	posts      int
	cancelled  int // posts cut off by the end of the load's context, answer unknown
}

// flood runs l against c until every client has posted its batches or
// ctx ends. Each raw line carries a token unique to the run, client,
// batch and item. Refused batches are not retried.
func flood(ctx context.Context, c *client.Client, l load) *ledger {
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
				arts := make([]client.NewArtifact, l.size)
				for i := range arts {
					arts[i] = client.NewArtifact{
						Source: "e2e",
						Raw: fmt.Sprintf("vigil-e2e token=%s-c%d-b%d-i%d user=user%d src_ip=10.%d.%d.%d action=login outcome=success %s",
							run, ci, bi, i, i%50, ci, bi%256, i%256, pad),
						Timestamp: ts.Add(time.Duration(bi*l.size+i) * time.Millisecond).Format(time.RFC3339Nano),
						Metadata:  map[string]any{"client": ci, "batch": bi},
					}
				}
				r, err := c.PostArtifacts(ctx, arts)
				lg.record(arts, r, err, ctx.Err() != nil)
			}
		}()
	}
	wg.Wait()
	return lg
}

func (lg *ledger) record(arts []client.NewArtifact, r client.PostResult, err error, cancelled bool) {
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
