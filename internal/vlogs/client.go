package vlogs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
)

// Cluster is the VictoriaLogs cluster artifacts live in: the front
// (victoria-logs started with -storageNode=…) that answers queries over
// every storage node, and the storage nodes themselves, which Vigil writes
// to directly so that it can make each write durable on the node that
// took it before acknowledging it (see Store).
type Cluster struct {
	front   *url.URL
	storage []*node
	http    *http.Client
	next    atomic.Uint32 // round robin over storage nodes
}

// node is one storage node with its group commit.
type node struct {
	url  *url.URL
	sync *syncer
}

// ParseURLs validates the front's URL and the storage nodes' (a
// comma-separated list) and returns the cluster they name. Errors name
// the flag and never show a password of a URL.
func ParseURLs(front, storage string) (*Cluster, error) {
	f, err := parseURL("--artifacts-url", front)
	if err != nil {
		return nil, err
	}
	c := &Cluster{front: f, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: time.Minute}}}
	for s := range strings.SplitSeq(storage, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		u, err := parseURL("--artifacts-storage", s)
		if err != nil {
			return nil, err
		}
		n := &node{url: u}
		n.sync = newSyncer(c, n)
		c.storage = append(c.storage, n)
	}
	if len(c.storage) == 0 {
		return nil, errors.New("--artifacts-storage must list the VictoriaLogs storage nodes (http://host:port,…): Vigil writes to them and makes each write durable there before acknowledging it")
	}
	return c, nil
}

