// Package vltest runs a real VictoriaLogs cluster on loopback for tests:
// storage nodes and a front (victoria-logs with -storageNode=…), each a
// process of the victoria-logs binary on free ports in temporary
// directories, killed when the test ends. Single nodes can be stopped,
// killed (SIGKILL) and started again on the same port and data.
//
// The binary is $VIGIL_TEST_VLOGS_BIN, else victoria-logs on PATH. When
// neither exists, tests that need it are skipped with a message, unless
// VIGIL_TEST_VLOGS is set (as .ci/run sets it): then they fail.
package vltest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the VictoriaLogs release the tests and .ci/run use.
const Version = "v1.52.1"

// Binary returns the victoria-logs binary, or skips (fails, when
// VIGIL_TEST_VLOGS is set) t when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("VIGIL_TEST_VLOGS_BIN")
	if bin == "" {
		bin = "victoria-logs"
	}
	path, err := exec.LookPath(bin)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("VictoriaLogs binary %q not found (%v); install it with\n"+
		"  GOBIN=/usr/local/bin go install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@%s\n"+
		"or set VIGIL_TEST_VLOGS_BIN to its path", bin, err, Version)
	if os.Getenv("VIGIL_TEST_VLOGS") != "" {
		t.Fatal(msg + " (VIGIL_TEST_VLOGS is set: these tests must run)")
	}
	t.Skip(msg)
	return ""
}

// StorageFlags are the flags every storage node runs with (the
// deployment in docs/operations.md): artifacts keep their timestamps
// from 1970 to 2120, and an entry may be as large as VictoriaLogs allows.
var StorageFlags = []string{"-retentionPeriod=100y", "-futureRetention=100y", "-insert.maxLineSizeBytes=16MiB", "-internaldelete.enable"}

// FrontFlags are the front's flags besides -storageNode: Vigil's
// retention deletes through it.
var FrontFlags = []string{"-delete.enable"}

// Cluster is a running cluster.
type Cluster struct {
	Front   *Node
	Storage []*Node
	root    string // its directory when Shared made it
}

// Node is one victoria-logs process.
type Node struct {
	bin  string
	Addr string // host:port of its HTTP listener
	Dir  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts storage storage nodes and a front over them, all killed
// when t ends.
func Start(t testing.TB, storage int) *Cluster {
	t.Helper()
	c, err := start(Binary(t), t.TempDir(), storage)
	if c != nil {
		t.Cleanup(c.kill)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var shared struct {
	sync.Mutex
	c   *Cluster
	err error
}

// Shared returns a cluster of two storage nodes shared by the tests of
// the process (each test its own tenants), started on first use; the
// package's TestMain stops it with StopShared. Tests that stop or kill
// nodes use Start instead.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	bin := Binary(t)
	shared.Lock()
	defer shared.Unlock()
	if shared.c == nil && shared.err == nil {
		root, err := os.MkdirTemp("", "vigil-vltest-")
		if err != nil {
			t.Fatal(err)
		}
		shared.c, shared.err = start(bin, root, 2)
		if shared.c != nil {
			shared.c.root = root
		}
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

// StopShared kills the shared cluster, if any, and removes its files.
func StopShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.c != nil {
		shared.c.kill()
		os.RemoveAll(shared.c.root)
		shared.c = nil
	}
}

func start(bin, root string, storage int) (*Cluster, error) {
	c := &Cluster{}
	var addrs []string
	for i := range storage {
		dir := filepath.Join(root, fmt.Sprintf("storage-%d", i+1))
		n, err := newNode(bin, dir, append([]string{"-storageDataPath=" + filepath.Join(dir, "data")}, StorageFlags...))
		if err != nil {
			return c, err
		}
		c.Storage = append(c.Storage, n)
		addrs = append(addrs, n.Addr)
	}
	front, err := newNode(bin, filepath.Join(root, "front"), append([]string{"-storageNode=" + strings.Join(addrs, ",")}, FrontFlags...))
	if err != nil {
		return c, err
	}
	c.Front = front
	for _, n := range append(append([]*Node{}, c.Storage...), c.Front) {
		if err := n.start(); err != nil {
			return c, err
		}
	}
	return c, nil
}

// kill kills every node.
func (c *Cluster) kill() {
	for _, n := range append(append([]*Node{}, c.Storage...), c.Front) {
		if n != nil {
			n.Kill()
		}
	}
}

// FrontURL is the front's base URL (--artifacts-url).
func (c *Cluster) FrontURL() string { return c.Front.URL() }

// StorageURLs lists the storage nodes' base URLs (--artifacts-storage).
func (c *Cluster) StorageURLs() string {
	var us []string
	for _, n := range c.Storage {
		us = append(us, n.URL())
	}
	return strings.Join(us, ",")
}

func newNode(bin, dir string, args []string) (*Node, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	return &Node{bin: bin, Addr: addr, Dir: dir, args: append(args, "-httpListenAddr="+addr, "-loggerLevel=WARN")}, nil
}

// URL is the node's base URL.
func (n *Node) URL() string { return "http://" + n.Addr }

// Start starts the node again, on its port and data, and waits until it
// answers /health.
func (n *Node) Start(t testing.TB) {
	t.Helper()
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
}

func (n *Node) start() error {
	n.mu.Lock()
	if n.cmd != nil {
		n.mu.Unlock()
		return fmt.Errorf("victoria-logs %s: already running", n.Addr)
	}
	logf, err := os.OpenFile(filepath.Join(n.Dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		n.mu.Unlock()
		return err
	}
	cmd := exec.Command(n.bin, n.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.mu.Unlock()
		return fmt.Errorf("start victoria-logs: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()

	// Polled: the process says nothing when it is ready.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(n.URL() + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("victoria-logs %s exited at start: %s", n.Addr, n.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("victoria-logs %s not healthy within 30 s: %v; %s", n.Addr, err, n.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SetFlags adds flags to the node's command line from its next Start.
func (n *Node) SetFlags(flags ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.args = append(n.args, flags...)
}

// Freeze stops the running node with SIGSTOP: it holds its connections
// and answers nothing, as a node stalled on its disk would, until Thaw.
func (n *Node) Freeze() { n.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen node (SIGCONT).
func (n *Node) Thaw() { n.signal(syscall.SIGCONT) }

func (n *Node) signal(sig os.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		n.cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL and waits for the process to end: what it held in
// memory is lost. A node not running is left alone.
func (n *Node) Kill() { n.end(os.Kill) }

// Stop ends the node gracefully (SIGINT: it flushes its data first).
func (n *Node) Stop() { n.end(os.Interrupt) }

func (n *Node) end(sig os.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(sig)
	n.cmd.Process.Signal(syscall.SIGCONT) // a frozen node ends too
	<-n.exited
	n.cmd, n.exited = nil, nil
}

// logTail is the end of the node's log, for failures.
func (n *Node) logTail() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}
