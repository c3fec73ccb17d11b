package syslog

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// awaitWaiting waits until n connections of the listener wait for a frame
// of which nothing was read: those eviction may choose from.
func (s *testServer) awaitWaiting(t *testing.T, name string, n int) {
	t.Helper()
	var l *listener
	for _, x := range s.listeners {
		if x.cfg.Name == name {
			l = x
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		got := 0
		for c := range l.conns {
			if ok, _, _ := c.evictable(); ok {
				got++
			}
		}
		l.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections waiting for a frame, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitOpen waits until the listener has n connections open.
func (s *testServer) awaitOpen(t *testing.T, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(s.m.connections.WithLabelValues(name)) != float64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%v connections open, want %d", testutil.ToFloat64(s.m.connections.WithLabelValues(name)), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestEviction: at max-connections, a new connection evicts one that
// waits for a frame: first one that never sent anything, else the one
// silent the longest; never one that is mid-frame. Nothing it sent is
// lost, not even what it writes after the eviction until it sees the
// close. While minLingering evicted connections are still being read, no
// more is evicted (a new one is refused), so that a flood of connections
// cannot keep many more open.
func TestEviction(t *testing.T) {
	savedLinger, savedGrace := evictLinger, evictGrace
	evictLinger = time.Minute // evicted connections are read until their clients close
	evictGrace = 0            // one that never sent is taken first however young
	t.Cleanup(func() { evictLinger, evictGrace = savedLinger, savedGrace })
	s := startServer(t, "tcp://127.0.0.1:0?org=acme&name=t&max-connections=2")
	addr := s.addr(t, "t")
	send := func(c net.Conn, msg string) { fmt.Fprintf(c, "%d %s", len(msg), msg) }

	sender := dial(t, addr)
	send(sender, line(1))
	s.q.awaitCount(t, "acme", 1, 5*time.Second)
	silent := dial(t, addr)
	s.awaitWaiting(t, "t", 2)

	// Full: the connection that never sent is evicted for a new one,
	// though the sender has been silent longer.
	newcomer := dial(t, addr)
	requireClosed(t, silent, "evicted")
	send(newcomer, line(2))
	s.q.awaitCount(t, "acme", 2, 5*time.Second)
	// What the evicted one writes before it closes is still read.
	send(silent, line(3))
	s.q.awaitCount(t, "acme", 3, 5*time.Second)

	// Each new connection evicts one: the sender first (silent longer
	// than the newcomer), then each newer one that sends nothing, all of
	// them still read, until minLingering are: then a new one is refused.
	s.awaitWaiting(t, "t", 2)
	extra := dial(t, addr)
	requireClosed(t, sender, "evicted, silent the longest of those that sent")
	for range minLingering - 2 {
		s.awaitWaiting(t, "t", 2)
		next := dial(t, addr)
		requireClosed(t, extra, "evicted, never sent")
		extra = next
	}
	s.awaitWaiting(t, "t", 2)
	refused := dial(t, addr)
	requireClosed(t, refused, "refused while minLingering evicted connections are read")
	if got := testutil.ToFloat64(s.m.refused.WithLabelValues("t", "limit")); got != 1 {
		t.Errorf("refused{limit} = %v, want 1", got)
	}
	send(newcomer, line(4))
	s.q.awaitCount(t, "acme", 4, 5*time.Second)

	// One evicted connection closed: a new one is admitted again.
	silent.Close()
	s.awaitOpen(t, "t", minLingering+1)
	s.awaitWaiting(t, "t", 2)
	last := dial(t, addr)
	requireClosed(t, extra, "evicted, never sent")
	send(last, line(5))
	s.q.awaitCount(t, "acme", 5, 5*time.Second)
	if got := testutil.ToFloat64(s.m.closed.WithLabelValues("t", "evicted")); got != minLingering+1 {
		t.Errorf("closed{evicted} = %v, want %d", got, minLingering+1)
	}
	got := map[string]bool{}
	for _, a := range s.q.artifacts("acme") {
		got[a.Raw] = true
	}
	for i := 1; i <= 5; i++ {
		if !got[line(i)] {
			t.Errorf("line %d not stored", i)
		}
	}
}

// TestEvictionTLS: an evicted TLS connection is told so by a close_notify
// (its client reads the end of the stream), and still read until its
// client closes.
func TestEvictionTLS(t *testing.T) {
	saved := evictLinger
	evictLinger = time.Minute
	t.Cleanup(func() { evictLinger = saved })
	pki := newPKI(t)
	s := startServer(t, fmt.Sprintf("tls://127.0.0.1:0?org=acme&name=s&cert=%s&key=%s&max-connections=1", pki.serverCert, pki.serverKey))
	dialTLS := func() *tls.Conn {
		c, err := tls.Dial("tcp", s.addr(t, "s"), &tls.Config{RootCAs: pki.pool, ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	send := func(c net.Conn, msg string) { fmt.Fprintf(c, "%d %s", len(msg), msg) }
	first := dialTLS()
	send(first, line(1))
	s.q.awaitCount(t, "acme", 1, 5*time.Second)
	s.awaitWaiting(t, "s", 1)

	second := dialTLS()
	first.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := first.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("evicted TLS connection: read %v, want the end of the stream (close_notify)", err)
	}
	send(first, line(2)) // before its client closes: still read
	send(second, line(3))
	s.q.awaitCount(t, "acme", 3, 5*time.Second)
}
