package e2e_test

import (
	"context"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsNode is a nats-server process of the test's own (a lone server or a
// cluster's node), started again with the same arguments, on the same
// store dir, after it is killed. It is killed when the test ends, and
// its log's last lines printed if the test failed.
type natsNode struct {
	name string
	bin  string
	args []string
	url  string // its client URL
	logs *logBuffer
	proc *child // the running process, nil before the first launch
}

func newNATSNode(t *testing.T, name, bin, url string, args ...string) *natsNode {
	nd := &natsNode{name: name, bin: bin, args: args, url: url, logs: newLogBuffer()}
	t.Cleanup(func() {
		nd.kill(t)
		if t.Failed() {
			t.Logf("--- log of %s, last lines:\n%s", name, nd.logs.tail(40))
		}
	})
	return nd
}

// launch starts the process (without waiting for it to answer).
func (nd *natsNode) launch(t *testing.T) {
	t.Helper()
	nd.proc = startChild(t, nd.name+" ("+nd.bin+")", exec.Command(nd.bin, nd.args...), nd.logs)
}

// start starts the process and waits until JetStream answers on it.
func (nd *natsNode) start(t *testing.T) {
	t.Helper()
	nd.launch(t)
	nd.awaitJetStream(t)
}

// awaitJetStream waits until JetStream answers on this node alone
// (jetStreamAnswers); the node exiting meanwhile fails the test.
func (nd *natsNode) awaitJetStream(t *testing.T) {
	t.Helper()
	pollUntil(t, 30*time.Second, "JetStream on "+nd.name, func() (string, bool) {
		select {
		case <-nd.proc.exited:
			t.Fatalf("%s exited: %v", nd.name, nd.proc.err)
		default:
		}
		return jetStreamAnswers(nd.url)
	})
}

// kill SIGKILLs the process, if running, and waits for it to be gone.
func (nd *natsNode) kill(t *testing.T) {
	t.Helper()
	if nd.proc != nil {
		nd.proc.kill(t)
	}
}

// jetStreamAnswers reports whether a client connected to url alone gets
// JetStream's account information (on a cluster, that needs its meta
// leader), and if not, why.
func jetStreamAnswers(url string) (string, bool) {
	nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err.Error(), false
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err.Error(), false
	}
	actx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		return err.Error(), false
	}
	return "", true
}

// freePorts returns n loopback ports free when it returns, all held at
// once while picked so that they differ.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}
