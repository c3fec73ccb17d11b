package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/queue"
)

// TestNATSClusterNodeLoss runs the reference deployment's queue of
// docs/operations.md: a three-node NATS cluster (separate nats-server
// processes on loopback) with Vigil's streams at three replicas, one API
// process and one worker process on PostgreSQL. While four clients post,
// one node at a time is killed with SIGKILL and started again: the
// stream's leader, then the node the API is connected to, then the node
// the worker is connected to. Every post answered 2xx must be stored, and
// found by a search, exactly once; a post may be refused with 503 or 429
// meanwhile, never answered otherwise, and a refused post must have left
// nothing stored; ingest must resume after each loss, before the node is
// back.
func TestNATSClusterNodeLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := startNATSCluster(t, 3)
	names, err := queue.NamesFor("")
	if err != nil {
		t.Fatal(err)
	}
	// --ack-wait 5s: what the worker fetched and whose acknowledgement a
	// dying node took with it comes back 5 s later.
	d := startDeploymentOf(t, deploymentSpec{apis: 1, workers: 1, queue: []string{"VIGIL_NATS_URL=" + cl.urls(), "VIGIL_QUEUE_REPLICAS=3"},
		workerArgs: []string{"--ack-wait", "5s"}})
	api, worker := d.apis[0], d.workers[0]
	c := newClient(api, d.token)

	// Every stream Vigil made is replicated on all three nodes.
	js := cl.client(t)
	for _, name := range []string{names.Stream, names.DeadStream, names.WebhookStream, "KV_" + names.OwnerBucket} {
		info := cl.streamInfo(t, ctx, js, name)
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Fatalf("stream %s: %d replicas (cluster %+v), want 3", name, info.Config.Replicas, info.Cluster)
		}
	}

	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	// 4 clients, each posting 25 lines every 100 ms: 1,000 lines/s, less
	// than the worker stores, so that a refusal says the queue failed,
	// not that the worker fell behind.
	ld := startLoadOf(lctx, c, 4, 25, 100*time.Millisecond)
	rd := watchReady(lctx, api)
	var outages []*nodeOutage
	for _, pick := range []struct {
		what   string
		victim func() string
	}{
		{"the stream's leader", func() string { return cl.streamInfo(t, ctx, js, names.Stream).Cluster.Leader }},
		{"the API's node", func() string { return connectedNode(t, api) }},
		{"the worker's node", func() string { return connectedNode(t, worker) }},
	} {
		ld.awaitAcked(t, ld.ackedCount()+1000) // ingesting before the kill
		o := &nodeOutage{what: pick.what, node: cl.node(t, pick.victim())}
		info := cl.streamInfo(t, ctx, js, names.Stream)
		o.leader = info.Cluster.Leader == o.node.name
		o.killed = time.Now()
		o.node.kill(t)
		// Ingest resumes on the two nodes left: 40 more posts answered 2xx.
		ld.awaitAcked(t, ld.ackedCount()+1000)
		o.restarted = time.Now()
		o.node.start(t)
		cl.awaitCurrent(t, ctx, js, names.Stream, names.Consumer)
		o.rejoined = time.Now()
		outages = append(outages, o)
	}
	ld.awaitAcked(t, ld.ackedCount()+1000)
	stopLoad()
	ld.wait()

	ld.mu.Lock()
	defer ld.mu.Unlock()
	t.Logf("load: %d posts: statuses %v; %d artifacts acknowledged", ld.posts, ld.statuses, len(ld.acked))
	for _, e := range ld.unexpected {
		t.Errorf("unexpected reply: %s", e)
	}
	rd.wait()
	for _, o := range outages {
		o.measure(ld.replies)
		o.unready = rd.longestUnready(o.killed, o.rejoined)
		t.Logf("%s", o)
	}
	s := awaitStored(t, ctx, api, c, ld.acked)
	requireExactlyOnce(t, s, ld.acked)
	// Nothing refused was stored: a shipper that sends a refused batch
	// again does not store it twice.
	if s.total != len(ld.acked) {
		t.Errorf("%d artifacts stored, %d acknowledged: %d of posts answered 503 or 429 were stored all the same",
			s.total, len(ld.acked), s.total-len(ld.acked))
	}
	// And searchable: a sample of the acknowledged lines, each found once
	// by the words only it has.
	n := 0
	for id, raw := range ld.acked {
		if n++; n > 20 {
			break
		}
		word := strings.TrimPrefix(strings.Fields(raw)[1], "run=") // <run>-c<client>-b<batch>-i<item>
		page, err := c.Artifacts(ctx, client.ArtifactQuery{Query: `"` + word + `"`, Limit: 10})
		if err != nil {
			t.Fatalf("search %q: %v", word, err)
		}
		if page.Total != 1 || len(page.Artifacts) != 1 || page.Artifacts[0].ID != id {
			t.Errorf("search %q: total %d, %d artifacts; want artifact %s once", word, page.Total, len(page.Artifacts), id)
		}
	}
	dead := cl.streamInfo(t, ctx, js, names.DeadStream)
	if dead.State.Msgs != 0 {
		t.Errorf("%d messages dead-lettered", dead.State.Msgs)
	}
}

