package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBrowser drives the console in Debian's Chromium (headless, through
// playwright-core) against a real `vigil serve` fed with a real auth log:
// sign in, the brute force in the queue, its page, resolving it, the
// attacker's address searched, a rule previewed and saved, a read-only
// user, another org's user, sign-out and expiry (browser/console.mjs).
// It fails, never skips, when node, Chromium or the npm package is
// missing: .ci/run installs them. VIGIL_CONSOLE_SHOTS names a directory
// for the screenshots of each screen (docs/console/ keeps them).
func TestBrowser(t *testing.T) {
	srv := serveForBrowser(t)
	base, token := srv.base, srv.token
	datasets := filepath.Join("..", "..", "..", "shared", "datasets")
	log := filepath.Join(datasets, "auth", "loghub-Linux_2k.log")
	if _, err := os.Stat(log); err != nil {
		t.Fatalf("dataset missing: %v", err)
	}
	admin := token(time.Hour, "acme", "admin")
	reader := token(time.Hour, "acme", "incidents:read", "observations:read", "signals:read")
	other := token(time.Hour, "globex", "admin")
	// The last session expires while the script runs.
	shortTTL := 25 * time.Second
	shortExp := time.Now().Add(shortTTL)
	short := token(shortTTL, "acme", "admin")

	lines := readLines(t, log)
	ingest(t, base, admin, "auth", lines)
	// A second auth log, whose attacker's address is in MaxMind's test
	// databases: its enrichment shows beside it.
	geoLines := readLines(t, filepath.Join(datasets, "auth", "integrations-test-auth.log"))
	ingest(t, base, admin, "auth", geoLines)
	ip := attacker(t, base, admin, len(lines)+len(geoLines))
	t.Logf("attacker of the largest brute force: %s", ip)
	attack := attackOf(t, base, admin, ip)
	t.Logf("its %d artifacts, %s to %s, start with %s", attack.count, attack.first, attack.last, attack.firstRaw)
	// One address seen by 55 sensors: an incident of more observations
	// and nodes than a section of its page shows.
	sensors := 55
	var beacon string
	for i := range sensors {
		host := fmt.Sprintf("sensor-%02d", i)
		beacon = observe(t, base, admin, map[string]any{"type": "network", "severity": "medium",
			"description": "Beaconing to 203.0.113.50 seen by " + host,
			"nodes":       []map[string]string{{"type": "IP", "value": "203.0.113.50"}, {"type": "Host", "value": host}}})
	}

	srv.browse("console.mjs", 5*time.Minute, "ATTACKER_IP="+ip,
		"FIRST_ATTEMPT="+attack.firstRaw, "ATTACK_ARTIFACTS="+strconv.Itoa(attack.count),
		"ATTACK_FIRST="+attack.first.Format(time.RFC3339Nano), "ATTACK_LAST="+attack.last.Format(time.RFC3339Nano),
		"BEACON_INCIDENT="+beacon, "SENSORS="+strconv.Itoa(sensors),
		"TOKEN_ADMIN="+admin, "TOKEN_READER="+reader, "TOKEN_OTHER="+other, "TOKEN_SHORT="+short,
		"SHORT_EXPIRES="+strconv.FormatInt(shortExp.Unix()+1, 10))
}

// attack is what the largest brute force's artifacts say of it.
type attack struct {
	firstRaw    string // the line of its first attempt
	count       int
	first, last time.Time // its first and last event times
}

