package syslog

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-soc/vigil"
)

// fakeQueue is an Ingester that records what it took, and refuses while
// told to (as a full queue does).
type fakeQueue struct {
	mu      sync.Mutex
	byOrg   map[string][]*vigil.Artifact
	refuse  bool
	refused int
	calls   int
}

func newFakeQueue() *fakeQueue { return &fakeQueue{byOrg: map[string][]*vigil.Artifact{}} }

func (q *fakeQueue) Ingest(_ context.Context, org string, arts []*vigil.Artifact) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if q.refuse {
		q.refused++
		return &vigil.Error{Code: vigil.ERATELIMITED, Message: "ingest queue is full; retry later"}
	}
	q.byOrg[org] = append(q.byOrg[org], arts...)
	return nil
}

func (q *fakeQueue) setRefuse(b bool) {
	q.mu.Lock()
	q.refuse = b
	q.mu.Unlock()
}

func (q *fakeQueue) count(org string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.byOrg[org])
}

func (q *fakeQueue) artifacts(org string) []*vigil.Artifact {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]*vigil.Artifact(nil), q.byOrg[org]...)
}

// awaitCount waits until org has n artifacts, and fails past it or after
// limit.
func (q *fakeQueue) awaitCount(t *testing.T, org string, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := q.count(org)
		if got == n {
			return
		}
		if got > n || time.Now().After(deadline) {
			t.Fatalf("org %s has %d artifacts, want %d", org, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type testServer struct {
	*Server
	q   *fakeQueue
	reg *prometheus.Registry
}

// startServer starts listeners on the URLs (their ports 0) over a fake
// queue; they are shut down when the test ends.
func startServer(t *testing.T, urls ...string) *testServer {
	t.Helper()
	var cfgs []Config
	for _, u := range urls {
		c, err := ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	q, reg := newFakeQueue(), prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s, err := New(cfgs, q, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return &testServer{Server: s, q: q, reg: reg}
}

func (s *testServer) addr(t *testing.T, name string) string {
	t.Helper()
	a, ok := s.Addrs()[name]
	if !ok {
		t.Fatalf("no listener %q in %v", name, s.Addrs())
	}
	return a.String()
}

func line(i int) string {
	return fmt.Sprintf("<38>Nov 25 10:00:00 web1 sshd[%d]: Failed password for root from 203.0.113.9 port %d ssh2", 1000+i, 40000+i)
}

func TestTCPFramings(t *testing.T) {
	s := startServer(t, "tcp://127.0.0.1:0?org=acme&name=t")
	const n = 500
	var wg sync.WaitGroup
	for _, octet := range []bool{true, false} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", s.addr(t, "t"))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			w := bufio.NewWriter(c)
			for i := range n {
				m := line(i)
				if octet {
					fmt.Fprintf(w, "%d %s", len(m), m)
				} else {
					fmt.Fprintf(w, "%s\n", m)
				}
			}
			w.Flush()
		}()
	}
	wg.Wait()
	s.q.awaitCount(t, "acme", 2*n, 10*time.Second)
	seen := map[string]int{}
	for _, a := range s.q.artifacts("acme") {
		seen[a.Raw]++
		if a.Source != "auth" || a.OrgID != "acme" || !a.TimestampDefaulted {
			t.Fatalf("artifact source %q org %q defaulted %v", a.Source, a.OrgID, a.TimestampDefaulted)
		}
		if !strings.HasPrefix(string(a.Metadata), `{"syslog":{"listener":"t","peer":"127.0.0.1:`) {
			t.Fatalf("metadata %s", a.Metadata)
		}
	}
	for i := range n {
		if seen[line(i)] != 2 {
			t.Fatalf("line %d seen %d times, want twice (once per framing)", i, seen[line(i)])
		}
	}
	if got := testutil.ToFloat64(s.m.received.WithLabelValues("t")); got != 2*n {
		t.Errorf("vigil_syslog_received_total %v, want %d", got, 2*n)
	}
}

// TestTCPBackpressure: while the queue refuses, the listener stops
// reading and retries; once it takes again, every message arrives once.
func TestTCPBackpressure(t *testing.T) {
	s := startServer(t, "tcp://127.0.0.1:0?org=acme&name=t")
	s.q.setRefuse(true)
	c, err := net.Dial("tcp", s.addr(t, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 60000
	pad := strings.Repeat("p", 200)
	done := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(c)
		for i := range n {
			fmt.Fprintf(w, "%s %s\n", line(i), pad)
		}
		done <- w.Flush()
	}()
	// 60000 lines of ~290 bytes are 17 MB: more than the batcher and the
	// socket buffers hold (loopback's grow to a few MB), so the writer
	// must block.
	select {
	case err := <-done:
		t.Fatalf("the sender wrote everything (%v) while the queue refused: nothing pushed back", err)
	case <-time.After(time.Second):
	}
	if s.q.count("acme") != 0 {
		t.Fatal("a refused batch was counted as taken")
	}
	s.q.setRefuse(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.q.awaitCount(t, "acme", n, 20*time.Second)
	seen := map[string]bool{}
	for _, a := range s.q.artifacts("acme") {
		if seen[a.Raw] {
			t.Fatalf("duplicate %q", a.Raw)
		}
		seen[a.Raw] = true
	}
	if testutil.ToFloat64(s.m.blocked) <= 0 {
		t.Error("vigil_syslog_blocked_seconds_total did not grow")
	}
}

// TestUDPDropsCounted: UDP cannot push back; what the listener cannot
// hand over while the queue refuses is dropped and counted, and said in
// Status.
func TestUDPDropsCounted(t *testing.T) {
	s := startServer(t, "udp://127.0.0.1:0?org=acme&name=u")
	s.q.setRefuse(true)
	c, err := net.Dial("udp", s.addr(t, "u"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dropped := s.m.dropped.WithLabelValues("u", dropQueueFull)
	for i := 0; testutil.ToFloat64(dropped) == 0; i++ {
		if i == 20000 {
			t.Fatal("20000 datagrams into a refusing queue, none counted as dropped")
		}
		c.Write([]byte(line(i)))
		if i%100 == 99 {
			time.Sleep(time.Millisecond)
		}
	}
	if st := s.Status(); !strings.Contains(st, "u: ") || !strings.Contains(st, "queue_full") {
		t.Errorf("Status() = %q, want the drops named", st)
	}
	// What the kernel still holds is read (and dropped); then the queue
	// takes again, the batcher's backlog drains, and datagrams are taken.
	time.Sleep(200 * time.Millisecond)
	s.q.setRefuse(false)
	n0 := s.q.count("acme")
	for stable := time.Now(); time.Since(stable) < 1500*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		if n := s.q.count("acme"); n != n0 {
			n0, stable = n, time.Now() // the retries' backoff is at most 1 s
		}
	}
	before := testutil.ToFloat64(dropped)
	c.Write([]byte("<13>Nov 25 10:00:00 h app: after"))
	s.q.awaitCount(t, "acme", n0+1, 5*time.Second)
	if got := testutil.ToFloat64(dropped); got != before {
		t.Errorf("dropped grew from %v to %v once the queue took again", before, got)
	}
}

// TestBadClients: a malformed frame closes that connection only; one
// that sends nothing is closed at the first-byte timeout, one that falls
// silent at the idle timeout.
func TestBadClients(t *testing.T) {
	s := startServer(t, "tcp://127.0.0.1:0?org=acme&name=t&idle-timeout=500ms&first-byte-timeout=200ms")
	good, err := net.Dial("tcp", s.addr(t, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	fmt.Fprintf(good, "5 first")
	s.q.awaitCount(t, "acme", 1, 5*time.Second)

	bad, err := net.Dial("tcp", s.addr(t, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	fmt.Fprintf(bad, "3 abcNOT A LENGTH")
	requireClosed(t, bad, "malformed frame")
	s.q.awaitCount(t, "acme", 2, 5*time.Second) // "abc" was whole

	silent, err := net.Dial("tcp", s.addr(t, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	requireClosed(t, silent, "first-byte timeout")
	requireClosed(t, good, "idle")
	for reason, want := range map[string]float64{"malformed": 1, "silent": 1, "idle": 1} {
		if got := testutil.ToFloat64(s.m.closed.WithLabelValues("t", reason)); got != want {
			t.Errorf("closed{%s} = %v, want %v", reason, got, want)
		}
	}
}

// requireClosed waits for the server to close c.
func requireClosed(t *testing.T, c net.Conn, why string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("%s: connection not closed by the server (%v)", why, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestTLSOrgFromCertificate: with client-ca, a client needs a
// certificate of that CA, and with org-from=o its subject's organization
// is the org of its messages.
func TestTLSOrgFromCertificate(t *testing.T) {
	pki := newPKI(t)
	s := startServer(t, fmt.Sprintf("tls://127.0.0.1:0?name=s&cert=%s&key=%s&client-ca=%s&org-from=o", pki.serverCert, pki.serverKey, pki.caFile))
	send := func(cert tls.Certificate, msg string) error {
		c, err := tls.Dial("tcp", s.addr(t, "s"), &tls.Config{RootCAs: pki.pool, ServerName: "localhost", Certificates: []tls.Certificate{cert}})
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "%d %s", len(msg), msg); err != nil {
			return err
		}
		// TLS 1.3 reports a refused client certificate on the first read.
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			return err
		}
		return nil
	}
	if err := send(pki.client(t, "web1", "acme"), line(1)); err != nil {
		t.Fatal(err)
	}
	if err := send(pki.client(t, "db1", "globex"), line(2)); err != nil {
		t.Fatal(err)
	}
	s.q.awaitCount(t, "acme", 1, 5*time.Second)
	s.q.awaitCount(t, "globex", 1, 5*time.Second)
	if a := s.q.artifacts("globex")[0]; a.Raw != line(2) || !strings.Contains(string(a.Metadata), `"client":"CN=db1,O=globex"`) {
		t.Errorf("globex artifact %q metadata %s", a.Raw, a.Metadata)
	}
	// A certificate without an organization names no org: refused.
	send(pki.client(t, "stray", ""), line(3))
	// A certificate of another CA fails the handshake.
	other := newPKI(t)
	if err := send(other.client(t, "evil", "acme"), line(4)); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	deadline := time.Now().Add(5 * time.Second)
	for (testutil.ToFloat64(s.m.refused.WithLabelValues("s", "org")) != 1 || testutil.ToFloat64(s.m.refused.WithLabelValues("s", "tls")) != 1) &&
		time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if o, tl := testutil.ToFloat64(s.m.refused.WithLabelValues("s", "org")), testutil.ToFloat64(s.m.refused.WithLabelValues("s", "tls")); o != 1 || tl != 1 {
		t.Errorf("refused{org} = %v, refused{tls} = %v, want 1 and 1", o, tl)
	}
	if s.q.count("acme") != 1 || s.q.count("") != 0 {
		t.Errorf("acme has %d artifacts, no org %d: a refused client's message was taken", s.q.count("acme"), s.q.count(""))
	}
}

// TestShutdownPublishesWhatWasRead: messages read before Shutdown are
// published by it.
func TestShutdownPublishesWhatWasRead(t *testing.T) {
	s := startServer(t, "tcp://127.0.0.1:0?org=acme&name=t")
	c, err := net.Dial("tcp", s.addr(t, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s\n", line(1))
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(s.m.received.WithLabelValues("t")) != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	if s.q.count("acme") != 1 {
		t.Fatalf("%d artifacts after shutdown, want 1", s.q.count("acme"))
	}
}

// pki is a test CA with a server certificate for localhost.
type pki struct {
	ca                            *x509.Certificate
	key                           *ecdsa.PrivateKey
	pool                          *x509.CertPool
	caFile, serverCert, serverKey string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	key := mustKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &pki{ca: ca, key: key, pool: x509.NewCertPool(), caFile: filepath.Join(dir, "ca.pem")}
	p.pool.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", der)
	srv := p.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	p.serverCert, p.serverKey = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	writePEM(t, p.serverCert, "CERTIFICATE", srv.Certificate[0])
	kb, _ := x509.MarshalECPrivateKey(srv.PrivateKey.(*ecdsa.PrivateKey))
	writePEM(t, p.serverKey, "EC PRIVATE KEY", kb)
	return p
}

func (p *pki) client(t *testing.T, cn, org string) tls.Certificate {
	t.Helper()
	name := pkix.Name{CommonName: cn}
	if org != "" {
		name.Organization = []string{org}
	}
	return p.issue(t, &x509.Certificate{Subject: name, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

func (p *pki) issue(t *testing.T, tmpl *x509.Certificate) tls.Certificate {
	t.Helper()
	key := mustKey(t)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
