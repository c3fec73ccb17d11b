package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// Faults of the VictoriaLogs cluster that keeps the artifacts
// (--artifacts-url), through real vigil serve and vigil worker
// processes: the front or a storage node killed, stalled or out of disk
// during ingest. What is acknowledged is stored exactly once; reads
// answer 503 with a reason while the cluster cannot answer them whole;
// ingest goes on into the queue (and to the storage nodes that take it).

// vlDeployment is an API-only vigil serve and a vigil worker on a fresh
// PostgreSQL database, the external NATS and cluster c.
type vlDeployment struct {
	c           *vltest.Cluster
	api, worker *proc
	client      *client.Client
}

func startVLDeployment(t *testing.T, c *vltest.Cluster, serveArgs ...string) *vlDeployment {
	t.Helper()
	cluster := []string{"--artifacts-url", c.FrontURL(), "--artifacts-storage", c.StorageURLs()}
	d := startDeploymentOf(t, deploymentSpec{apis: 1, workers: 1, apiArgs: slices.Concat(cluster, serveArgs), workerArgs: cluster})
	return &vlDeployment{c: c, api: d.apis[0], worker: d.workers[0], client: newClient(d.apis[0], d.token)}
}

// ingest posts the real lines of an auth and a firewall log of the datasets in
// batches of 200 from its own goroutine, paced, until stop is closed and at
// least min batches were acknowledged, honouring 429s; it returns what
// was acknowledged (id → raw) once done.
type ingest struct {
	mu    sync.Mutex
	acked map[string]string
	n     int           // batches acknowledged
	batch chan struct{} // a value per batch acknowledged
	done  chan struct{}
}

func startIngest(t *testing.T, ctx context.Context, c *client.Client, stop <-chan struct{}) *ingest {
	t.Helper()
	type src struct{ source, file string }
	var lines []client.NewArtifact
	for _, f := range []src{{"auth", "auth/loghub-Linux_2k.log"}, {"firewall", "firewall/iptablogs-netfilter.log"}} {
		for _, l := range readDataset(t, f.file) {
			lines = append(lines, client.NewArtifact{Source: f.source, Raw: l})
		}
	}
	in := &ingest{acked: map[string]string{}, batch: make(chan struct{}, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(in.done)
		// Paced (a batch every 50 ms at most), so that the queue the
		// faults leave behind drains within storeTimeout on a busy
		// machine.
		pace := time.NewTicker(50 * time.Millisecond)
		defer pace.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-pace.C:
			}
			var b []client.NewArtifact
			for k := range 200 {
				b = append(b, lines[(i*200+k)%len(lines)])
			}
			ids := postAccepted(t, ctx, c, b, 200*time.Millisecond)
			if ids == nil {
				return
			}
			in.mu.Lock()
			for j, id := range ids {
				in.acked[id] = b[j].Raw
			}
			in.n++
			in.mu.Unlock()
			in.batch <- struct{}{}
		}
	}()
	return in
}

// await waits until n more batches are acknowledged.
func (in *ingest) await(t *testing.T, n int, what string) {
	t.Helper()
	timeout := time.After(storeTimeout)
	for range n {
		select {
		case <-in.batch:
		case <-in.done:
			t.Fatalf("ingest ended before %s", what)
		case <-timeout:
			t.Fatalf("no %d batches acknowledged %s within %v", n, what, storeTimeout)
		}
	}
}

// searchRefused asserts that a search answers 503 naming the artifact
// store, within the search timeout.
func searchRefused(t *testing.T, ctx context.Context, c *client.Client, when string) {
	t.Helper()
	_, err := c.Artifacts(ctx, client.ArtifactQuery{Query: "sshd", Limit: 10})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusServiceUnavailable || !strings.Contains(ce.Body, "artifact store") {
		t.Fatalf("search %s: %v; want 503 naming the artifact store", when, err)
	}
}