// nodeOutage is one node's SIGKILL and restart, and what the clients saw
// from the kill until the node had rejoined.
type nodeOutage struct {
	what                        string
	node                        *natsNode
	leader                      bool // the node led the artifact stream when killed
	killed, restarted, rejoined time.Time

	unready  time.Duration // the longest time the API's /readyz answered other than 200
	firstOK  time.Duration // from the kill to the 2xx of the first post begun after it
	maxGap   time.Duration // the longest time without a 2xx reply
	slowest  time.Duration // the slowest reply
	statuses map[int]int   // of the posts answered
}

func (o *nodeOutage) measure(replies []reply) {
	o.statuses = map[int]int{}
	var oks []time.Time
	for _, r := range replies {
		if r.end.Before(o.killed) || r.end.After(o.rejoined) {
			continue
		}
		o.statuses[r.status]++
		o.slowest = max(o.slowest, r.end.Sub(r.start))
		if r.status == http.StatusAccepted {
			oks = append(oks, r.end)
			if !r.start.Before(o.killed) && (o.firstOK == 0 || r.end.Sub(o.killed) < o.firstOK) {
				o.firstOK = r.end.Sub(o.killed)
			}
		}
	}
	slices.SortFunc(oks, func(a, b time.Time) int { return a.Compare(b) })
	prev := o.killed
	for _, at := range append(oks, o.rejoined) {
		o.maxGap = max(o.maxGap, at.Sub(prev))
		prev = at
	}
}

func (o *nodeOutage) String() string {
	return fmt.Sprintf("%s %s killed (stream leader: %v), started again after %v, caught up after %v: "+
		"replies %v; first 2xx of a post begun after the kill %v after it; longest time without a 2xx %v; slowest reply %v; "+
		"the API's /readyz not ready for %v",
		o.what, o.node.name, o.leader, o.restarted.Sub(o.killed).Round(time.Millisecond), o.rejoined.Sub(o.killed).Round(time.Millisecond),
		o.statuses, o.firstOK.Round(time.Millisecond), o.maxGap.Round(time.Millisecond), o.slowest.Round(time.Millisecond),
		o.unready.Round(time.Millisecond))
}

// readyWatch is the answers of a process's /readyz, asked every 100 ms.
type readyWatch struct {
	mu     sync.Mutex
	probes []readyProbe
	done   chan struct{}
}

type readyProbe struct {
	at time.Time
	ok bool
}

func watchReady(ctx context.Context, p *proc) *readyWatch {
	rd := &readyWatch{done: make(chan struct{})}
	probe := client.New(p.base, "", &http.Client{Timeout: 2 * time.Second})
	go func() {
		defer close(rd.done)
		tick := time.NewTicker(100 * time.Millisecond) // a load balancer's health check, at a rate
		defer tick.Stop()
		for {
			_, err := probe.Ready(ctx)
			if ctx.Err() != nil {
				return
			}
			rd.mu.Lock()
			rd.probes = append(rd.probes, readyProbe{at: time.Now(), ok: err == nil})
			rd.mu.Unlock()
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return rd
}

func (rd *readyWatch) wait() { <-rd.done }

// longestUnready is the longest run of failed probes between from and to,
// from the first failure to the next success.
func (rd *readyWatch) longestUnready(from, to time.Time) time.Duration {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	var longest time.Duration
	var since time.Time
	for _, p := range rd.probes {
		if p.at.Before(from) || p.at.After(to) {
			continue
		}
		switch {
		case !p.ok && since.IsZero():
			since = p.at
		case p.ok && !since.IsZero():
			longest = max(longest, p.at.Sub(since))
			since = time.Time{}
		}
	}
	if !since.IsZero() {
		longest = max(longest, to.Sub(since))
	}
	return longest
}

// connectedNode is the name of the NATS server p last logged it connected to.
func connectedNode(t *testing.T, p *proc) string {
	t.Helper()
	p.logs.mu.Lock()
	lines := strings.Split(p.logs.buf.String(), "\n")
	p.logs.mu.Unlock()
	for i := len(lines) - 1; i >= 0; i-- {
		var rec struct {
			Msg    string `json:"msg"`
			Server string `json:"server"`
		}
		if json.Unmarshal([]byte(lines[i]), &rec) == nil && rec.Server != "" &&
			(rec.Msg == "queue: connected to NATS" || rec.Msg == "queue: reconnected to NATS") {
			return rec.Server
		}
	}
	t.Fatalf("%s never logged which NATS server it is connected to", p.name)
	return ""
}

// natsCluster is a NATS cluster of the test's own: nats-server processes
// on loopback, each with its store dir kept across restarts.
type natsCluster struct {
	nodes []*natsNode
}

// natsServerForCluster is the nats-server the cluster runs: the one named
// by VIGIL_TEST_NATS_SERVER (.ci/run builds it), or else the version this
// module pins (go.mod), built once into a temporary directory.
var natsServerForCluster = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("VIGIL_TEST_NATS_SERVER"); p != "" {
		return p, nil
	}
	bin := filepath.Join(filepath.Dir(vigilBin), "nats-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build github.com/nats-io/nats-server/v2: %v\n%s", err, out)
	}
	return bin, nil
})

