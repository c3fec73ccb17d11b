package syslog

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Eviction's times, variables so that tests can change them: evictLinger
// is how long an evicted connection is still read once the listener has
// closed its side (what its sender wrote before it saw the close is
// stored, not lost); evictGrace how long a connection that sent nothing
// since it opened is not yet taken for one that never will.
var (
	evictLinger = 2 * time.Second
	evictGrace  = time.Second
)

// minLingering is how many evicted connections may be read at once
// whatever max-connections: a sender that closes its evicted connection
// and connects again at once must not find its new one refused because
// the old one is not yet gone.
const minLingering = 8

// Errors that end the reading of a connection, each its own reason.
var (
	errEvicted = errors.New("evicted: the listener was full and this connection the longest silent")
	errSilent  = errors.New("sent nothing within the first-byte timeout")
)

// conn is one TCP or TLS connection of a listener, with what eviction
// needs to know of it. Its Read is what the framer reads.
type conn struct {
	raw net.Conn // the TCP connection

	mu        sync.Mutex
	r         net.Conn      // what is read: raw, or the TLS connection over it
	idle      time.Duration // the idle timeout (0: none)
	first     time.Duration // the timeout before anything is read (0: the idle timeout)
	sent      bool          // anything was read
	last      time.Time     // when it was accepted, then when anything was last read
	waiting   bool          // its reader waits for a frame of which nothing was read
	evicted   bool
	lingering bool // evicted, its side closed, read for evictLinger more
}

func newConn(raw net.Conn, cfg Config) *conn {
	first := cfg.FirstByteTimeout
	if cfg.IdleTimeout > 0 && (first == 0 || first > cfg.IdleTimeout) {
		first = cfg.IdleTimeout
	}
	return &conn{raw: raw, r: raw, idle: cfg.IdleTimeout, first: first, last: time.Now()}
}

// setReader makes r (the TLS connection over raw, its handshake done)
// what is read: its silence counts from now.
func (c *conn) setReader(r net.Conn) {
	c.mu.Lock()
	c.r, c.last = r, time.Now()
	c.mu.Unlock()
}

// between says that the reader is about to wait for the next frame,
// nothing of it read: the connection may be evicted until it sends.
func (c *conn) between() {
	c.mu.Lock()
	c.waiting = true
	c.mu.Unlock()
}

// Read reads with a deadline: the first-byte timeout until anything was
// read, then the idle timeout (the time the sender is silent, not the
// time the listener waits for the queue). Once evicted, it closes its
// side of the connection and reads what arrives within evictLinger.
func (c *conn) Read(p []byte) (int, error) {
	for {
		c.mu.Lock()
		switch {
		case c.evicted && !c.lingering:
			c.lingering = true
			c.closeWrite()
			c.r.SetReadDeadline(time.Now().Add(evictLinger))
		case c.lingering:
		case !c.sent && c.first > 0:
			c.r.SetReadDeadline(time.Now().Add(c.first))
		case c.idle > 0:
			c.r.SetReadDeadline(time.Now().Add(c.idle))
		default:
			c.r.SetReadDeadline(time.Time{})
		}
		lingering, sent := c.lingering, c.sent
		c.mu.Unlock()

		n, err := c.r.Read(p)

		c.mu.Lock()
		if n > 0 {
			c.sent, c.last, c.waiting = true, time.Now(), false
		}
		woken := n == 0 && timeout(err) && c.evicted && !lingering
		c.mu.Unlock()
		switch {
		case woken:
			continue // the eviction's deadline: linger
		case n == 0 && timeout(err) && lingering:
			return 0, errEvicted
		case n == 0 && timeout(err) && !sent:
			return 0, errSilent
		}
		return n, err
	}
}

// closeWrite closes the listener's side: a TLS close_notify, then TCP's
// FIN, so that the sender sees the close before it writes more.
func (c *conn) closeWrite() {
	c.raw.SetWriteDeadline(time.Now().Add(evictLinger))
	if cw, ok := c.r.(interface{ CloseWrite() error }); ok && c.r != c.raw {
		cw.CloseWrite()
	}
	if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// evictable reports whether the connection waits for a frame of which
// nothing was read, whether it ever sent anything, and when it last did
// (or was accepted).
func (c *conn) evictable() (ok, sent bool, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting && !c.evicted, c.sent, c.last
}

// evict marks the connection evicted and wakes its reader, if it still
// waits for a frame of which nothing was read; false if it no longer does.
func (c *conn) evict() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.waiting || c.evicted {
		return false
	}
	c.evicted = true
	c.r.SetReadDeadline(time.Now())
	return true
}

func (c *conn) wasEvicted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evicted
}

func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
