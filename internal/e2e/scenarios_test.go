package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/client"
)

// TestScenariosScaleOut runs the correlation scenarios (the
// in-process versions are TestScenarioScripted in internal/detect) on the
// deployment of docs/operations.md: one API-only process and two worker
// processes sharing one PostgreSQL and one external NATS. Each scenario's
// lines go in batches of two or three, posted concurrently, so that one
// attacker's lines are split over both workers; the scenarios use distinct
// addresses and hours of event time, so they do not touch each other.
func TestScenariosScaleOut(t *testing.T) {
	d := startDeployment(t, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := &scenarios{api: d.apis[0], c: newClient(d.apis[0], d.token), workers: d.workers, acked: map[string]string{}}

	// Event times within the last day, so that the workers' housekeeping
	// (signals older than a day) can never prune them; one scenario every
	// three hours.
	base := time.Now().UTC().Truncate(time.Hour).Add(-14 * time.Hour)
	at := func(k int) time.Time { return base.Add(time.Duration(k) * 3 * time.Hour) }

	t.Run("ScanBruteForceAlertOneIncident", func(t *testing.T) {
		defer h.split(t, ctx)()
		t0 := at(0)
		src, dst := "203.0.113.50", "10.0.1.5"
		var arts []client.NewArtifact
		arts = append(arts, scScan(t0, src, dst, 25)...)
		arts = append(arts, scBruteForce(t0.Add(2*time.Minute), src, "web-01", 6)...)
		arts = append(arts, scArt("suricata", t0.Add(4*time.Minute), scEVEAlert(t0.Add(4*time.Minute), src, dst, 2019876,
			"ET EXPLOIT Possible OpenSSH Exploit Attempt", "Attempted Administrator Privilege Gain", 1)))
		want := len(arts) // 32
		h.send(t, ctx, arts)
		h.await(t, ctx, "one incident of scan, brute force and alert from "+src, func(incs []scIncident) bool {
			got := withValue(incs, src)
			return len(got) == 1 && got[0].ArtifactCount == want && len(got[0].types) == 3
		})
		incs := h.settled(t, ctx)
		got := withValue(incs, src)
		if len(got) != 1 {
			t.Fatalf("%d incidents hold %s, want exactly 1:\n%s", len(got), src, summary(incs))
		}
		inc := got[0]
		if !slices.Equal(inc.types, []string{"auth", "network", "recon"}) {
			t.Errorf("observation types %v, want auth, network, recon", inc.types)
		}
		if inc.Severity != "high" || inc.ArtifactCount != want || inc.Status != 1 ||
			inc.nodes[src] != "IP" || inc.nodes[dst] != "IP" || !strings.Contains(inc.Title, src) {
			t.Errorf("incident %s; want high, new, %d artifacts, IP nodes %s and %s, a title naming %s", inc, want, src, dst, src)
		}
		if n := len(withValue(incs, dst)); n != 1 {
			t.Errorf("%d incidents hold %s, want 1:\n%s", n, dst, summary(incs))
		}
	})

	t.Run("SeveralAttackersOfOneHost", func(t *testing.T) {
		defer h.split(t, ctx)()
		t0 := at(1)
		host := "web-02"
		srcs := []string{"203.0.113.7", "198.51.100.23", "192.0.2.200"}
		var arts []client.NewArtifact
		for i, src := range srcs {
			arts = append(arts, scBruteForce(t0.Add(time.Duration(i)*20*time.Second), src, host, 6)...)
		}
		byTime(arts) // the attackers' lines interleaved, so batches mix them
		h.send(t, ctx, arts)
		h.await(t, ctx, "one brute-force incident per attacker of "+host, func(incs []scIncident) bool {
			for _, src := range srcs {
				if got := withValue(incs, src); len(got) != 1 || got[0].ArtifactCount != 6 {
					return false
				}
			}
			return true
		})
		incs := h.settled(t, ctx)
		if n := len(withValue(incs, host)); n != len(srcs) {
			t.Errorf("%d incidents hold %s, want %d (one per attacker):\n%s", n, host, len(srcs), summary(incs))
		}
		seen := map[string]bool{}
		for _, src := range srcs {
			got := withValue(incs, src)
			if len(got) != 1 {
				t.Errorf("%d incidents hold %s, want exactly 1:\n%s", len(got), src, summary(incs))
				continue
			}
			inc := got[0]
			seen[inc.ID] = true
			if inc.ArtifactCount != 6 || inc.Severity != "medium" || !slices.Equal(inc.types, []string{"auth"}) ||
				inc.nodes[src] != "IP" || inc.nodes[host] != "Host" || inc.Title != "SSH brute force from "+src+" against "+host {
				t.Errorf("incident %s; want 6 artifacts, medium, one auth observation, IP %s and Host %s", inc, src, host)
			}
			for _, other := range srcs {
				if other != src && inc.has(other) {
					t.Errorf("incident of %s also holds attacker %s: %s", src, other, inc)
				}
			}
		}
		if len(seen) != len(srcs) {
			t.Errorf("the attackers share incidents: %d distinct for %d attackers", len(seen), len(srcs))
		}
	})

	t.Run("UnrelatedAttacksApart", func(t *testing.T) {
		defer h.split(t, ctx)()
		t0 := at(2)
		bf, scanner, alerter, dst := "203.0.113.77", "198.51.100.99", "192.0.2.44", "10.0.3.5"
		var arts []client.NewArtifact
		arts = append(arts, scBruteForce(t0, bf, "web-03", 6)...)
		arts = append(arts, scScan(t0, scanner, dst, 25)...)
		arts = append(arts, scArt("suricata", t0, scEVEAlert(t0, alerter, dst, 2001219, "ET SCAN Potential SSH Scan", "Attempted Information Leak", 2)))
		byTime(arts)
		h.send(t, ctx, arts)
		want := []struct {
			src       string
			artifacts int
			types     []string
		}{{bf, 6, []string{"auth"}}, {scanner, 25, []string{"recon"}}, {alerter, 1, []string{"recon"}}}
		h.await(t, ctx, "three unrelated incidents", func(incs []scIncident) bool {
			for _, w := range want {
				if got := withValue(incs, w.src); len(got) != 1 || got[0].ArtifactCount != w.artifacts {
					return false
				}
			}
			return true
		})
		incs := h.settled(t, ctx)
		seen := map[string]bool{}
		for _, w := range want {
			got := withValue(incs, w.src)
			if len(got) != 1 {
				t.Errorf("%d incidents hold %s, want exactly 1:\n%s", len(got), w.src, summary(incs))
				continue
			}
			inc := got[0]
			seen[inc.ID] = true
			if inc.ArtifactCount != w.artifacts || !slices.Equal(inc.types, w.types) {
				t.Errorf("incident of %s: %s; want %d artifacts, types %v", w.src, inc, w.artifacts, w.types)
			}
			for _, o := range want {
				if o.src != w.src && inc.has(o.src) {
					t.Errorf("incident of %s also holds %s: %s", w.src, o.src, inc)
				}
			}
		}
		if len(seen) != len(want) {
			t.Errorf("unrelated attacks share incidents: %d distinct for %d attackers:\n%s", len(seen), len(want), summary(incs))
		}
		if n := len(withValue(incs, dst)); n != 2 {
			t.Errorf("%d incidents hold the target %s, want 2 (the scan's and the alert's, apart):\n%s", n, dst, summary(incs))
		}
	})

	t.Run("ClosedIncidentDoesNotGrow", func(t *testing.T) {
		defer h.split(t, ctx)()
		t0 := at(3)
		src, host := "203.0.113.99", "web-04"
		h.send(t, ctx, scBruteForce(t0, src, host, 6))
		h.await(t, ctx, "the first brute force of "+src, func(incs []scIncident) bool {
			got := withValue(incs, src)
			return len(got) == 1 && got[0].ArtifactCount == 6
		})
		first := withValue(h.settled(t, ctx), src)
		if len(first) != 1 {
			t.Fatalf("%d incidents hold %s, want 1", len(first), src)
		}
		closed := first[0]
		h.setStatus(t, ctx, closed.ID, 4) // Closed (false positive)

		// The attacker goes on two minutes later, inside the first burst's
		// span: three failures alone are no new burst, and the closed
		// incident takes nothing.
		h.send(t, ctx, scBruteForce(t0.Add(2*time.Minute), src, host, 3))
		incs := h.settled(t, ctx)
		if got := withValue(incs, src); len(got) != 1 || got[0].ID != closed.ID || got[0].ArtifactCount != 6 || got[0].Status != 4 {
			t.Fatalf("after 3 more failures: want only the closed incident %s, unchanged with 6 artifacts:\n%s", closed.ID, summary(got))
		}
		// Three more a minute later: a new burst of six, a new incident.
		h.send(t, ctx, scBruteForce(t0.Add(3*time.Minute), src, host, 3))
		h.await(t, ctx, "a new incident for the later failures of "+src, func(incs []scIncident) bool {
			return len(withValue(incs, src)) == 2
		})
		incs = h.settled(t, ctx)
		got := withValue(incs, src)
		if len(got) != 2 {
			t.Fatalf("%d incidents hold %s, want the closed one and a new one:\n%s", len(got), src, summary(incs))
		}
		var old, fresh scIncident
		for _, inc := range got {
			if inc.ID == closed.ID {
				old = inc
			} else {
				fresh = inc
			}
		}
		if old.ID == "" || old.ArtifactCount != 6 || old.Status != 4 || old.NodeCount != closed.NodeCount {
			t.Errorf("closed incident now %s, want %s unchanged with 6 artifacts", old, closed)
		}
		if fresh.ArtifactCount != 6 || fresh.Status != 1 || fresh.nodes[src] != "IP" || !slices.Equal(fresh.types, []string{"auth"}) {
			t.Errorf("new incident %s, want the 6 later failures, status 1, one auth observation, with %s", fresh, src)
		}
	})

	// Once everything is processed: exactly the incidents above, none
	// merged away (a merge would mean that two incidents had been opened
	// for what is one), and both workers took part.
	incs := h.settled(t, ctx)
	if len(incs) != 1+3+3+2 || len(h.merged) > 0 {
		t.Errorf("%d incidents and %d merged ones, want 9 and none:\n%s", len(incs), len(h.merged), summary(append(incs, h.merged...)))
	}
	p1, p2 := processed(t, ctx, d.workers[0]), processed(t, ctx, d.workers[1])
	if p1 == 0 || p2 == 0 || p1+p2 < float64(len(h.acked)) {
		t.Errorf("workers processed %.0f and %.0f artifacts of %d; want both to take part", p1, p2, len(h.acked))
	}
	t.Logf("%d artifacts in %d posts; worker-1 processed %.0f, worker-2 %.0f; %d incidents:\n%s",
		len(h.acked), h.posts, p1, p2, len(incs), summary(incs))
}

// scenarios is the shared state of TestScenariosScaleOut's subtests.
type scenarios struct {
	api     *proc
	c       *client.Client
	workers []*proc
	mu      sync.Mutex
	acked   map[string]string // id → raw of every artifact accepted
	posts   int
	merged  []scIncident // of the last listing
}

// split returns a function that logs how many artifacts each worker
// processed since split was called.
func (h *scenarios) split(t *testing.T, ctx context.Context) func() {
	t.Helper()
	before := make([]float64, len(h.workers))
	for i, w := range h.workers {
		before[i] = processed(t, ctx, w)
	}
	return func() {
		var parts []string
		for i, w := range h.workers {
			parts = append(parts, fmt.Sprintf("%s %.0f", w.name, processed(t, ctx, w)-before[i]))
		}
		t.Logf("artifacts processed: %s", strings.Join(parts, ", "))
	}
}

// send posts arts in batches of two and three, four posts at a time,
// and fails the test unless every batch is accepted.
func (h *scenarios) send(t *testing.T, ctx context.Context, arts []client.NewArtifact) {
	t.Helper()
	var batches [][]client.NewArtifact
	for i := 0; len(arts) > 0; i++ {
		n := min(2+i%2, len(arts))
		batches = append(batches, arts[:n])
		arts = arts[n:]
	}
	ch := make(chan []client.NewArtifact)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for b := range ch {
				for {
					r, err := h.c.PostArtifacts(ctx, b)
					if err != nil {
						t.Errorf("post: %v", err)
						break
					}
					if r.Status == http.StatusTooManyRequests {
						time.Sleep(500 * time.Millisecond) // honouring Retry-After
						continue
					}
					if r.Status != http.StatusAccepted || r.Accepted != len(b) || len(r.IDs) != len(b) {
						t.Errorf("post: status %d accepted %d of %d: %s", r.Status, r.Accepted, len(b), r.Body)
						break
					}
					h.mu.Lock()
					h.posts++
					for j, id := range r.IDs {
						h.acked[id] = b[j].Raw
					}
					h.mu.Unlock()
					break
				}
			}
		})
	}
	for _, b := range batches {
		ch <- b
	}
	close(ch)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// await polls the live incidents until done holds.