// parseURL accepts an absolute http(s) URL with no query or fragment.
func parseURL(flag, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s: %q is not an http(s)://host:port URL of VictoriaLogs", flag, Redact(s))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// Redact returns s without its user info and query values, for logs and
// errors.
func Redact(s string) string { return vigil.RedactURL(s) }

// RedactList is Redact for each of a comma-separated list of URLs.
func RedactList(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = Redact(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

// String names the cluster without passwords.
func (c *Cluster) String() string {
	var nodes []string
	for _, n := range c.storage {
		nodes = append(nodes, Redact(n.url.String()))
	}
	return Redact(c.front.String()) + " (storage " + strings.Join(nodes, ", ") + ")"
}

// Tenant is a VictoriaLogs tenant.
type Tenant struct{ Account, Project uint32 }

// errUnavailable wraps a failure to reach VictoriaLogs as EUNAVAILABLE:
// the work is kept (the queue retries it) and reads answer 503.
func errUnavailable(op string, err error) error {
	return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "artifact store (VictoriaLogs) unavailable", Op: op, Err: err}
}

// do sends a request to base+path and returns the response of a 2xx, or
// an EUNAVAILABLE error holding the start of any other's body.
func (c *Cluster) do(ctx context.Context, op, method string, base *url.URL, path string, query url.Values, t *Tenant, ctype string, body io.Reader) (*http.Response, error) {
	u := *base
	u.Path += path
	u.RawQuery = query.Encode()
	user := u.User
	u.User = nil
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if user != nil {
		p, _ := user.Password()
		req.SetBasicAuth(user.Username(), p)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if t != nil {
		req.Header.Set("AccountID", strconv.FormatUint(uint64(t.Account), 10))
		req.Header.Set("ProjectID", strconv.FormatUint(uint64(t.Project), 10))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = unwrapURLError(err)
		if op == "insert" && isDialError(err) {
			err = fmt.Errorf("%w: %w", errNotTaken, err)
		}
		return nil, errUnavailable(op, fmt.Errorf("%s %s: %w", method, Redact(base.String())+path, err))
	}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		var err error = fmt.Errorf("%s %s: %s: %s", method, Redact(base.String())+path, resp.Status, bytes.TrimSpace(msg))
		if op == "insert" && resp.StatusCode == http.StatusTooManyRequests {
			// A storage node answers 429 before reading any row when it
			// is read-only (-storage.minFreeDiskSpaceBytes).
			err = fmt.Errorf("%w: %w", errNotTaken, err)
		}
		if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests {
			// A request VictoriaLogs refuses is Vigil's bug, not an outage.
			return nil, &vigil.Error{Code: vigil.EINTERNAL, Op: op, Err: err}
		}
		return nil, errUnavailable(op, err)
	}
	return resp, nil
}

// errNotTaken marks an insert the node refused before taking any row:
// the rows may go to another node.
var errNotTaken = errors.New("refused before taking any row")

// isDialError reports whether err is a failure to connect, before
// anything was sent.
func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// unwrapURLError drops the URL (which may hold a password) from a
// client error.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// call is do for requests whose answer is read whole (at most 1 MiB).
func (c *Cluster) call(ctx context.Context, op string, base *url.URL, path string, query url.Values) ([]byte, error) {
	resp, err := c.do(ctx, op, http.MethodGet, base, path, query, nil, "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, errUnavailable(op, err)
	}
	return b, nil
}

// insert sends JSON lines of tenant t to storage node n.
func (c *Cluster) insert(ctx context.Context, n *node, t Tenant, lines []byte) error {
	q := url.Values{"_stream_fields": {streamField}, "_time_field": {"_time"}, "_msg_field": {"_msg"}}
	resp, err := c.do(ctx, "insert", http.MethodPost, n.url, "/insert/jsonline", q, &t, "application/stream+json", bytes.NewReader(lines))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// query runs a LogsQL query of tenant t through the front and calls fn
// with each result row. A query that outlives its deadline because a node
// does not answer says so (stalled).
func (c *Cluster) query(ctx context.Context, t Tenant, q string, fn func(map[string]string) error) (err error) {
	defer func() {
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = c.stalled(err)
		}
	}()
	form := url.Values{"query": {q}}
	resp, err := c.do(ctx, "query", http.MethodPost, c.front, "/select/logsql/query", nil, &t,
		"application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		row := map[string]string{}
		if err := json.Unmarshal(line, &row); err != nil {
			// A storage node failing mid-answer ends the stream with its
			// error in place of a row.
			return errUnavailable("query", fmt.Errorf("%.300s", line))
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errUnavailable("query", err)
	}
	return nil
}

// pick returns the index of the storage node a write goes to first: the
// next in turn.
func (c *Cluster) pick() int {
	return int(c.next.Add(1) % uint32(len(c.storage)))
}

// stallProbe bounds the health checks of stalled.
const stallProbe = time.Second

// stalled returns err, the failure of a query that ran out of time, as
// EUNAVAILABLE naming the nodes that do not answer their health check
// within stallProbe (a node stalled on its disk, or stopped), so that
// the user is told the store is down rather than that the search was too
// broad; err itself when every node answers.
func (c *Cluster) stalled(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), stallProbe)
	defer cancel()
	nodes := append([]*url.URL{c.front}, make([]*url.URL, 0, len(c.storage))...)
	for _, n := range c.storage {
		nodes = append(nodes, n.url)
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, u := range nodes {
		wg.Go(func() { _, errs[i] = c.call(ctx, "health", u, "/health", nil) })
	}
	wg.Wait()
	down := 0
	for _, e := range errs {
		if e != nil {
			down++
		}
	}
	if down == 0 {
		return err
	}
	return &vigil.Error{Code: vigil.EUNAVAILABLE, Op: "query",
		Message: fmt.Sprintf("artifact store (VictoriaLogs) unavailable: %d of its %d nodes did not answer", down, len(nodes)),
		Err:     nodesDown{errors.Join(append([]error{err}, errs...)...)}}
}

// nodesDown is the cause of a query that ran out of time with nodes not
// answering; the API answers its message rather than that of a search
// too broad for its deadline.
type nodesDown struct{ error }

func (nodesDown) StoreDown() bool { return true }
func (e nodesDown) Unwrap() error { return e.error }

// Name is the name of the cluster's check in /readyz.
func (c *Cluster) Name() string { return "artifacts" }

// Ready reports whether the front and every storage node answer their
// health check: a storage node down fails searches (they would miss its
// artifacts) and holds ingest in the queue.
func (c *Cluster) Ready(ctx context.Context) error {
	if _, err := c.call(ctx, "health", c.front, "/health", nil); err != nil {
		return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "VictoriaLogs front unreachable", Op: "health", Err: err}
	}
	for i, n := range c.storage {
		if _, err := c.call(ctx, "health", n.url, "/health", nil); err != nil {
			return &vigil.Error{Code: vigil.EUNAVAILABLE, Op: "health", Err: err,
				Message: fmt.Sprintf("VictoriaLogs storage node %d of %d (--artifacts-storage) unreachable", i+1, len(c.storage))}
		}
	}
	return nil
}
