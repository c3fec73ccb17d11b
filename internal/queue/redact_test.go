package queue

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestReconnectLogHidesToken: the line logged when the NATS client comes
// back names the server, not the token it authenticates with.
func TestReconnectLogHidesToken(t *testing.T) {
	const token = "T0KEN-of-the-test"
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, Authorization: token}
	start := func() *server.Server {
		t.Helper()
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		if !ns.ReadyForConnections(testWait) {
			t.Fatal("test NATS server did not start")
		}
		return ns
	}
	ns := start()
	opts.Port = ns.Addr().(*net.TCPAddr).Port // the restart listens where the client reconnects
	var logs syncBuffer
	q, err := Open(context.Background(), Config{URL: fmt.Sprintf("nats://%s@127.0.0.1:%d", token, opts.Port), Name: "redact"},
		slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		ns.Shutdown()
		t.Fatal(err)
	}
	defer q.Close()
	ns.Shutdown()
	ns = start()
	defer ns.Shutdown()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "reconnected to NATS") {
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection logged; log:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log shows the NATS token:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("127.0.0.1:%d", opts.Port)) {
		t.Errorf("the reconnection line does not name the server:\n%s", logs.String())
	}
}
