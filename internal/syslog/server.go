// Package syslog holds Vigil's syslog listeners: UDP, TCP and TLS
// (RFC 5425), each bound to one org, taking RFC 5424 and RFC 3164
// messages, with RFC 6587 octet counting or LF framing on TCP. Each
// message becomes an artifact whose raw is the message as received (its
// syslog header kept) and whose source is chosen from what the message
// says; the artifacts go to the ingest queue in batches, exactly as those
// of POST /v1/artifacts. While the queue refuses them, TCP and TLS
// connections stop reading (the sender's window closes) and UDP drops,
// counted.
package syslog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
)

// Ingester takes artifacts; a nil error means they are durable. ERATELIMITED,
// ENOSPACE and EUNAVAILABLE mean retry later; ETOOLARGE that the batch can
// never be taken whole.
type Ingester interface {
	Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error
}

// Server runs the listeners of one process.
type Server struct {
	listeners []*listener
	batcher   *batcher
	m         *metrics
	log       *slog.Logger
	now       func() time.Time

	ctx    context.Context // ends when Shutdown starts: the listeners stop reading
	cancel context.CancelFunc
	wg     sync.WaitGroup // the listeners' goroutines

	shutdown sync.Once

	mu      sync.Mutex
	dropped map[string]map[string]int // listener → reason → messages
}

// New checks cfgs and loads their certificates; Start binds them.
func New(cfgs []Config, ing Ingester, reg prometheus.Registerer, log *slog.Logger) (*Server, error) {
	if err := CheckNames(cfgs); err != nil {
		return nil, err
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{m: newMetrics(reg), log: log, now: time.Now, ctx: ctx, cancel: cancel, dropped: map[string]map[string]int{}}
	for _, c := range cfgs {
		l := &listener{cfg: c, s: s, conns: map[*conn]struct{}{}}
		if c.Network == "tls" {
			tc, err := tlsConfig(c)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("syslog listener %s: %w", c.Name, err)
			}
			l.tls = tc
		}
		l.received = s.m.received.WithLabelValues(c.Name)
		l.truncated = s.m.truncated.WithLabelValues(c.Name)
		l.open = s.m.connections.WithLabelValues(c.Name)
		s.listeners = append(s.listeners, l)
	}
	s.batcher = newBatcher(ing, s.m, log, s.drop)
	return s, nil
}

// Start binds every listener and serves them until Shutdown. A listener
// that cannot bind stops the others.
func (s *Server) Start() error {
	for _, l := range s.listeners {
		var err error
		if l.cfg.Network == "udp" {
			err = l.listenUDP()
		} else {
			err = l.listenStream()
		}
		if err != nil {
			s.stop()
			return fmt.Errorf("syslog listener %s: %w", l.cfg.Name, err)
		}
		s.log.Info("syslog listening", slog.String("listener", l.cfg.Name), slog.String("network", l.cfg.Network),
			slog.String("addr", l.addr().String()), slog.String("org", orgLabel(l.cfg)))
	}
	for _, l := range s.listeners {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if l.cfg.Network == "udp" {
				l.serveUDP()
			} else {
				l.serveStream()
			}
		}()
	}
	return nil
}

func orgLabel(c Config) string {
	if c.OrgFrom != "" {
		return "from the client certificate's " + c.OrgFrom
	}
	return c.Org
}

// Addrs returns the address each listener is bound to, by name.
func (s *Server) Addrs() map[string]net.Addr {
	out := map[string]net.Addr{}
	for _, l := range s.listeners {
		if a := l.addr(); a != nil {
			out[l.cfg.Name] = a
		}
	}
	return out
}

// stop closes the sockets and waits for the listeners' goroutines.
func (s *Server) stop() {
	s.cancel()
	for _, l := range s.listeners {
		l.close()
	}
	s.wg.Wait()
}

// Shutdown stops reading (TCP and TLS connections are closed; what their
// senders wrote after the last message read is theirs to resend), then
// publishes every message already read, until ctx ends at most; messages
// still unqueued then are counted as dropped (shutdown) and logged.
// Calls after the first do nothing.
func (s *Server) Shutdown(ctx context.Context) {
	s.shutdown.Do(func() {
		s.stop()
		s.batcher.close(ctx)
	})
}

// Name identifies the listeners in readiness reports.
func (s *Server) Name() string { return "syslog" }

