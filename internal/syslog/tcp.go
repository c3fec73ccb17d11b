package syslog

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"time"
)

// handshakeTimeout bounds a TLS handshake, so that a client that opens a
// connection and says nothing holds no slot for long.
const handshakeTimeout = 10 * time.Second

// listenStream binds a TCP or TLS listener (TLS is served on TCP, the
// handshake done by each connection's goroutine).
func (l *listener) listenStream() error {
	ln, err := net.Listen("tcp", l.cfg.Addr)
	if err != nil {
		return err
	}
	l.stream = ln
	return nil
}

// serveStream accepts connections until the listener is closed. A
// connection past max-connections is closed at once: refusing to accept
// would leave it hanging in the kernel's backlog.
func (l *listener) serveStream() {
	refusedLimit := l.s.m.refused.WithLabelValues(l.cfg.Name, "limit")
	var lastLog time.Time
	for {
		c, err := l.stream.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: wait rather than spin.
			l.s.log.Warn("syslog: accept", slog.String("listener", l.cfg.Name), slog.String("error", err.Error()))
			select {
			case <-l.s.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		l.mu.Lock()
		full := len(l.conns) >= l.cfg.MaxConnections
		if !full {
			l.conns[c] = struct{}{}
			l.wg.Add(1)
		}
		l.mu.Unlock()
		if full {
			refusedLimit.Inc()
			if time.Since(lastLog) > 10*time.Second {
				lastLog = time.Now()
				l.s.log.Warn("syslog: connection refused: max-connections reached", slog.String("listener", l.cfg.Name),
					slog.String("peer", c.RemoteAddr().String()), slog.Int("max_connections", l.cfg.MaxConnections))
			}
			c.Close()
			continue
		}
		go func() {
			defer l.wg.Done()
			l.open.Inc()
			defer l.open.Dec()
			l.serveConn(c)
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
			c.Close()
		}()
	}
}

// serveConn reads one connection's frames and hands each message to the
// batcher, waiting while the batcher is behind: meanwhile nothing is read
// and the kernel's window closes on the sender.
func (l *listener) serveConn(c net.Conn) {
	peer := c.RemoteAddr().String()
	org, client := l.cfg.Org, ""
	if l.tls != nil {
		tc := tls.Server(c, l.tls)
		var ok bool
		if org, client, ok = l.handshake(tc, peer); !ok {
			return
		}
		c = tc
	}
	src := l.newSource(org, peer, client)
	f := newFramer(idleReader{c, l.cfg.IdleTimeout}, l.cfg.MaxMessage)
	for {
		frame, cut, err := f.next()
		if err != nil {
			if err == io.EOF || l.s.ctx.Err() != nil {
				return
			}
			reason := errorReason(err)
			if reason == "" {
				return
			}
			l.s.m.closed.WithLabelValues(l.cfg.Name, reason).Inc()
			lvl := slog.LevelWarn
			if reason == "idle" {
				lvl = slog.LevelInfo
			}
			l.s.log.Log(l.s.ctx, lvl, "syslog: connection closed", slog.String("listener", l.cfg.Name), slog.String("peer", peer),
				slog.String("reason", reason), slog.String("framing", f.mode.String()), slog.String("error", err.Error()))
			return
		}
		if len(frame) == 0 {
			continue
		}
		if !l.s.batcher.put(l.s.ctx, l.item(src, frame, cut)) {
			// Shutdown while this connection waited for the queue: the
			// message it read is not queued.
			l.s.drop(l, dropShutdown, 1)
			return
		}
	}
}

// idleReader sets the connection's read deadline before each read: the
// idle timeout counts the time the sender is silent, not the time the
// listener waits for the queue.
type idleReader struct {
	c    net.Conn
	idle time.Duration
}

func (r idleReader) Read(p []byte) (int, error) {
	if r.idle > 0 {
		r.c.SetReadDeadline(time.Now().Add(r.idle))
	}
	return r.c.Read(p)
}
