package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
)

// deployment is the scale-out set-up of docs/operations.md in miniature:
// API-only processes and worker processes sharing a fresh PostgreSQL
// database and a queue.
type deployment struct {
	apis, workers []*proc
	token         string // admin of org
}

// deploymentSpec is what startDeploymentOf starts.
type deploymentSpec struct {
	apis, workers int
	// queue is the environment naming the queue (VIGIL_NATS_URL, …); nil:
	// the external NATS, under a queue name of the test's own.
	queue []string
	// apiArgs follow each API process's --workers 0 --ingest-wait 0;
	// workerArgs each worker's --workers 2 (two worker goroutines).
	apiArgs, workerArgs []string
}

// deploymentSecret signs the tokens of a deployment's processes.
const deploymentSecret = "deployment-secret-0123456789abcdef0123456789"

// startDeployment starts apis API-only processes and workers worker
// processes on the external NATS (a short AckWait, so that a killed
// worker's messages come back quickly) and mints an admin token.
func startDeployment(t *testing.T, apis, workers int) *deployment {
	t.Helper()
	return startDeploymentOf(t, deploymentSpec{apis: apis, workers: workers, workerArgs: []string{"--ack-wait", "3s"}})
}

// startDeploymentOf starts the processes of spec, each ready, and mints
// an admin token of org.
func startDeploymentOf(t *testing.T, spec deploymentSpec) *deployment {
	t.Helper()
	queue := spec.queue
	if queue == nil {
		natsURL, _, names := externalNATS(t)
		queue = []string{"VIGIL_NATS_URL=" + natsURL, "VIGIL_QUEUE_NAME=" + names.Queue}
	}
	env := append([]string{"VIGIL_DATABASE_URL=" + pgtest.FreshDB(t), "VIGIL_JWT_SECRET=" + deploymentSecret}, queue...)
	d := &deployment{token: signedToken(t, deploymentSecret, "admin")}
	for i := 1; i <= spec.apis; i++ {
		d.apis = append(d.apis, startProcess(t, fmt.Sprintf("api-%d", i), "serve", t.TempDir(), env,
			slices.Concat([]string{"--workers", "0", "--ingest-wait", "0"}, spec.apiArgs)...))
	}
	for i := 1; i <= spec.workers; i++ {
		d.workers = append(d.workers, startProcess(t, fmt.Sprintf("worker-%d", i), "worker", t.TempDir(), env,
			slices.Concat([]string{"--workers", "2"}, spec.workerArgs)...))
	}
	return d
}

// signedToken is a token of subject e2e in org with perms, valid for an
// hour, signed with secret (a deployment's VIGIL_JWT_SECRET).
func signedToken(t *testing.T, secret string, perms ...string) string {
	t.Helper()
	tok, err := auth.Mint([]byte(secret), auth.Claims{Subject: "e2e", OrgID: org, Permissions: perms}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// postAccepted posts b, again after backoff each time it is refused with
// 429 (as a shipper honouring Retry-After does), and returns the ids the
// API gave its artifacts. An error or any other answer than 202 for all
// of b fails the test and returns nil.
func postAccepted(t *testing.T, ctx context.Context, c *client.Client, b []client.NewArtifact, backoff time.Duration) []string {
	for {
		r, err := c.PostArtifacts(ctx, b)
		if err != nil {
			t.Errorf("post: %v", err)
			return nil
		}
		if r.Status == http.StatusTooManyRequests {
			time.Sleep(backoff) // honouring Retry-After, not waiting for an event
			continue
		}
		if r.Status != http.StatusAccepted || r.Accepted != len(b) {
			t.Errorf("post: status %d accepted %d of %d: %s", r.Status, r.Accepted, len(b), r.Body)
			return nil
		}
		return r.IDs
	}
}
