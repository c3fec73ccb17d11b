package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// TestSyslogIdleConnectionsEvicted: max-connections idle TCP connections
// (1,000 by default) locked real senders out, each of their connections
// closed at once (util-linux logger's lines were lost, and logger exited
// 0), until the idle ones timed out five minutes later. Now a new
// connection evicts one that waits for a frame, first one that never sent
// anything, else the one silent the longest:
//   - logger, connecting to a listener whose every slot holds a
//     connection that sent nothing, gets each line of the auth dataset
//     stored;
//   - rsyslog, whose idle connection is the one evicted for a newcomer
//     that then holds the only slot, connects again when it has more to
//     send, evicts the silent newcomer, and loses nothing.
func TestSyslogIdleConnectionsEvicted(t *testing.T) {
	logger := requireTool(t, "logger", "/usr/bin/logger")
	rsyslogd := requireTool(t, "rsyslogd", "/usr/sbin/rsyslogd")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	const slots = 20
	p := startVigil(t, "vigil", data,
		"--syslog-listen", fmt.Sprintf("tcp://127.0.0.1:0?org=acme&name=full&max-connections=%d", slots),
		"--syslog-listen", "tcp://127.0.0.1:0?org=globex&name=one&max-connections=1")
	ports := syslogPorts(t, p)
	evicted := func(listener string) float64 {
		m, err := client.New(p.metrics, "", nil).Metrics(ctx)
		if err != nil {
			return -1
		}
		return m.SumWhere("vigil_syslog_connection_errors_total", func(l client.Labels) bool {
			return l["listener"] == listener && l["reason"] == "evicted"
		})
	}
	idle := func(port string) {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	_, lines := datasetFile(t, dir, "auth")

	// Every slot held by a connection that sends nothing, then logger.
	for range slots {
		idle(ports["full"])
	}
	for {
		if n, _ := metric(ctx, p, "vigil_syslog_connections"); n == slots {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the %d idle connections were not open", slots)
		}
		time.Sleep(20 * time.Millisecond)
	}
	acme := newClient(p, mintToken(t, data, "acme", "signals:read"))
	// --size: the dataset's longest lines (1,037 bytes) whole, not split.
	runTool(t, bytes.NewReader([]byte(strings.Join(lines, "\n")+"\n")), logger,
		"-n", "127.0.0.1", "-P", ports["full"], "-T", "--octet-count", "--size", "65536", "-t", "sshd", "-p", "authpriv.info")
	awaitTotal(t, ctx, acme, len(lines), "logger's lines, every slot held by an idle connection")
	if n := evicted("full"); n != 1 {
		t.Errorf("%v connections evicted, want the 1 evicted for logger's", n)
	}

	// rsyslog, forwarding what its socket takes, evicted while idle.
	sock := filepath.Join(dir, "log.sock")
	conf := filepath.Join(dir, "rsyslog.conf")
	writeFile(t, conf, fmt.Sprintf(rsyslogForward, dir, sock, ports["one"]))
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
	globex := newClient(p, mintToken(t, data, "globex", "signals:read"))
	half := len(lines) / 2
	send := func(part []string) {
		runTool(t, bytes.NewReader([]byte(strings.Join(part, "\n")+"\n")), logger, "-u", sock, "--size", "65536", "-t", "sshd", "-p", "authpriv.info")
	}
	send(lines[:half])
	awaitTotal(t, ctx, globex, half, "rsyslog's first half")
	idle(ports["one"]) // evicts rsyslog's connection, and holds the only slot
	for evicted("one") != 1 {
		if ctx.Err() != nil {
			t.Fatal("rsyslog's idle connection was not evicted for a new one")
		}
		time.Sleep(20 * time.Millisecond)
	}
	send(lines[half:])
	awaitTotal(t, ctx, globex, len(lines), "rsyslog's second half, after its connection was evicted")
	if n := evicted("one"); n != 2 {
		t.Errorf("%v connections evicted, want 2: rsyslog's, then the silent one for rsyslog's new connection", n)
	}
}

// rsyslogForward forwards what rsyslog's socket takes to a TCP listener,
// octet-counted, retrying for ever.
const rsyslogForward = `
global(workDirectory="%s")
module(load="imuxsock" SysSock.Use="off")
ruleset(name="forward") {
  action(type="omfwd" target="127.0.0.1" port="%[3]s" protocol="tcp" TCP_Framing="octet-counted"
         action.resumeRetryCount="-1" action.resumeInterval="1")
}
input(type="imuxsock" Socket="%[2]s" ruleset="forward" ratelimit.interval="0")
`