// TestVLogsFrontKilledDuringIngest: the front (the select node) SIGKILLed
// while clients post and the worker stores: the API keeps acknowledging
// (the worker writes to the storage nodes, not through the front),
// searches answer 503 until the front is back, and then every
// acknowledged artifact is found exactly once.
func TestVLogsFrontKilledDuringIngest(t *testing.T) {
	c := vltest.Start(t, 2)
	d := startVLDeployment(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	in := startIngest(t, ctx, d.client, stop)

	in.await(t, 5, "before the kill")
	c.Front.Kill()
	searchRefused(t, ctx, d.client, "with the front killed")
	in.await(t, 10, "with the front down")
	c.Front.Start(t)
	in.await(t, 5, "after the front's restart")
	close(stop)
	<-in.done

	s := awaitStored(t, ctx, d.api, d.client, in.acked)
	requireExactlyOnce(t, s, in.acked)
	t.Logf("%d batches, %d artifacts acknowledged; all stored once", in.n, len(in.acked))
}

// TestVLogsStorageDownDuringIngest: a storage node SIGKILLed during
// ingest, then a storage node frozen (SIGSTOP: it holds its connections
// and answers nothing, a node stalled on its disk). While either lasts
// the API keeps acknowledging, searches answer 503 within the search
// timeout, and the batches the node cannot take wait in the queue or go
// to the other node; after it is back every acknowledged artifact is
// found exactly once.
func TestVLogsStorageDownDuringIngest(t *testing.T) {
	c := vltest.Start(t, 2)
	d := startVLDeployment(t, c, "--search-timeout", "5s")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	in := startIngest(t, ctx, d.client, stop)

	in.await(t, 5, "before the kill")
	c.Storage[1].Kill()
	searchRefused(t, ctx, d.client, "with a storage node killed")
	// The API stays ready (a load balancer keeps it) and says why it is
	// degraded.
	if checks, err := client.New(d.api.base, "", nil).Ready(ctx); err != nil || !strings.HasPrefix(checks["artifacts"], "degraded: 1 of 2 storage nodes") {
		t.Errorf("/readyz with a storage node down: %v, %v; want ready, artifacts degraded", checks, err)
	}
	in.await(t, 10, "with a storage node down")
	c.Storage[1].Start(t)
	in.await(t, 5, "after the storage node's restart")

	c.Storage[0].Freeze()
	start := time.Now()
	searchRefused(t, ctx, d.client, "with a storage node frozen")
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the search with a frozen node took %v; want the 5 s search timeout and a 1 s health check", took)
	}
	in.await(t, 5, "with a storage node frozen")
	c.Storage[0].Thaw()
	in.await(t, 5, "after the thaw")
	close(stop)
	<-in.done

	// A write sent to the frozen node may wait for it up to the write
	// timeout (a minute) before its batch is retried.
	s := awaitStoredWithin(t, ctx, d.api, d.client, in.acked, 3*time.Minute)
	requireExactlyOnce(t, s, in.acked)
	t.Logf("%d batches, %d artifacts acknowledged; all stored once", in.n, len(in.acked))
}

// TestVLogsStorageFull: a storage node out of disk (read-only below
// -storage.minFreeDiskSpaceBytes, here set above any free space) refuses
// inserts with 429 before taking a row: the worker writes those batches
// to the other node at once (no redelivery), nothing is lost or doubled,
// and searches still answer (the full node serves what it holds).
func TestVLogsStorageFull(t *testing.T) {
	c := vltest.Start(t, 2)
	c.Storage[1].Stop()
	c.Storage[1].SetFlags("-storage.minFreeDiskSpaceBytes=1000TB")
	c.Storage[1].Start(t)
	d := startVLDeployment(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	in := startIngest(t, ctx, d.client, stop)
	in.await(t, 20, "with a storage node full")
	close(stop)
	<-in.done

	s := awaitStored(t, ctx, d.api, d.client, in.acked)
	requireExactlyOnce(t, s, in.acked)
	// At once: no batch was held back for the full node.
	if log := d.worker.logs.tail(100000); strings.Contains(log, "read-only") {
		t.Errorf("the worker held batches back because a storage node is full, instead of writing them to the other node")
	}
	if _, err := d.client.Artifacts(ctx, client.ArtifactQuery{Query: "sshd", Limit: 10}); err != nil {
		t.Fatalf("search with a storage node full: %v", err)
	}
}
