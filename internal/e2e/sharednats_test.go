package e2e_test

import (
	"context"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
)

// TestTwoDeploymentsOneNATS runs two deployments, each with its own
// PostgreSQL database, on one external NATS. Under one queue name the
// second would take half of the first one's artifacts into its own
// database: it must refuse to start, saying whose the queue is and what
// to set. Under queue names of their own, what is posted to one is
// stored in that one only.
func TestTwoDeploymentsOneNATS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	natsURL, js := connectNATS(t)
	shared := ownQueue(t, js)
	const secret = "shared-nats-secret-0123456789abcdef0123456"
	dbA, dbB := pgtest.FreshDB(t), pgtest.FreshDB(t)
	envA := []string{"VIGIL_DATABASE_URL=" + dbA, "VIGIL_NATS_URL=" + natsURL, "VIGIL_JWT_SECRET=" + secret}
	envB := []string{"VIGIL_DATABASE_URL=" + dbB, "VIGIL_NATS_URL=" + natsURL, "VIGIL_JWT_SECRET=" + secret}
	a := startProcess(t, "deployment-a", "serve", t.TempDir(), envA, "--queue-name", shared.Queue)

	// B on A's queue name: refused before it listens.
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	refused := exec.CommandContext(rctx, vigilBin, "serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--queue-name", shared.Queue)
	refused.Env = childEnv(envB...)
	out, err := refused.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("deployment B on deployment A's queue name ended with %v, want exit status 1; output:\n%s", err, out)
	}
	if strings.Contains(string(out), `"msg":"listening"`) {
		t.Errorf("deployment B listened before refusing:\n%s", out)
	}
	idA, idB := deploymentID(t, ctx, dbA), deploymentID(t, ctx, dbB)
	last := lastLine(string(out))
	t.Logf("deployment B refused: %s", last)
	for _, want := range []string{
		`queue name "` + shared.Queue + `" on this NATS belongs to database ` + idA + " (" + dbLabel(t, dbA) + ")",
		"this process's database is " + idB + " (" + dbLabel(t, dbB) + ")",
		"set --queue-name",
	} {
		if !strings.Contains(last, want) {
			t.Errorf("deployment B's error lacks %q:\n%s", want, last)
		}
	}

	// B under a queue name of its own runs beside A.
	b := startProcess(t, "deployment-b", "serve", t.TempDir(), envB, "--queue-name", ownQueue(t, js).Queue)
	tok := signedToken(t, secret, "signals:write", "signals:read")
	ca, cb := newClient(a, tok), newClient(b, tok)
	for _, tc := range []struct {
		name        string
		to, other   *client.Client
		before, has int // artifacts already in "to" and in "other"
	}{
		{"A", ca, cb, 0, 0},
		{"B", cb, ca, 0, 400},
	} {
		// 40 batches of 10 (40 queue messages) from 4 clients at once:
		// enough messages for a shared consumer to spread them over the
		// workers of both deployments.
		lg := flood(ctx, tc.to, load{clients: 4, batches: 10, size: 10})
		requireClean(t, lg, false)
		if len(lg.acked) != 400 {
			t.Fatalf("posted to %s: %d of 400 artifacts accepted", tc.name, len(lg.acked))
		}
		// Wait until the 400 are stored, wherever they went, then see where.
		got := pollUntil(t, storeTimeout, "the 400 lines posted to "+tc.name+" stored", func() ([2]int, bool) {
			n, err1 := tc.to.ArtifactTotal(ctx)
			m, err2 := tc.other.ArtifactTotal(ctx)
			return [2]int{n, m}, err1 == nil && err2 == nil && n+m >= tc.before+tc.has+400
		})
		if got[0] != tc.before+400 || got[1] != tc.has {
			t.Errorf("after 400 lines posted to %s: %s holds %d artifacts, the other deployment %d; want %d and %d",
				tc.name, tc.name, got[0], got[1], tc.before+400, tc.has)
		}
		s, err := takeSnapshot(ctx, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		requireExactlyOnce(t, s, lg.acked)
	}
}

// deploymentID reads the identity of the database at dsn.
func deploymentID(t *testing.T, ctx context.Context, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id string
	if err := conn.QueryRow(ctx, `SELECT id FROM deployment`).Scan(&id); err != nil {
		t.Fatalf("deployment id of %s: %v", dsn, err)
	}
	return id
}

// dbLabel is how vigil names the database at dsn in its messages: the URL
// without credentials or parameters.
func dbLabel(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host + u.Path
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