// startNATSCluster starts n nodes, each routed to all, with the
// configuration docs/operations.md gives, and waits until JetStream
// answers on every node.
func startNATSCluster(t *testing.T, n int) *natsCluster {
	t.Helper()
	bin, err := natsServerForCluster()
	if err != nil {
		t.Fatalf("the cluster's nats-server: %v", err)
	}
	version, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	t.Logf("cluster of %s", strings.TrimSpace(string(version)))
	// sync_interval is unknown to nats-server 2.9 (Debian's 2.9.10
	// refuses to start with it), which the test may also run.
	syncLine := "  sync_interval: always\n"
	if strings.Contains(string(version), " v2.9.") {
		syncLine = ""
	}
	// Every port first, so that each node's routes name them all.
	ports := freePorts(t, 2*n)
	port := func(i int) int { return ports[i] }
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", port(n+i)))
	}
	cl := &natsCluster{}
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("nats-%d", i+1)
		conf := filepath.Join(dir, name+".conf")
		text := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
%s}
cluster {
  name: vigil
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, name, port(i), filepath.Join(dir, name), syncLine, port(n+i), strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cl.nodes = append(cl.nodes, newNATSNode(t, name, bin, fmt.Sprintf("nats://127.0.0.1:%d", port(i)), "-c", conf))
	}
	for _, nd := range cl.nodes {
		nd.launch(t)
	}
	for _, nd := range cl.nodes {
		nd.awaitJetStream(t)
	}
	return cl
}

// urls is the client URLs of every node, as VIGIL_NATS_URL lists them.
func (cl *natsCluster) urls() string {
	var u []string
	for _, nd := range cl.nodes {
		u = append(u, nd.url)
	}
	return strings.Join(u, ",")
}

func (cl *natsCluster) node(t *testing.T, name string) *natsNode {
	t.Helper()
	for _, nd := range cl.nodes {
		if nd.name == name {
			return nd
		}
	}
	t.Fatalf("no NATS node named %q", name)
	return nil
}

// client is the test's own connection to the cluster, which reconnects
// to the nodes left when one goes.
func (cl *natsCluster) client(t *testing.T) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(cl.urls(), nats.Name("vigil-e2e"), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamInfo asks until the cluster answers (a node may be down and its
// streams electing a leader).
func (cl *natsCluster) streamInfo(t *testing.T, ctx context.Context, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	return pollUntil(t, 30*time.Second, "stream "+name+" with a leader", func() (*jetstream.StreamInfo, bool) {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := js.Stream(rctx, name)
		if err != nil {
			return nil, false
		}
		info, err := s.Info(rctx)
		return info, err == nil && info.Cluster != nil && info.Cluster.Leader != ""
	})
}

// awaitCurrent waits until the stream and its consumer have a leader and
// every other replica is online and caught up: a restarted node has
// rejoined.
func (cl *natsCluster) awaitCurrent(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, consumer string) {
	t.Helper()
	current := func(c *jetstream.ClusterInfo) bool {
		if c == nil || c.Leader == "" || len(c.Replicas) != len(cl.nodes)-1 {
			return false
		}
		for _, r := range c.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
		return true
	}
	pollUntil(t, 60*time.Second, "every replica of "+stream+" current", func() (string, bool) {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := js.Stream(rctx, stream)
		if err != nil {
			return err.Error(), false
		}
		si, err := s.Info(rctx)
		if err != nil {
			return err.Error(), false
		}
		ci, err := s.Consumer(rctx, consumer)
		if err != nil {
			return err.Error(), false
		}
		cinfo, err := ci.Info(rctx)
		if err != nil {
			return err.Error(), false
		}
		return fmt.Sprintf("stream %+v, consumer %+v", si.Cluster, cinfo.Cluster), current(si.Cluster) && current(cinfo.Cluster)
	})
}