func (h *scenarios) await(t *testing.T, ctx context.Context, what string, done func([]scIncident) bool) {
	t.Helper()
	pollUntil(t, storeTimeout, what, func() (string, bool) {
		incs, err := h.incidents(ctx)
		if err != nil {
			return err.Error(), false
		}
		return "\n" + summary(incs), done(incs)
	})
}

// settled waits until every accepted artifact is stored and the queue is
// empty — every message acknowledged, which a worker does once the
// message's detections and correlation are committed — and returns the
// live incidents then.
func (h *scenarios) settled(t *testing.T, ctx context.Context) []scIncident {
	t.Helper()
	awaitStored(t, ctx, h.api, h.c, h.acked)
	stored := time.Now()
	pollUntil(t, storeTimeout, "empty queue", func() (float64, bool) {
		depth, err := metric(ctx, h.api, "vigil_queue_depth")
		if err != nil {
			return -1, false
		}
		// The API caches the backlog for 250 ms: only a reading it took
		// after everything was stored counts.
		return depth, depth == 0 && time.Since(stored) > 300*time.Millisecond
	})
	incs, err := h.incidents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return incs
}

// setStatus sets an incident's status through the API.
func (h *scenarios) setStatus(t *testing.T, ctx context.Context, id string, status int) {
	t.Helper()
	inc, err := h.c.SetIncidentStatus(ctx, id, status)
	if err != nil {
		t.Fatalf("PUT status %d of %s: %v", status, id, err)
	}
	if inc.ID != id || inc.Status != status {
		t.Fatalf("PUT status %d of %s: the reply shows %s with status %d", status, id, inc.ID, inc.Status)
	}
}

