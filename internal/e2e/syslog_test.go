package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/client"
)

// TestSyslogRealClients: Debian's rsyslog and util-linux's logger, the
// real programs, deliver to vigil serve's syslog listeners, and every
// line arrives exactly once, while the queue is kept full (--max-pending
// 1: a second unprocessed batch is refused) so that the listeners must
// hold back:
//
//   - rsyslog forwards two files of the shared datasets (auth and
//     firewall, with imfile, each line as it is: template %rawmsg%) and
//     its own imuxsock input (RFC 5424) over TCP with octet counting, to
//     org acme, and the same over TLS with a client certificate whose
//     organization (globex) names the org;
//   - logger sends over UDP and over TCP with LF framing, to org acme,
//     before rsyslog starts (UDP cannot push back: it is sent while the
//     queue has room).
//
// The programs must be installed (.ci/run installs them): the test fails
// without them.
func TestSyslogRealClients(t *testing.T) {
	rsyslogd := requireTool(t, "rsyslogd", "/usr/sbin/rsyslogd")
	logger := requireTool(t, "logger", "/usr/bin/logger")
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/rsyslog/lmnsd_gtls.so"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/*/rsyslog/lmnsd_gtls.so"); len(m) == 0 {
			t.Fatal("rsyslog's gtls driver (Debian package rsyslog-gnutls) is missing; .ci/run installs it")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	clientCert, clientKey := pki.issueFiles(t, dir, "rsyslog-client", pkix.Name{CommonName: "web1.globex.example", Organization: []string{"globex"}},
		nil, x509.ExtKeyUsageClientAuth)

	data := filepath.Join(dir, "data")
	p := startVigil(t, "vigil", data, "--max-pending", "1", "--workers", "1",
		"--syslog-listen", "tcp://127.0.0.1:0?org=acme&name=tcp",
		"--syslog-listen", "udp://127.0.0.1:0?org=acme&name=udp",
		"--syslog-listen", fmt.Sprintf("tls://127.0.0.1:0?name=tls&cert=%s&key=%s&client-ca=%s&org-from=o", pki.serverCert, pki.serverKey, pki.caFile))
	ports := syslogPorts(t, p)
	acme := newClient(p, mintToken(t, data, "acme", "signals:read"))
	globex := newClient(p, mintToken(t, data, "globex", "signals:read"))

	// logger, over UDP and TCP (LF framing), 200 lines each.
	var udpLines, tcpLines bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&udpLines, "Failed password for invalid user udp%d from 203.0.113.%d port %d ssh2\n", i, 1+i%200, 40000+i)
		fmt.Fprintf(&tcpLines, "Failed password for invalid user tcp%d from 198.51.100.%d port %d ssh2\n", i, 1+i%200, 40000+i)
	}
	runTool(t, bytes.NewReader(udpLines.Bytes()), logger, "-n", "127.0.0.1", "-P", ports["udp"], "-d", "-t", "sshd", "-p", "authpriv.info")
	awaitTotal(t, ctx, acme, 200, "logger's UDP lines")
	runTool(t, bytes.NewReader(tcpLines.Bytes()), logger, "-n", "127.0.0.1", "-P", ports["tcp"], "-T", "-t", "sshd", "-p", "authpriv.info")
	awaitTotal(t, ctx, acme, 400, "logger's TCP lines")

	// rsyslog: two files and 300 messages through its own socket.
	authFile, authLines := datasetFile(t, dir, "auth")
	fwFile, fwLines := datasetFile(t, dir, "firewall")

	// While rsyslog sends, another org keeps the queue (--max-pending 1)
	// busy through POST /v1/artifacts, so that the listeners meet a full
	// queue however fast the one worker is: a machine with nothing else
	// to do kept up with rsyslog alone and never refused a batch. It
	// starts after the UDP lines are in (UDP cannot push back) and stops
	// once every syslog line is stored.
	stopFlood := floodQueue(t, ctx, newClient(p, mintToken(t, data, "flood", "signals:write")), authLines)
	sock := filepath.Join(dir, "log.sock")
	conf := filepath.Join(dir, "rsyslog.conf")
	writeFile(t, conf, fmt.Sprintf(rsyslogConf, dir, pki.caFile, clientCert, clientKey, authFile, fwFile, sock,
		ports["tcp"], ports["tls"], ports["tcp"], ports["tls"]))
	rs := exec.Command(rsyslogd, "-n", "-f", conf, "-i", filepath.Join(dir, "rsyslogd.pid"))
	var rsOut bytes.Buffer
	rs.Stdout, rs.Stderr = &rsOut, &rsOut
	if err := rs.Start(); err != nil {
		t.Fatalf("start rsyslogd: %v", err)
	}
	t.Cleanup(func() {
		rs.Process.Kill()
		rs.Wait()
		if t.Failed() {
			t.Logf("rsyslogd output:\n%s", rsOut.String())
		}
	})
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("rsyslogd made no socket %s in 20s", sock)
		}
	}
	// rsyslog's socket takes rounds of 300 messages until the listeners
	// have met the full queue and waited (the metric counts the time
	// from a refused batch to its retry): the files alone may reach the
	// queue in one burst that finds it free, however busy the flood
	// keeps it. Then the flood has done its part, and stops so that the
	// listeners catch up.
	rounds := 0
	for {
		var local bytes.Buffer
		for i := range 300 {
			fmt.Fprintf(&local, "Accepted publickey for user%d from 192.0.2.%d port %d ssh2: ED25519 SHA256:local%d-%d\n", i, 1+i%200, 50000+i, rounds, i)
		}
		runTool(t, bytes.NewReader(local.Bytes()), logger, "-u", sock, "-t", "sshd", "-i", "-p", "authpriv.info")
		rounds++
		if awaitMetric(ctx, p, "vigil_syslog_blocked_seconds_total", time.Second) {
			break
		}
		if ctx.Err() != nil {
			received, _ := metric(context.Background(), p, "vigil_syslog_received_total")
			throttled, _ := metric(context.Background(), p, "vigil_ingest_throttled_total")
			t.Fatalf("the syslog listeners never waited for the queue while another org kept it full "+
				"(%d rounds of 300 local messages; %v messages received, %v batches refused)", rounds, received, throttled)
		}
	}
	stopFlood()

	files := len(authLines) + len(fwLines)
	wantAcme, wantGlobex := 400+files+300*rounds, files+300*rounds
	t.Logf("waiting for %d artifacts in acme, %d in globex (%d auth and %d firewall lines, %d local messages, 400 of logger)",
		wantAcme, wantGlobex, len(authLines), len(fwLines), 300*rounds)
	awaitTotal(t, ctx, acme, wantAcme, "every line in acme")
	awaitTotal(t, ctx, globex, wantGlobex, "every line in globex")
	time.Sleep(2 * time.Second) // a duplicate would come late
	awaitTotal(t, ctx, acme, wantAcme, "no more in acme")
	awaitTotal(t, ctx, globex, wantGlobex, "no more in globex")

	for _, o := range []struct {
		name string
		c    *client.Client
	}{{"acme", acme}, {"globex", globex}} {
		arts := allArtifacts(t, ctx, o.c)
		byRaw := map[string]int{}
		sources := map[string]int{}
		local := 0
		for _, a := range arts {
			byRaw[a.Raw]++
			sources[a.Source]++
			if strings.Contains(a.Raw, "SHA256:local") {
				local++
				if !strings.HasPrefix(a.Raw, "<86>1 ") || a.Source != "auth" {
					t.Errorf("%s: a message of rsyslog's socket, in RFC 5424: source %q raw %q", o.name, a.Source, a.Raw)
				}
			}
		}
		// A dataset repeats some lines: each is stored as often as the
		// files hold it.
		sent := map[string]int{}
		for _, l := range append(append([]string(nil), authLines...), fwLines...) {
			sent[l]++
		}
		for l, n := range sent {
			if byRaw[l] != n {
				t.Fatalf("%s: a dataset line stored %d times, sent %d: %q", o.name, byRaw[l], n, l)
			}
		}
		if local != 300*rounds {
			t.Errorf("%s: %d messages of rsyslog's socket, want %d", o.name, local, 300*rounds)
		}
		t.Logf("%s: %d artifacts by source %v", o.name, len(arts), sources)
		// The dataset lines say what they are: most get the source of
		// their file (the auth files also hold logrotate, cups, kernel …
		// lines, which are none of auth's).
		if sources["auth"] < len(authLines)*85/100 || sources["firewall"] < len(fwLines)*95/100 {
			t.Errorf("%s: sources %v: want most of the %d auth and %d firewall lines recognised", o.name, sources, len(authLines), len(fwLines))
		}
	}

	throttled, err := metric(ctx, p, "vigil_ingest_throttled_total")
	if err != nil {
		t.Fatal(err)
	}
	blocked, _ := metric(ctx, p, "vigil_syslog_blocked_seconds_total")
	dropped, _ := metric(ctx, p, "vigil_syslog_dropped_total")
	t.Logf("the queue refused %v batches; the listeners waited %.1f s", throttled, blocked)
	if throttled == 0 || blocked == 0 {
		t.Error("the queue never made the syslog listeners wait: the test did not exercise backpressure")
	}
	if dropped != 0 {
		t.Errorf("vigil_syslog_dropped_total = %v, want 0", dropped)
	}
	if r := readyz(t, ctx, p); !strings.Contains(r, "syslog:ok") {
		t.Errorf("/readyz: %s", r)
	}
}