// attackOf reads the artifacts of the largest brute force from ip one by
// one, through the API's observations and artifacts by id.
func attackOf(t *testing.T, base, token, ip string) attack {
	t.Helper()
	type counted struct {
		ID            string `json:"id"`
		ArtifactCount int    `json:"artifact_count"`
	}
	var incs struct {
		Incidents []counted `json:"incidents"`
	}
	apiDo(t, "GET", base+"/v1/incidents?limit=1000&q="+url.QueryEscape("SSH brute force from "+ip+" "), token, nil, &incs)
	if len(incs.Incidents) == 0 {
		t.Fatalf("no brute force from %s", ip)
	}
	largest := slices.MaxFunc(incs.Incidents, func(a, b counted) int { return a.ArtifactCount - b.ArtifactCount })
	var inc struct {
		Observations []struct {
			ID string `json:"id"`
		} `json:"observations"`
	}
	apiDo(t, "GET", base+"/v1/incidents/"+largest.ID, token, nil, &inc)
	seen := map[string]bool{}
	var out attack
	for _, ref := range inc.Observations {
		var o struct {
			ArtifactIDs []string `json:"artifact_ids"`
		}
		apiDo(t, "GET", base+"/v1/observations/"+ref.ID, token, nil, &o)
		for _, id := range o.ArtifactIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			var a struct {
				Raw       string    `json:"raw"`
				Timestamp time.Time `json:"timestamp"`
			}
			apiDo(t, "GET", base+"/v1/artifacts/"+id, token, nil, &a)
			if out.firstRaw == "" || a.Timestamp.Before(out.first) {
				out.firstRaw, out.first = a.Raw, a.Timestamp
			}
			if a.Timestamp.After(out.last) {
				out.last = a.Timestamp
			}
		}
	}
	if out.count = len(seen); out.count != largest.ArtifactCount {
		t.Fatalf("the brute force's observations name %d artifacts, its count is %d", len(seen), largest.ArtifactCount)
	}
	return out
}

// served is a `vigil serve` of a data dir of its own (startServe) for a
// browser test, with the command that runs it and the tools that drive
// a browser (browserTools).
type served struct {
	t              *testing.T
	node, chromium string
	bin, data      string
	base           string
}

// serveForBrowser builds vigil and serves a fresh data dir with it, for
// a browser test.
func serveForBrowser(t *testing.T) *served {
	t.Helper()
	node, chromium := browserTools(t)
	dir := t.TempDir()
	bin := buildVigil(t, dir)
	data := filepath.Join(dir, "data")
	return &served{t: t, node: node, chromium: chromium, bin: bin, data: data, base: startServe(t, bin, data)}
}

// token mints a token of the server (mintToken).
func (s *served) token(ttl time.Duration, org string, perms ...string) string {
	s.t.Helper()
	return mintToken(s.t, s.bin, s.data, ttl, org, perms...)
}

// browse runs script of browser/ against the server (runBrowser, with
// BASE_URL set).
func (s *served) browse(script string, timeout time.Duration, env ...string) {
	s.t.Helper()
	runBrowser(s.t, s.node, s.chromium, script, timeout, append([]string{"BASE_URL=" + s.base}, env...)...)
}

// buildVigil builds the vigil command into dir and returns its path.
func buildVigil(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "vigil")
	build := exec.Command("go", "build", "-o", bin, "github.com/vigil-soc/vigil/cmd/vigil")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build vigil: %v\n%s", err, out)
	}
	return bin
}

// mintToken returns a token of alice in org with perms, valid for ttl,
// minted by `vigil token` for the server of data.
func mintToken(t *testing.T, bin, data string, ttl time.Duration, org string, perms ...string) string {
	t.Helper()
	args := []string{"token", "--data-dir", data, "--org", org, "--sub", "alice", "--ttl", ttl.String()}
	for _, p := range perms {
		args = append(args, "--permission", p)
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("vigil token: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// runBrowser runs script of browser/ with node, in an environment of env
// and SHOT_DIR (VIGIL_CONSOLE_SHOTS, or a temporary directory) and
// CHROMIUM, and fails the test when the script fails.
func runBrowser(t *testing.T, node, chromium, script string, timeout time.Duration, env ...string) {
	t.Helper()
	shots := os.Getenv("VIGIL_CONSOLE_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	shots, _ = filepath.Abs(shots)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = "browser"
	cmd.Env = append(append(os.Environ(), env...), "SHOT_DIR="+shots, "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	t.Logf("browser run of %s:\n%s", script, out)
	if err != nil {
		t.Fatalf("browser test %s failed: %v", script, err)
	}
}

// browserTools returns the paths of node and Chromium, failing the test
// when they or playwright-core are missing. A browser test does not run
// in -short.
func browserTools(t *testing.T) (node, chromium string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: not in -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is missing (apt-get install nodejs npm; .ci/run installs it)")
	}
	chromium, err = exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is missing (apt-get install chromium; .ci/run installs it)")
	}
	if _, err := os.Stat("browser/node_modules/playwright-core/package.json"); err != nil {
		t.Fatal("playwright-core is missing: run `npm ci` in internal/console/browser (.ci/run does)")
	}
	return node, chromium
}

// startServe runs `vigil serve` on a free port and waits for /readyz.
func startServe(t *testing.T, bin, data string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	geoip := filepath.Join("..", "..", "..", "shared", "datasets", "geoip")
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", data, "--metrics-addr", "", "--log-level", "warn",
		"--geoip-city-db", filepath.Join(geoip, "GeoLite2-City-Test.mmdb"), "--geoip-asn-db", filepath.Join(geoip, "GeoLite2-ASN-Test.mmdb"))
	cmd.Env = append(os.Environ(), "VIGIL_DATABASE_URL=", "VIGIL_NATS_URL=")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("vigil serve log:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("vigil serve not ready: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, sc.Text())
		}
	}
	return out
}

