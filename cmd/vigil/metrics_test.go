package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// addrOf returns the addr of the first log line with message msg.
func addrOf(t *testing.T, log, msg string) string {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == msg && rec.Addr != "" {
			return rec.Addr
		}
	}
	t.Fatalf("no %q line with an addr in the log:\n%s", msg, log)
	return ""
}

// get returns the status of GET url, with a bearer token if not empty.
func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && strings.HasSuffix(url, "/metrics") && !strings.Contains(string(body), "vigil_") {
		t.Errorf("GET %s: 200 without Vigil's metrics", url)
	}
	return resp.StatusCode
}

// TestMetricsEndpoint: /metrics (global counts by source and route, of
// every org) is not on the API's address unless asked for (--metrics-addr
// api); by default it has a listener of its own on the loopback; with
// --metrics-token it needs that bearer token; "" turns it off.
func TestMetricsEndpoint(t *testing.T) {
	const token = "metrics-token-0123456789"
	for _, tc := range []struct {
		name  string
		args  []string
		onAPI bool   // /metrics served by the API listener
		own   bool   // by a listener of its own
		token string // required
	}{
		{name: "own address", args: []string{"--metrics-addr", "127.0.0.1:0"}, own: true},
		{name: "own address with a token", args: []string{"--metrics-addr", "127.0.0.1:0", "--metrics-token", token}, own: true, token: token},
		{name: "API address when asked", args: []string{"--metrics-addr", "api", "--metrics-token", token}, onAPI: true, token: token},
		{name: "off", args: []string{"--metrics-addr", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serveUntil(t, `"msg":"listening"`, func(log string) {
				api := "http://" + addrOf(t, log, "listening")
				if got := get(t, api+"/healthz", ""); got != 200 {
					t.Errorf("API /healthz: %d", got)
				}
				want := map[bool]int{true: 200, false: 404}[tc.onAPI]
				if tc.onAPI && tc.token != "" {
					if got := get(t, api+"/metrics", ""); got != 401 {
						t.Errorf("API /metrics without the token: %d, want 401", got)
					}
					if got := get(t, api+"/metrics", "wrong-token-0123456789"); got != 401 {
						t.Errorf("API /metrics with a wrong token: %d, want 401", got)
					}
				}
				if got := get(t, api+"/metrics", tc.token); got != want {
					t.Errorf("API /metrics: %d, want %d", got, want)
				}
				if !tc.own {
					if strings.Contains(log, `"msg":"metrics listening"`) {
						t.Errorf("a metrics listener started:\n%s", log)
					}
					return
				}
				m := "http://" + addrOf(t, log, "metrics listening")
				if tc.token != "" {
					if got := get(t, m+"/metrics", ""); got != 401 {
						t.Errorf("/metrics without the token: %d, want 401", got)
					}
				}
				if got := get(t, m+"/metrics", tc.token); got != 200 {
					t.Errorf("/metrics: %d, want 200", got)
				}
				if got := get(t, m+"/v1/incidents", tc.token); got != 404 {
					t.Errorf("the metrics listener serves the API: /v1/incidents %d", got)
				}
			}, nil, append([]string{"--data-dir", t.TempDir(), "--workers", "0"}, tc.args...)...)
		})
	}
}

// TestMetricsDefaults: vigil serve's metrics listen on the loopback by
// default; a metrics token shorter than 16 bytes is refused; and a
// worker's /metrics takes the token too.
func TestMetricsDefaults(t *testing.T) {
	fs := newFlagSet("serve", "", io.Discard)
	var c config
	c.flags(fs)
	if f := fs.Lookup("metrics-addr"); f == nil || f.DefValue != "127.0.0.1:9464" {
		t.Errorf("--metrics-addr default: %v, want 127.0.0.1:9464", f)
	}
	_, _, err := runCmd(t, nil, "serve", "--data-dir", t.TempDir(), "--metrics-token", "short")
	if err == nil || !strings.Contains(err.Error(), "--metrics-token") {
		t.Errorf("a 5-byte metrics token: %v, want an error naming --metrics-token", err)
	}
	const token = "metrics-token-0123456789"
	runUntil(t, "worker", `"msg":"listening"`, func(log string) {
		m := "http://" + addrOf(t, log, "listening")
		if got := get(t, m+"/metrics", ""); got != 401 {
			t.Errorf("worker /metrics without the token: %d, want 401", got)
		}
		if got := get(t, m+"/metrics", token); got != 200 {
			t.Errorf("worker /metrics: %d, want 200", got)
		}
		if got := get(t, m+"/healthz", ""); got != 200 {
			t.Errorf("worker /healthz: %d, want 200", got)
		}
	}, nil, "--data-dir", t.TempDir(), "--metrics-token", token)
}

// TestTwoInstancesDefaultFlags: two vigil serve on one host, each with
// its own --addr and data dir and every other flag left at its default,
// both start. The default --metrics-addr is one fixed port: the first
// takes it (unless something else on the host holds it), and an instance
// that cannot have it runs without a metrics listener and says why. An
// address the operator gave stays a requirement.
func TestTwoInstancesDefaultFlags(t *testing.T) {
	const warning = `"msg":"metrics not served`
	serveUntil(t, `"msg":"listening"`, func(first string) {
		serveUntil(t, `"msg":"listening"`, func(second string) {
			for name, log := range map[string]string{"first": first, "second": second} {
				serving := strings.Contains(log, `"msg":"metrics listening"`)
				if serving == strings.Contains(log, warning) {
					t.Errorf("the %s instance neither serves its metrics nor says why it does not (or both):\n%s", name, log)
				}
				if strings.Contains(log, warning) && !strings.Contains(log, "--metrics-addr") {
					t.Errorf("the %s instance's warning does not name --metrics-addr:\n%s", name, log)
				}
			}
			if strings.Contains(second, `"msg":"metrics listening"`) {
				t.Errorf("the second instance listens on the default metrics address the first holds:\n%s", second)
			}
		}, nil, "--data-dir", t.TempDir(), "--workers", "0")
	}, nil, "--data-dir", t.TempDir(), "--workers", "0")

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, env := range []map[string]string{nil, {"VIGIL_METRICS_ADDR": taken.Addr().String()}} {
		args := []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workers", "0"}
		if env == nil {
			args = append(args, "--metrics-addr", taken.Addr().String())
		}
		if _, _, err := runCmd(t, env, args...); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
			t.Errorf("a --metrics-addr given (env %v) and taken: %v, want an error naming --metrics-addr", env, err)
		}
	}
}
