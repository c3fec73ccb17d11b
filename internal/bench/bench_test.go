package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is enough of Vigil's API for a run with --url: it takes every
// batch (the first with a 429), counts the artifacts as stored at once,
// and serves the metrics the report reads.
type fakeServer struct {
	mu       sync.Mutex
	posts    int
	stored   int
	stamps   map[string]bool // timestamps posted
	throttle bool
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.Method + " " + r.URL.Path {
	case "POST /v1/artifacts":
		f.posts++
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if f.throttle {
			f.throttle = false
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"success":false,"message":"slow down","error":{"code":"rate_limited","details":[]}}`)
			return
		}
		var b struct {
			Artifacts []struct{ Source, Raw, Timestamp string }
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for _, a := range b.Artifacts {
			f.stamps[a.Timestamp] = true
		}
		f.stored += len(b.Artifacts)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"success":true,"message":"","data":{"accepted":%d,"rejected":0,"ids":[],"errors":[]}}`, len(b.Artifacts))
	case "GET /v1/artifacts":
		fmt.Fprintf(w, `{"success":true,"message":"","data":{"artifacts":[],"total":%d,"limit":1,"offset":0}}`, f.stored)
	case "GET /metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vigil_queue_depth gauge\nvigil_queue_depth 0\n"+
			"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 1.048576e+08\n"+
			"# TYPE vigil_artifacts_parsed_total counter\nvigil_artifacts_parsed_total %d\n"+
			"# TYPE vigil_http_requests_total counter\nvigil_http_requests_total{status=\"202\"} %d\n", f.stored, f.posts)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestRunAgainstURL runs the load phase against a server given by --url:
// a 429 is retried with the same batch, every accepted artifact is
// counted, each batch carries its send time, and the report has no
// problem.
func TestRunAgainstURL(t *testing.T) {
	f := &fakeServer{stamps: map[string]bool{}, throttle: true}
	srv := httptest.NewServer(f)
	defer srv.Close()
	rep := runAgainst(t, srv.URL, "vigil bench --url …", func(c *Config) { c.Duration = 300 * time.Millisecond })
	l := rep.Load
	f.mu.Lock()
	defer f.mu.Unlock()
	if rep.Target != srv.URL || rep.Command != "vigil bench --url …" || rep.Settings.Lines != 20000 {
		t.Errorf("target %q, command %q, lines %d", rep.Target, rep.Command, rep.Settings.Lines)
	}
	if l.Throttled != 1 || l.Requests != int64(f.posts) || l.Accepted != int64(f.stored) || l.Accepted != (l.Requests-1)*50 {
		t.Errorf("requests %d (server: %d), 429s %d, accepted %d (server: %d)", l.Requests, f.posts, l.Throttled, l.Accepted, f.stored)
	}
	if !l.Searchable || l.TotalAfter != l.Accepted || l.Parsed != float64(l.Accepted) || l.RSSEndBytes != 100<<20 {
		t.Errorf("searchable %v, total %d, parsed %v, RSS %v", l.Searchable, l.TotalAfter, l.Parsed, l.RSSEndBytes)
	}
	if len(rep.Problems) != 0 || l.Errors != 0 {
		t.Errorf("problems %q, errors %v", rep.Problems, l.ErrorKinds)
	}
	if f.stamps[timePlaceholder] || f.stamps[""] {
		t.Errorf("a batch went out without its send time: %v", f.stamps)
	}
}

// TestRunUntilArtifacts: with --artifacts the load ends once that many
// are accepted, whatever --duration says, so that the ways in compare at
// equal work.
func TestRunUntilArtifacts(t *testing.T) {
	srv := httptest.NewServer(&fakeServer{stamps: map[string]bool{}})
	defer srv.Close()
	rep := runAgainst(t, srv.URL, "vigil bench --artifacts 1000", func(c *Config) { c.Duration, c.Artifacts = time.Hour, 1000 })
	// Each client stops before its next batch once 1000 are in: at most
	// one batch per client beyond.
	if a := rep.Load.Accepted; a < 1000 || a > 1000+2*50 || rep.Settings.Artifacts != 1000 {
		t.Errorf("accepted %d, settings.artifacts %d: want 1000..1100 and 1000", a, rep.Settings.Artifacts)
	}
	if !rep.Load.Searchable || len(rep.Problems) != 0 {
		t.Errorf("searchable %v, problems %q", rep.Load.Searchable, rep.Problems)
	}
}

