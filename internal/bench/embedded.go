package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/vlogs"
)

// startEmbedded runs vigil serve in this process on a free port with a
// temporary data dir and a secret of its own, and mints a token signed
// with that secret.
func (b *bench) startEmbedded(ctx context.Context) (stop func(), err error) {
	if b.serve == nil {
		return nil, errors.New("no --url given and no embedded server to start")
	}
	// What the process holds before the server starts is the clients'
	// (their lines and encoded bodies), which a server of its own would
	// not hold.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	clientHeap := int64(ms.HeapAlloc)
	dir, removeDir := b.f.DataDir, true
	if dir != "" {
		removeDir = false // kept, for later runs and measureDisk
	} else if dir, err = os.MkdirTemp("", "vigil-bench-"); err != nil {
		return nil, fmt.Errorf("embedded server: %w", err)
	}
	b.dataDir = dir
	removeAll := func() {
		if removeDir {
			os.RemoveAll(dir)
		}
	}
	var addrs [2]string // the API's, the metrics'
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			removeAll()
			return nil, fmt.Errorf("embedded server: %w", err)
		}
		addrs[i] = ln.Addr().String()
		ln.Close()
	}
	addr := addrs[0]
	var raw [48]byte
	if _, err := rand.Read(raw[:]); err != nil {
		removeAll()
		return nil, fmt.Errorf("embedded server: secret: %w", err)
	}
	secret, metricsToken := hex.EncodeToString(raw[:32]), hex.EncodeToString(raw[32:])
	// The first ten are left out of the report's target: the data dir and
	// addresses change every run, and the secrets are not to be shown.
	args := []string{"--data-dir", dir, "--addr", addr, "--jwt-secret", secret, "--metrics-addr", addrs[1], "--metrics-token", metricsToken,
		"--ingest-wait", b.f.IngestWait.String(), "--fsync", b.f.Fsync, "--log-level", "warn"}
	if b.f.Via == ViaSyslog {
		listen, err := b.syslogListenArgs()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("embedded server: %w", err)
		}
		args = append(args, listen...)
	}
	if b.f.Files == "internet-edge" {
		// The feed that lists the planted threat-intel sources.
		intel, err := edgeIntelArgs(dir)
		if err != nil {
			removeAll()
			return nil, fmt.Errorf("embedded server: %w", err)
		}
		args = append(args, intel...)
	}
	if b.f.DatabaseURL != "" {
		args = append(args, "--database-url", b.f.DatabaseURL)
	}
	if b.f.NATSURL != "" {
		args = append(args, "--nats-url", b.f.NATSURL)
	}
	if b.f.ArtifactsURL != "" {
		args = append(args, "--artifacts-url", b.f.ArtifactsURL, "--artifacts-storage", b.f.ArtifactsStorage)
	}
	args = append(args, strings.Fields(b.f.ServeArgs)...)
	b.serverLog = &logCounter{w: b.stderr}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.serve(sctx, args, b.serverLog) }()
	stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.logf("embedded server: %v", err)
			}
		case <-time.After(2 * time.Minute):
			b.logf("embedded server did not stop within 2 minutes")
		}
		removeAll()
	}
	stop = sync.OnceFunc(stop)
	base := "http://" + addr
	b.rep.Target = "embedded (in-process vigil serve " + strings.Join(RedactArgs(args[10:]), " ") + ", data dir in " + os.TempDir() + ")"
	b.rep.Settings.IngestWait, b.rep.Settings.Fsync, b.rep.Settings.ServeArgs = b.f.IngestWait.String(), b.f.Fsync, b.f.ServeArgs
	probe := client.New(base, "", b.hc)
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-done:
			cancel()
			removeAll()
			return nil, fmt.Errorf("embedded server: %w", err)
		case <-time.After(50 * time.Millisecond): // polling /readyz
		}
		if _, err := probe.Ready(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("embedded server not ready within a minute")
		}
	}
	b.giveClientHeap(clientHeap)
	tok, err := auth.Mint([]byte(secret), auth.Claims{Subject: "bench", OrgID: b.f.Org, Permissions: []string{vigil.PermAdmin}}, 24*time.Hour, time.Now())
	if err != nil {
		stop()
		return nil, fmt.Errorf("embedded server: token: %w", err)
	}
	b.f.Token = tok
	b.api = client.New(base, tok, b.hc).WithMetrics("http://"+addrs[1], metricsToken)
	return stop, nil
}

// giveClientHeap raises the Go memory limit the embedded server set
// (its --memory-limit) by the clients' heap, so that the server's
// collector works to the limit a server of its own would have: with the
// clients' 100 MB or so counted against it, the live heap of the
// worst-case mix sat at the limit and the collector took 38 % of the CPU.
func (b *bench) giveClientHeap(clientHeap int64) {
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 || clientHeap <= 0 {
		return
	}
	debug.SetMemoryLimit(limit + clientHeap)
	b.rep.Settings.ClientHeapBytes = float64(clientHeap)
}

// RedactArgs returns command-line args as a report may show them: the
// values of --database-url, --nats-url, --artifacts-url and
// --artifacts-storage (in --serve-args) without passwords, those of
// --token and --metrics-token replaced by vigil.Redacted, whichever the
// spelling ("--flag value", "--flag=value", one dash or two).
func RedactArgs(args []string) []string {
	hide := func(string) string { return vigil.Redacted }
	redact := map[string]func(string) string{"database-url": postgres.RedactURL, "nats-url": queue.RedactURL,
		"artifacts-url": vlogs.RedactList, "artifacts-storage": vlogs.RedactList, "token": hide, "metrics-token": hide}
	out := slices.Clone(args)
	for i, a := range out {
		name, value, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := redact[name]; f != nil && strings.HasPrefix(a, "-") {
			if inline {
				out[i] = a[:len(a)-len(value)] + f(value)
			} else if i+1 < len(out) {
				out[i+1] = f(out[i+1])
			}
		}
	}
	return out
}

// logCounter passes the embedded server's log lines on and counts those
// at level ERROR.
type logCounter struct {
	w      io.Writer
	mu     sync.Mutex
	errors int64
}

func (l *logCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors += int64(bytes.Count(p, []byte(`"level":"ERROR"`)))
	return l.w.Write(p)
}

func (l *logCounter) count() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors
}