// Ready is nil: dropped UDP messages are reported, not a reason to take
// the process out of service.
func (s *Server) Ready(context.Context) error { return nil }

// Status says "ok", or how many messages were dropped since the start,
// by listener and reason.
func (s *Server) Status() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dropped) == 0 {
		return "ok"
	}
	var parts []string
	for name, reasons := range s.dropped {
		for reason, n := range reasons {
			parts = append(parts, fmt.Sprintf("%s: %d %s", name, n, reason))
		}
	}
	sort.Strings(parts)
	return "ok; messages dropped since start (vigil_syslog_dropped_total): " + strings.Join(parts, ", ")
}

func (s *Server) drop(l *listener, reason string, n int) {
	s.mu.Lock()
	if s.dropped[l.cfg.Name] == nil {
		s.dropped[l.cfg.Name] = map[string]int{}
	}
	s.dropped[l.cfg.Name][reason] += n
	s.mu.Unlock()
	s.m.dropped.WithLabelValues(l.cfg.Name, reason).Add(float64(n))
}

// listener is one bound address.
type listener struct {
	cfg Config
	s   *Server
	tls *tls.Config

	udp    *net.UDPConn
	stream net.Listener

	mu       sync.Mutex
	conns    map[*conn]struct{}
	evicting int            // conns evicted and still being read
	wg       sync.WaitGroup // connection goroutines

	received  prometheus.Counter
	truncated prometheus.Counter
	open      prometheus.Gauge
}

func (l *listener) addr() net.Addr {
	switch {
	case l.udp != nil:
		return l.udp.LocalAddr()
	case l.stream != nil:
		return l.stream.Addr()
	}
	return nil
}

// close closes the socket and every connection, and waits for the
// connections' goroutines.
func (l *listener) close() {
	if l.udp != nil {
		l.udp.Close()
	}
	if l.stream != nil {
		l.stream.Close()
	}
	l.mu.Lock()
	for c := range l.conns {
		c.raw.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// source is where a connection's (or a datagram's) messages come from:
// their org, and the metadata every artifact of theirs carries.
type source struct {
	org  string
	meta []byte // {"syslog":{"listener":…,"peer":…[,"client":…]}}
}

func (l *listener) newSource(org, peer, client string) source {
	b := []byte(`{"syslog":{"listener":`)
	b = strconv.AppendQuote(b, l.cfg.Name)
	b = append(b, `,"peer":`...)
	b = strconv.AppendQuote(b, peer)
	if client != "" {
		b = append(b, `,"client":`...)
		b = strconv.AppendQuote(b, client)
	}
	return source{org: org, meta: append(b, "}}"...)}
}

// item makes the artifact of one message. cut is the length of a
// message longer than max-message, 0 otherwise.
func (l *listener) item(src source, msg []byte, cut int) item {
	l.received.Inc()
	meta := src.meta
	if cut > 0 {
		l.truncated.Inc()
		msg = trimPartialRune(msg)
		m := append([]byte(nil), meta[:len(meta)-2]...)
		m = append(m, `,"truncated_from":`...)
		m = strconv.AppendInt(m, int64(cut), 10)
		meta = append(m, "}}"...)
	}
	source := l.cfg.Source
	if source == "" {
		if source = SourceOf(msg); source == "" {
			source = l.cfg.DefaultSource
		}
	}
	raw := string(msg)
	if !utf8.ValidString(raw) {
		// JSON, which carries it to the queue, would replace each bad
		// byte alike; doing it here makes the stored raw what the
		// source was chosen from.
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	now := l.s.now().UTC()
	return item{l: l, org: src.org, art: &vigil.Artifact{
		ID: vigil.NewID(), OrgID: src.org, Source: source, Raw: raw,
		Timestamp: now, TimestampDefaulted: true, CreatedAt: now, Metadata: meta,
	}}
}

// trimPartialRune drops an incomplete UTF-8 sequence that a cut left at
// the end of b.
func trimPartialRune(b []byte) []byte {
	return b[:len(vigil.TrimPartialRune(string(b)))]
}

// errorReason names why a connection ended, for the metric; "" for a
// normal end.
func errorReason(err error) string {
	var ne net.Error
	switch {
	case err == nil, errors.Is(err, net.ErrClosed), errors.Is(err, errEvicted): // an eviction is counted as it is made
		return ""
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, errSilent):
		return "silent"
	case errors.As(err, &ne) && ne.Timeout():
		return "idle"
	}
	return "read"
}