// rsyslogConf forwards two files and a socket over TCP (octet counting)
// and TLS; its arguments: work dir, CA, client certificate and key, the
// two files, the socket, and the TCP and TLS ports twice.
const rsyslogConf = `
global(workDirectory="%s"
       defaultNetstreamDriverCAFile="%s"
       defaultNetstreamDriverCertFile="%s"
       defaultNetstreamDriverKeyFile="%s")
module(load="imfile")
module(load="imuxsock" SysSock.Use="off")
template(name="vigil-raw" type="string" string="%%rawmsg%%")

ruleset(name="files") {
  action(type="omfwd" target="127.0.0.1" port="%[8]s" protocol="tcp" TCP_Framing="octet-counted" template="vigil-raw"
         action.resumeRetryCount="-1" action.resumeInterval="1")
  action(type="omfwd" target="127.0.0.1" port="%[9]s" protocol="tcp" TCP_Framing="octet-counted" template="vigil-raw"
         StreamDriver="gtls" StreamDriverMode="1" StreamDriverAuthMode="x509/name" StreamDriverPermittedPeers="localhost"
         action.resumeRetryCount="-1" action.resumeInterval="1")
}
ruleset(name="local") {
  action(type="omfwd" target="127.0.0.1" port="%[10]s" protocol="tcp" TCP_Framing="octet-counted" template="RSYSLOG_SyslogProtocol23Format"
         action.resumeRetryCount="-1" action.resumeInterval="1")
  action(type="omfwd" target="127.0.0.1" port="%[11]s" protocol="tcp" TCP_Framing="octet-counted" template="RSYSLOG_SyslogProtocol23Format"
         StreamDriver="gtls" StreamDriverMode="1" StreamDriverAuthMode="x509/name" StreamDriverPermittedPeers="localhost"
         action.resumeRetryCount="-1" action.resumeInterval="1")
}
input(type="imfile" File="%[5]s" Tag="auth" ruleset="files")
input(type="imfile" File="%[6]s" Tag="firewall" ruleset="files")
input(type="imuxsock" Socket="%[7]s" ruleset="local" ratelimit.interval="0")
`

