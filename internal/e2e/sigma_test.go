package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// sshBruteForceStarter is the Sigma id of the starter correlation rule
// equivalent to the built-in SSH brute force (internal/starterrules).
const sshBruteForceStarter = "4e1e7a3c-2f0b-4d5e-8a61-9c3b2d1f0e77"

// TestSigmaBruteForceTwoWorkers: with the starter correlation rule
// equivalent to the built-in SSH brute force enabled, loghub's Linux log
// (2,000 real lines) goes through one API process and two `vigil worker`
// processes on PostgreSQL and NATS, in batches of 40 posted four at a
// time, so that one attacker's lines are split over both workers. The
// correlation and the built-in detector must report the same addresses
// with the same number of observations each (the in-process version is
// TestSigmaBruteForceCorrelation, internal/api).
func TestSigmaBruteForceTwoWorkers(t *testing.T) {
	d := startDeployment(t, 1, 2)
	c := newClient(d.apis[0], d.token)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Enabled before the first artifact: no worker has read the org's
	// rules yet, so each reads them with the correlation on.
	apiCall(t, ctx, d, "POST", "/v1/starter-rules/"+sshBruteForceStarter+"/enable", http.StatusOK)

	lines := readDataset(t, "auth/loghub-Linux_2k.log")
	var batches [][]client.NewArtifact
	for i := 0; i < len(lines); i += 40 {
		var b []client.NewArtifact
		for _, l := range lines[i:min(i+40, len(lines))] {
			b = append(b, client.NewArtifact{Source: "auth", Raw: l}) // the line's own time
		}
		batches = append(batches, b)
	}
	acked := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, b := range batches {
		wg.Add(1)
		sem <- struct{}{}
		go func(b []client.NewArtifact) {
			defer func() { <-sem; wg.Done() }()
			ids := postAccepted(t, ctx, c, b, 200*time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			for j, id := range ids {
				acked[id] = b[j].Raw
			}
		}(b)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	requireExactlyOnce(t, awaitStored(t, ctx, d.apis[0], c, acked), acked)

	// Both detectors' observations, by the address they name, once every
	// artifact is stored and the two agree on the 21 addresses the
	// in-process test finds.
	var builtin, sigma map[string]int
	pollUntil(t, time.Minute, "the built-in and the Sigma brute force on 21 addresses", func() (struct{}, bool) {
		builtin, sigma = bruteForceObservations(t, ctx, d)
		return struct{}{}, len(builtin) == 21 && maps.Equal(builtin, sigma)
	})
	for _, w := range d.workers {
		if n := w.logs.count("detection rule left out"); n > 0 {
			t.Errorf("%s left %d rules out", w.name, n)
		}
	}
	t.Logf("observations per address: built-in %v, Sigma correlation %v", builtin, sigma)
}

// bruteForceObservations counts the built-in SSH brute force's and the
// Sigma correlation's observations per source address.
func bruteForceObservations(t *testing.T, ctx context.Context, d *deployment) (builtin, sigma map[string]int) {
	t.Helper()
	var body struct {
		Data struct {
			Observations []struct {
				Description string `json:"description"`
			} `json:"observations"`
		} `json:"data"`
	}
	raw := apiCall(t, ctx, d, "GET", "/v1/observations?limit=1000", http.StatusOK)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	builtin, sigma = map[string]int{}, map[string]int{}
	for _, o := range body.Data.Observations {
		desc := o.Description
		switch {
		case strings.HasPrefix(desc, "SSH brute force: "):
			builtin[firstIPv4(desc)]++
		case strings.HasPrefix(desc, "Sigma correlation SSH brute force"):
			sigma[firstIPv4(desc[strings.Index(desc, " for "):])]++
		}
	}
	return builtin, sigma
}

// apiCall makes one request of the deployment's first API with its admin
// token and returns the body, failing the test on another status.
func apiCall(t *testing.T, ctx context.Context, d *deployment, method, path string, want int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, d.apis[0].base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b.String())
	}
	return []byte(b.String())
}

// readDataset returns the non-empty lines of a file of ../shared/datasets.
func readDataset(t *testing.T, rel string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "datasets", rel))
	if err != nil {
		t.Fatalf("the datasets are needed: %v", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// firstIPv4 returns the first IPv4 address in s.
func firstIPv4(s string) string {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !(r == '.' || r >= '0' && r <= '9') }) {
		if strings.Count(f, ".") == 3 {
			return strings.Trim(f, ".")
		}
	}
	return ""
}