func apiDo(t *testing.T, method, url, token string, body any, out any) int {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(res.Body).Decode(&env); err == nil {
			json.Unmarshal(env.Data, out)
		}
	}
	return res.StatusCode
}

// ingest posts lines as artifacts of source.
func ingest(t *testing.T, base, token, source string, lines []string) {
	t.Helper()
	arts := make([]map[string]string, len(lines))
	for i, l := range lines {
		arts[i] = map[string]string{"source": source, "raw": l}
	}
	post(t, base, token, arts)
}

// post posts arts to /v1/artifacts, which must accept them.
func post(t *testing.T, base, token string, arts []map[string]string) {
	t.Helper()
	if st := apiDo(t, "POST", base+"/v1/artifacts", token, map[string]any{"artifacts": arts}, nil); st != http.StatusAccepted {
		t.Fatalf("POST /v1/artifacts: %d", st)
	}
}

// observe posts an observation, which must be created, and returns the
// incident it joined.
func observe(t *testing.T, base, token string, obs map[string]any) string {
	t.Helper()
	var o struct {
		IncidentID string `json:"incident_id"`
	}
	if st := apiDo(t, "POST", base+"/v1/observations", token, obs, &o); st != http.StatusCreated {
		t.Fatalf("POST /v1/observations: %d", st)
	}
	return o.IncidentID
}

// attacker waits until every line is stored and the incidents stop
// changing, and returns the address of the largest SSH brute force.
func attacker(t *testing.T, base, token string, n int) string {
	t.Helper()
	last, best := "", ""
	settle(t, 500*time.Millisecond, "artifacts and incidents", func() (string, bool) {
		var incs struct {
			Incidents []struct {
				Title         string `json:"title"`
				ArtifactCount int    `json:"artifact_count"`
			} `json:"incidents"`
			Total int `json:"total"`
		}
		stored := storedArtifacts(t, base, token)
		apiDo(t, "GET", base+"/v1/incidents?limit=1000&q=SSH+brute+force", token, nil, &incs)
		count := 0
		best = ""
		for _, i := range incs.Incidents {
			if i.ArtifactCount > count {
				best, count = i.Title, i.ArtifactCount
			}
		}
		state := fmt.Sprint(stored, incs.Total, best, count)
		done := stored == n && best != "" && state == last
		last = state
		return state, done
	})
	return strings.Fields(strings.TrimPrefix(best, "SSH brute force from "))[0]
}

// storedArtifacts is how many artifacts the org of token has stored.
func storedArtifacts(t *testing.T, base, token string) int {
	t.Helper()
	var arts struct {
		Total int `json:"total"`
	}
	apiDo(t, "GET", base+"/v1/artifacts?limit=1", token, nil, &arts)
	return arts.Total
}

// settle asks f every interval until it reports done, and fails the test
// with f's last state when 90 s have passed without.
func settle(t *testing.T, every time.Duration, what string, f func() (state string, done bool)) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		state, done := f()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not settled: %s", what, state)
		}
		time.Sleep(every) // polling the API, which has no event to wait for
	}
}
