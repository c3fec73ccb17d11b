package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// vigilBin is the binary under test, built once by TestMain.
var vigilBin string

// startTimeout bounds how long a child may take to start listening and
// report ready on /readyz.
const startTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "vigil-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	vigilBin = filepath.Join(dir, "vigil")
	build := exec.Command("go", "build", "-o", vigilBin, "github.com/vigil-soc/vigil/cmd/vigil")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build vigil:", err)
		return 1
	}
	return m.Run()
}

// childEnv is this process's environment without VIGIL_* settings, so
// that a developer's shell does not configure the children.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VIGIL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// child is a process of the test's own (vigil, nats-server), its output
// kept and its exit watched.
type child struct {
	name   string
	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{} // closed once the child has exited
	err    error         // of cmd.Wait, set before exited is closed
}

// startChild starts cmd, its output written to logs.
func startChild(t testing.TB, name string, cmd *exec.Cmd, logs *logBuffer) *child {
	t.Helper()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c := &child{name: name, cmd: cmd, logs: logs, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	return c
}

// proc is a running `vigil serve` or `vigil worker` child.
type proc struct {
	*child
	base string // http://host:port
	// metrics is where its /metrics is: a serve's --metrics-addr (the
	// harness gives each its own port), a worker's --addr.
	metrics string
}

// startVigil runs `vigil serve` on dataDir with a port the kernel picks,
// and returns once /readyz answers 200. The child is killed when the test
// ends, and its log printed if the test failed.
func startVigil(t testing.TB, name, dataDir string, args ...string) *proc {
	t.Helper()
	return startProcess(t, name, "serve", dataDir, nil, args...)
}

// launch starts `vigil <sub>` (serve or worker) with extra environment
// variables, and waits until it listens (not until it is ready).
func launch(t testing.TB, name, sub, dataDir string, env []string, args ...string) *proc {
	t.Helper()
	argv := append([]string{sub, "--addr", "127.0.0.1:0", "--data-dir", dataDir}, args...)
	if sub == "serve" && !slices.Contains(args, "--metrics-addr") {
		argv = append(argv, "--metrics-addr", "127.0.0.1:0")
	}
	logs := newLogBuffer()
	cmd := exec.Command(vigilBin, argv...)
	cmd.Env = childEnv(env...)
	p := &proc{child: startChild(t, name, cmd, logs)}
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			t.Logf("--- log of %s (vigil %s), last lines:\n%s", name, strings.Join(argv, " "), logs.tail(150))
		}
	})
	t.Logf("%s: vigil %s (pid %d)", name, strings.Join(argv, " "), cmd.Process.Pid)

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case addr := <-logs.listening:
		p.base = "http://" + addr
		p.metrics = p.base
		if m := logs.metricsAddr(); m != "" {
			p.metrics = "http://" + m
		}
	case <-p.exited:
		t.Fatalf("%s exited before listening: %v", name, p.err)
	case <-deadline.C:
		t.Fatalf("%s did not log its listen address within %v", name, startTimeout)
	}
	return p
}

// startProcess starts `vigil <sub>` (serve or worker) with extra
// environment variables, and waits until it is ready.
func startProcess(t testing.TB, name, sub, dataDir string, env []string, args ...string) *proc {
	t.Helper()
	p := launch(t, name, sub, dataDir, env, args...)
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	probe := client.New(p.base, "", &http.Client{Timeout: 2 * time.Second})
	for {
		_, err := probe.Ready(context.Background())
		if err == nil {
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited before ready: %v", p.name, p.err)
		case <-deadline.C:
			t.Fatalf("%s not ready within %v (last: %v)", p.name, startTimeout, err)
		case <-time.After(50 * time.Millisecond): // polling /readyz
		}
	}
}

// kill SIGKILLs the child (if still running) and waits for it to be gone.
func (c *child) kill(t testing.TB) {
	t.Helper()
	select {
	case <-c.exited:
		return
	default:
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill %s: %v", c.name, err)
	}
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("%s still running 10s after SIGKILL", c.name)
	}
}

// terminate sends SIGTERM and waits up to limit for the child to exit. It
// returns how long the exit took and the exit error (nil for status 0).
func (c *child) terminate(t *testing.T, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", c.name, err)
	}
	select {
	case <-c.exited:
		return time.Since(start), c.err
	case <-time.After(limit):
		t.Fatalf("%s still running %v after SIGTERM", c.name, limit)
		return 0, nil
	}
}

// mintToken runs `vigil token` on dataDir, which signs with the secret the
// server generated there.
func mintToken(t testing.TB, dataDir, org string, perms ...string) string {
	t.Helper()
	args := []string{"token", "--data-dir", dataDir, "--org", org, "--sub", "e2e", "--ttl", "1h"}
	for _, p := range perms {
		args = append(args, "--permission", p)
	}
	cmd := exec.Command(vigilBin, args...)
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("vigil token: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// logBuffer keeps a child's output and reports the address from its
// "listening" log line.
type logBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	partial   []byte
	listening chan string
	found     bool
	metrics   string // address of the metrics listener, once logged
}

func (b *logBuffer) metricsAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.metrics
}

func newLogBuffer() *logBuffer { return &logBuffer{listening: make(chan string, 1)} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.found {
		return len(p), nil
	}
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(b.partial[:i], &rec) == nil && rec.Msg == "metrics listening" && rec.Addr != "" {
			b.metrics = rec.Addr // logged before the API's line
		}
		if json.Unmarshal(b.partial[:i], &rec) == nil && rec.Msg == "listening" && rec.Addr != "" {
			b.found = true
			b.partial = nil
			b.listening <- rec.Addr
			break
		}
		b.partial = b.partial[i+1:]
	}
	return len(p), nil
}

// tail returns the last n lines.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// count returns how many lines contain s.
func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}
