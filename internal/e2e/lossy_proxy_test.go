package e2e_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// lossyProxy stands between a shipper and Vigil's bulk endpoint, and
// loses replies as a network can: every nth bulk request that Vigil
// answers 200 (its documents taken), up to max of them, is answered by
// closing the connection instead, so that the shipper, which cannot know
// that the batch was stored, sends it again. Everything else is passed
// through as it is.
type lossyProxy struct {
	base     string // the proxy's URL, http://127.0.0.1:port
	target   string // Vigil's URL
	every    int
	max      int
	mu       sync.Mutex
	taken    int          // bulk requests Vigil answered 200
	lost     []*lostBatch // the batches whose reply was lost, in order
	resentCh chan struct{}
}

// lostBatch is the documents of a request whose reply was lost, and those
// of them that Vigil has not yet taken again.
type lostBatch struct {
	docs    int
	pending map[string]int // document line → times not yet seen again
}

// startLossyProxy starts a proxy to target on a port of its own, closed
// when the test ends.
func startLossyProxy(t *testing.T, target string, every, max int) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lp := &lossyProxy{base: "http://" + ln.Addr().String(), target: target, every: every, max: max, resentCh: make(chan struct{}, 1)}
	srv := &http.Server{Handler: lp}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return lp
}

func (lp *lossyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, lp.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	reply, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/_bulk") && resp.StatusCode == http.StatusOK && lp.loses(bulkDocuments(body)) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(reply)
}

// loses notes a bulk request Vigil took, with its document lines, and says
// whether its reply is to be lost.
func (lp *lossyProxy) loses(docs []string) bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	for _, b := range lp.lost {
		was := len(b.pending)
		for _, d := range docs {
			if b.pending[d]--; b.pending[d] <= 0 {
				delete(b.pending, d)
			}
		}
		if was > 0 && len(b.pending) == 0 {
			select {
			case lp.resentCh <- struct{}{}:
			default:
			}
		}
	}
	lp.taken++
	if lp.taken%lp.every != 0 || len(lp.lost) >= lp.max {
		return false
	}
	b := &lostBatch{docs: len(docs), pending: map[string]int{}}
	for _, d := range docs {
		b.pending[d]++
	}
	lp.lost = append(lp.lost, b)
	return true
}

// resent reports how many replies were lost and how many of those batches
// Vigil has since taken again whole (sent again by the shipper, in one
// request or several).
func (lp *lossyProxy) resent() (lost, resent int) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	for _, b := range lp.lost {
		if len(b.pending) == 0 {
			resent++
		}
	}
	return len(lp.lost), resent
}

func (lp *lossyProxy) String() string {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	var parts []string
	for _, b := range lp.lost {
		parts = append(parts, fmt.Sprintf("%d of %d documents not seen again", len(b.pending), b.docs))
	}
	return fmt.Sprintf("%d bulk requests taken, replies lost: %v", lp.taken, parts)
}

// bulkDocuments returns the document lines of a bulk body: every second
// non-empty line, after its action line.
func bulkDocuments(body []byte) []string {
	var docs []string
	n := 0
	for _, l := range strings.Split(string(body), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n%2 == 1 {
			docs = append(docs, l)
		}
		n++
	}
	return docs
}