// scIncident is an incident with its nodes and observation types, as
// GET /v1/incidents/{id} shows it.
type scIncident struct {
	*vigil.Incident
	types []string          // observation types, sorted
	nodes map[string]string // value → type
}

func (i scIncident) has(value string) bool { _, ok := i.nodes[value]; return ok }

func (i scIncident) String() string {
	var nodes []string
	for v, typ := range i.nodes {
		nodes = append(nodes, typ+":"+v)
	}
	sort.Strings(nodes)
	merged := ""
	if i.MergedInto != nil {
		merged = " merged into " + *i.MergedInto
	}
	return fmt.Sprintf("%s status %d %s, %d artifacts, %d nodes %v, observations %v, %q%s",
		i.ID, i.Status, i.Severity, i.ArtifactCount, i.NodeCount, nodes, i.types, i.Title, merged)
}

// incidents returns the org's live incidents with their details; the
// merged ones go to h.merged.
func (h *scenarios) incidents(ctx context.Context) ([]scIncident, error) {
	list, err := h.c.Incidents(ctx, 1000, 0)
	if err != nil {
		return nil, err
	}
	if list.Total != len(list.Incidents) {
		return nil, fmt.Errorf("GET /v1/incidents listed %d of %d", len(list.Incidents), list.Total)
	}
	var live, merged []scIncident
	for _, s := range list.Incidents {
		one, err := h.c.Incident(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		inc := scIncident{Incident: one, nodes: map[string]string{}}
		for _, n := range inc.Nodes {
			inc.nodes[n.Value] = n.Type
		}
		for _, o := range inc.Observations {
			inc.types = append(inc.types, o.Type)
		}
		sort.Strings(inc.types)
		if inc.MergedInto != nil {
			merged = append(merged, inc)
		} else {
			live = append(live, inc)
		}
	}
	h.mu.Lock()
	h.merged = merged
	h.mu.Unlock()
	return live, nil
}

// withValue returns the incidents that have a node of value.
func withValue(incs []scIncident, value string) []scIncident {
	var out []scIncident
	for _, i := range incs {
		if i.has(value) {
			out = append(out, i)
		}
	}
	return out
}

func summary(incs []scIncident) string {
	var b strings.Builder
	for _, i := range incs {
		fmt.Fprintf(&b, "  %s\n", i)
	}
	return b.String()
}

// byTime sorts artifacts by timestamp, keeping the order of equal ones.
func byTime(arts []client.NewArtifact) {
	slices.SortStableFunc(arts, func(a, b client.NewArtifact) int { return strings.Compare(a.Timestamp, b.Timestamp) })
}

// Log lines, in the formats of internal/detect's scenario tests, each an
// artifact with its event time as an explicit timestamp.

func scArt(source string, at time.Time, raw string) client.NewArtifact {
	return client.NewArtifact{Source: source, Raw: raw, Timestamp: at.UTC().Format(time.RFC3339)}
}

// scBruteForce is n failed SSH logins from src on host, 10 s apart.
func scBruteForce(start time.Time, src, host string, n int) []client.NewArtifact {
	var out []client.NewArtifact
	for i := range n {
		at := start.Add(time.Duration(i) * 10 * time.Second)
		out = append(out, scArt("auth", at, fmt.Sprintf("%s %s sshd[%d]: Failed password for %s from %s port %d ssh2",
			at.Format(time.Stamp), host, 1000+at.Second(), fmt.Sprintf("user%d", i%3), src, 40000+at.Second())))
	}
	return out
}

// scScan is a firewall's denials of src's probes of ports distinct ports
// of dst, a second apart.
func scScan(start time.Time, src, dst string, ports int) []client.NewArtifact {
	var out []client.NewArtifact
	for i := range ports {
		at := start.Add(time.Duration(i) * time.Second)
		out = append(out, scArt("firewall", at, fmt.Sprintf("%s fw-01 kernel: [UFW BLOCK] IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 SRC=%s DST=%s LEN=44 TOS=0x00 PREC=0x00 TTL=45 ID=54321 PROTO=TCP SPT=61000 DPT=%d WINDOW=1024 RES=0x00 SYN URGP=0",
			at.Format(time.Stamp), src, dst, 20+i*7)))
	}
	return out
}

// scEVEAlert is a Suricata EVE alert of src against dst's SSH port.
func scEVEAlert(at time.Time, src, dst string, sid int, sig, category string, severity int) string {
	return fmt.Sprintf(`{"timestamp":"%s","flow_id":1234,"in_iface":"eth0","event_type":"alert","src_ip":"%s","src_port":61000,"dest_ip":"%s","dest_port":22,"proto":"TCP","alert":{"action":"allowed","gid":1,"signature_id":%d,"rev":3,"signature":"%s","category":"%s","severity":%d}}`,
		at.Format("2006-01-02T15:04:05.000000-0700"), src, dst, sid, sig, category, severity)
}