// runAgainst runs the bench against the server at url with 2 clients
// posting batches of 50 synthetic lines, as set then changed by set,
// and returns its JSON report.
func runAgainst(t *testing.T, url, command string, set func(*Config)) Report {
	t.Helper()
	var cfg Config
	cfg.FlagSet(io.Discard) // the defaults, then:
	cfg.URL, cfg.Token, cfg.Clients, cfg.Batch = url, "tok", 2, 50
	cfg.Files, cfg.JSON, cfg.StorageLimit, cfg.SearchableTimeout = "synthetic", "-", false, 10*time.Second
	set(&cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Run(ctx, cfg, Options{Command: command, Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	return rep
}

func TestEncodeBodies(t *testing.T) {
	for _, times := range []string{"live", "original"} {
		t.Run(times, func(t *testing.T) {
			b := &bench{f: Config{Batch: 2, Times: times}, lines: []line{{"auth", "a"}, {"dns", `"b"`}, {"firewall", "c"}}}
			if _, err := b.encodeBodies(); err != nil {
				t.Fatal(err)
			}
			if len(b.bodies) != 2 || len(b.sent) != 2 || b.spans[1] != [2]int{2, 2} {
				t.Fatalf("%d bodies, spans %v", len(b.bodies), b.spans)
			}
			var got struct {
				Artifacts []struct{ Source, Raw, Timestamp string }
			}
			if err := json.Unmarshal(b.stamp(b.bodies[1]), &got); err != nil {
				t.Fatal(err)
			}
			// The second body wraps around to the first line.
			if len(got.Artifacts) != 2 || got.Artifacts[0].Raw != "c" || got.Artifacts[1].Raw != "a" || got.Artifacts[1].Source != "auth" {
				t.Errorf("second body %+v", got.Artifacts)
			}
			ts := got.Artifacts[0].Timestamp
			if times == "original" && ts != "" {
				t.Errorf("--times original sent timestamp %q", ts)
			}
			if at, err := time.Parse(time.RFC3339, ts); times == "live" && (err != nil || time.Since(at) > time.Minute) {
				t.Errorf("--times live sent timestamp %q", ts)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	var ok Config
	ok.FlagSet(io.Discard) // the defaults
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, change := range map[string]func(*Config){
		"no client":                       func(c *Config) { c.Clients = 0 },
		"batch too big":                   func(c *Config) { c.Batch = 10001 },
		"no duration":                     func(c *Config) { c.Duration = 0 },
		"url, no token":                   func(c *Config) { c.URL = "http://127.0.0.1:1" },
		"times":                           func(c *Config) { c.Times = "now" },
		"fsync":                           func(c *Config) { c.Fsync = "sometimes" },
		"batch is empty":                  func(c *Config) { c.Batch = 0 },
		"fill":                            func(c *Config) { c.Fill = -1 },
		"fill, url":                       func(c *Config) { c.Fill, c.URL, c.Token = 10, "http://127.0.0.1:1", "t" },
		"data dir, url":                   func(c *Config) { c.DataDir, c.URL, c.Token = "d", "http://127.0.0.1:1", "t" },
		"fill days":                       func(c *Config) { c.FillDays = 0 },
		"artifacts":                       func(c *Config) { c.Artifacts = -1 },
		"cpuprofile-every, no cpuprofile": func(c *Config) { c.CPUProfileEvery = time.Minute },
		"cpuprofile-every":                func(c *Config) { c.CPUProfile, c.CPUProfileEvery = "p", -time.Second },
	} {
		c := ok
		change(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--") {
			t.Errorf("%s: %v, want an error naming the flag", name, err)
		}
	}
}

func TestRedactArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"--duration 20s --clients 4", "--duration 20s --clients 4"},
		{"--database-url postgres://u:secret@db:5432/v?sslmode=disable --clients 4", "--database-url postgres://u:****@db:5432/v?sslmode=disable --clients 4"},
		{"--database-url=postgres://u:secret@db/v", "--database-url=postgres://u:****@db/v"},
		{"-nats-url nats://tok@127.0.0.1:4222", "-nats-url nats://****@127.0.0.1:4222"},
		{"--artifacts-url http://u:secret@vl:9428 --artifacts-storage=http://u:secret@vl-1:9428,http://vl-2:9428",
			"--artifacts-url http://****@vl:9428 --artifacts-storage=http://****@vl-1:9428,http://vl-2:9428"},
		{"--token eyJhbGci.x.y --metrics-token=abc", "--token **** --metrics-token=****"},
		{"--url http://127.0.0.1:8080 --token", "--url http://127.0.0.1:8080 --token"},
	} {
		if got := strings.Join(RedactArgs(strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("RedactArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
