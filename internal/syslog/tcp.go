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

// serveStream accepts connections until the listener is closed. When
// max-connections are open, the connection silent the longest is evicted
// to admit the new one (evict); when none may be, the new one is closed at
// once: refusing to accept would leave it hanging in the kernel's backlog.
func (l *listener) serveStream() {
	refusedLimit := l.s.m.refused.WithLabelValues(l.cfg.Name, "limit")
	var lastLog time.Time
	for {
		raw, err := l.stream.Accept()
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
		c := newConn(raw, l.cfg)
		l.mu.Lock()
		ok := len(l.conns)-l.evicting < l.cfg.MaxConnections || l.evict()
		if ok {
			l.conns[c] = struct{}{}
			l.wg.Add(1)
		}
		l.mu.Unlock()
		if !ok {
			refusedLimit.Inc()
			if time.Since(lastLog) > 10*time.Second {
				lastLog = time.Now()
				l.s.log.Warn("syslog: connection refused: max-connections reached and none may be evicted", slog.String("listener", l.cfg.Name),
					slog.String("peer", raw.RemoteAddr().String()), slog.Int("max_connections", l.cfg.MaxConnections))
			}
			raw.Close()
			continue
		}
		go func() {
			defer l.wg.Done()
			l.open.Inc()
			defer l.open.Dec()
			l.serveConn(c)
			l.mu.Lock()
			delete(l.conns, c)
			if c.wasEvicted() {
				l.evicting--
			}
			l.mu.Unlock()
			raw.Close()
		}()
	}
}

// evict evicts, to admit a new connection, one that waits for a frame of
// which nothing was read: the one silent the longest (since it last sent,
// or since it opened), those that never sent anything in evictGrace
// first, oldest first: a sender sends as it connects. No line is lost:
// nothing of a frame was read from it, and once evicted it is still read
// for evictLinger after its side is closed, so that what its sender wrote
// before it saw the close is stored (a sender that sends again opens a
// new connection, as after an idle timeout). While the larger of
// minLingering and a tenth of max-connections are being read after their
// eviction, none more is evicted: a flood of connections cannot keep many
// more than max-connections open. Called with l.mu held; false when none
// may be evicted.
func (l *listener) evict() bool {
	if l.evicting >= max(minLingering, l.cfg.MaxConnections/10) {
		return false
	}
	now := time.Now()
	for {
		var victim *conn
		var vQuiet bool // never sent, for evictGrace
		var vLast time.Time
		for c := range l.conns {
			ok, sent, last := c.evictable()
			if !ok {
				continue
			}
			quiet := !sent && now.Sub(last) >= evictGrace
			if victim == nil || quiet && !vQuiet || quiet == vQuiet && last.Before(vLast) {
				victim, vQuiet, vLast = c, quiet, last
			}
		}
		if victim == nil {
			return false
		}
		if victim.evict() { // else it sent meanwhile: choose again
			l.evicting++
			l.s.m.closed.WithLabelValues(l.cfg.Name, "evicted").Inc()
			l.s.log.Info("syslog: connection evicted: max-connections reached", slog.String("listener", l.cfg.Name),
				slog.String("peer", victim.raw.RemoteAddr().String()), slog.Duration("silent", now.Sub(vLast).Round(time.Millisecond)))
			return true
		}
	}
}

// serveConn reads one connection's frames and hands each message to the
// batcher, waiting while the batcher is behind: meanwhile nothing is read
// and the kernel's window closes on the sender.
func (l *listener) serveConn(c *conn) {
	peer := c.raw.RemoteAddr().String()
	org, client := l.cfg.Org, ""
	if l.tls != nil {
		tc := tls.Server(c.raw, l.tls)
		var ok bool
		if org, client, ok = l.handshake(tc, peer); !ok {
			return
		}
		c.setReader(tc)
	}
	src := l.newSource(org, peer, client)
	f := newFramer(c, l.cfg.MaxMessage)
	for {
		if f.r.Buffered() == 0 {
			c.between()
		}
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
			if reason == "idle" || reason == "silent" {
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