// requireTool returns the path of a program the test runs, failing when
// it is not installed.
// awaitMetric reports whether the metric name becomes positive within
// d (or before ctx ends).
func awaitMetric(ctx context.Context, p *proc, name string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		if v, _ := metric(ctx, p, name); v > 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func requireTool(t *testing.T, name, path string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	t.Fatalf("%s is not installed (Debian: rsyslog, rsyslog-gnutls, bsdutils); .ci/run installs it", name)
	return ""
}

func runTool(t *testing.T, stdin *bytes.Reader, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = stdin
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// syslogPorts reads the port of each syslog listener from the log.
func syslogPorts(t testing.TB, p *proc) map[string]string {
	t.Helper()
	p.logs.mu.Lock()
	logs := p.logs.buf.String()
	p.logs.mu.Unlock()
	ports := map[string]string{}
	for _, l := range strings.Split(logs, "\n") {
		var rec struct{ Msg, Listener, Addr string }
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "syslog listening" {
			_, port, _ := net.SplitHostPort(rec.Addr)
			ports[rec.Listener] = port
		}
	}
	if len(ports) == 0 {
		t.Fatal("no \"syslog listening\" line in the log")
	}
	return ports
}

// datasetFile concatenates the files of a dataset directory into one,
// each line ended by an LF, and returns it with its non-empty lines.
func datasetFile(t *testing.T, dir, name string) (string, []string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", name, "*.log"))
	if len(paths) == 0 {
		t.Fatalf("no dataset files in ../shared/datasets/%s", name)
	}
	var buf bytes.Buffer
	var lines []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if l := sc.Text(); strings.TrimSpace(l) != "" {
				lines = append(lines, l)
				buf.WriteString(l + "\n")
			}
		}
		f.Close()
	}
	out := filepath.Join(dir, name+".log")
	writeFile(t, out, buf.String())
	return out, lines
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// awaitTotal waits until the org has want artifacts; more fails at once.
func awaitTotal(t testing.TB, ctx context.Context, c *client.Client, want int, what string) {
	t.Helper()
	last := -1
	for {
		n, err := c.ArtifactTotal(ctx)
		if err == nil {
			if n == want {
				return
			}
			if n > want {
				t.Fatalf("%s: %d artifacts, want %d: more than was sent", what, n, want)
			}
			last = n
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %d artifacts when the time ran out, want %d (last error %v)", what, last, want, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// allArtifacts reads every artifact of the org.
func allArtifacts(t *testing.T, ctx context.Context, c *client.Client) []vigil.Artifact {
	t.Helper()
	var out []vigil.Artifact
	for offset := 0; ; offset += 1000 {
		page, err := c.Artifacts(ctx, client.ArtifactQuery{Limit: 1000, Offset: offset})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Artifacts...)
		if len(page.Artifacts) < 1000 {
			return out
		}
	}
}

// testPKI is a CA made for one test, with a server certificate for
// localhost and 127.0.0.1.
type testPKI struct {
	ca                            *x509.Certificate
	key                           *ecdsa.PrivateKey
	caFile, serverCert, serverKey string
}

func newTestPKI(t *testing.T, dir string) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vigil test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &testPKI{ca: ca, key: key, caFile: filepath.Join(dir, "ca.pem")}
	writeFile(t, p.caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	p.serverCert, p.serverKey = p.issueFiles(t, dir, "server", pkix.Name{CommonName: "localhost"},
		&x509.Certificate{DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}, x509.ExtKeyUsageServerAuth)
	return p
}

// issueFiles writes a certificate of the CA and its key as PEM files.
func (p *testPKI) issueFiles(t *testing.T, dir, name string, subject pkix.Name, tmpl *x509.Certificate, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	if tmpl == nil {
		tmpl = &x509.Certificate{}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.SerialNumber, tmpl.Subject = serial, subject
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})))
	return certFile, keyFile
}

// floodQueue posts lines to c's org in batches of 500 from two posters,
// again and again, each refused batch again after a short pause, until
// the returned stop is called; stop waits for the posters to end.
func floodQueue(t *testing.T, ctx context.Context, c *client.Client, lines []string) (stop func()) {
	t.Helper()
	arts := make([]client.NewArtifact, 0, 500)
	for _, l := range lines[:min(len(lines), 500)] {
		arts = append(arts, client.NewArtifact{Source: "auth", Raw: l})
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 { // two posters: one is pending while the other's batch is stored
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := c.PostArtifacts(ctx, arts)
				if err == nil && res.Status/100 == 2 {
					continue
				}
				select { // refused (429) or failed: let the syslog batches compete
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}
