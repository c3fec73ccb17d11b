package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/client"
)

// TestScaleOut runs the deployment of docs/operations.md in miniature:
// two API-only processes and two worker processes sharing one PostgreSQL
// and one external NATS. Ingest goes through both APIs while one worker is
// killed with SIGKILL mid-run. Every acknowledged artifact must be stored
// once, every brute force must fire once (one incident per attacker with
// exactly its artifacts), and no incident may be duplicated.
func TestScaleOut(t *testing.T) {
	d := startDeployment(t, 2, 2)
	api1, api2, w1 := d.apis[0], d.apis[1], d.workers[0]
	clients := []*client.Client{newClient(api1, d.token), newClient(api2, d.token)}

	// 24 attackers, 10 failed logins each within two minutes, interleaved
	// with benign lines; each batch goes to the API of its turn, so every
	// attacker's lines are split over both APIs and both workers.
	const attackers, failures, rounds = 24, 10, 20
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var batches [][]client.NewArtifact
	for r := 0; r < rounds; r++ {
		var b []client.NewArtifact
		for a := 0; a < attackers; a++ {
			if r < failures {
				ts := start.Add(time.Duration(a)*time.Hour + time.Duration(r)*10*time.Second)
				b = append(b, client.NewArtifact{Source: "auth", Timestamp: ts.Format(time.RFC3339),
					Raw: fmt.Sprintf("Nov  1 10:00:%02d web-%02d sshd[%d]: Failed password for user%d from 198.51.100.%d port %d ssh2",
						r, a, 1000+r, r, a+1, 40000+r)})
			}
		}
		for i := 0; i < 200; i++ {
			b = append(b, client.NewArtifact{Source: "firewall", Timestamp: start.Format(time.RFC3339),
				Raw: fmt.Sprintf("Nov  1 10:00:00 fw kernel: [netfilter-OUTPUT] IN= OUT=eth0 SRC=10.0.0.5 DST=10.0.9.%d LEN=60 PROTO=UDP SPT=%d DPT=53 round=%d", i%250, 30000+i, r)})
		}
		batches = append(batches, b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	acked := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	killed := make(chan struct{})
	for i, b := range batches {
		if i == rounds/2 {
			wg.Wait()
			w1.kill(t) // mid-run, with messages possibly fetched and unacknowledged
			close(killed)
		}
		wg.Add(1)
		go func(c *client.Client, b []client.NewArtifact) {
			defer wg.Done()
			ids := postAccepted(t, ctx, c, b, 500*time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			for j, id := range ids {
				acked[id] = b[j].Raw
			}
		}(clients[i%2], b)
	}
	wg.Wait()
	<-killed
	if t.Failed() {
		t.FailNow()
	}

	s := awaitStored(t, ctx, api1, clients[0], acked)
	requireExactlyOnce(t, s, acked)

	// Detections: one brute-force incident per attacker, each with all 10 lines.
	var got []vigil.Incident
	pollUntil(t, 30*time.Second, "every brute force detected", func() ([]vigil.Incident, bool) {
		page, err := clients[1].Incidents(ctx, 1000, 0)
		if err != nil {
			return nil, false
		}
		got = page.Incidents
		done := 0
		for _, inc := range got {
			if inc.ArtifactCount == failures {
				done++
			}
		}
		return got, done >= attackers
	})
	perIP := map[string]int{}
	for _, inc := range got {
		if !strings.HasPrefix(inc.Title, "SSH brute force from ") {
			t.Errorf("unexpected incident %q", inc.Title)
			continue
		}
		ip := strings.Fields(strings.TrimPrefix(inc.Title, "SSH brute force from "))[0]
		perIP[ip]++
		if inc.ArtifactCount != failures {
			t.Errorf("incident %q has %d artifacts, want %d", inc.Title, inc.ArtifactCount, failures)
		}
	}
	for a := 1; a <= attackers; a++ {
		ip := fmt.Sprintf("198.51.100.%d", a)
		if perIP[ip] != 1 {
			t.Errorf("attacker %s: %d incidents, want exactly 1", ip, perIP[ip])
		}
	}
	t.Logf("acknowledged %d, stored %d, incidents %d (worker-1 killed after %d of %d batches)", len(acked), s.total, len(got), rounds/2, rounds)
}
