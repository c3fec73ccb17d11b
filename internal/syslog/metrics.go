package syslog

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Reasons of vigil_syslog_dropped_total.
const (
	dropQueueFull = "queue_full" // UDP: the listeners' buffer was full while the queue refused batches
	dropTooLarge  = "too_large"  // a message larger than the whole queue may hold
	dropShutdown  = "shutdown"   // still unqueued when the shutdown deadline passed
)

// metrics of the listeners; every series is labelled by listener name.
type metrics struct {
	received    *prometheus.CounterVec
	dropped     *prometheus.CounterVec
	truncated   *prometheus.CounterVec
	connections *prometheus.GaugeVec
	refused     *prometheus.CounterVec
	closed      *prometheus.CounterVec
	blocked     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_syslog_received_total", Help: "Syslog messages received, by listener.",
		}, []string{"listener"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_syslog_dropped_total", Help: "Syslog messages received but not queued, by listener and reason " +
				"(queue_full: UDP while the queue refused; too_large: larger than the whole queue; shutdown: unqueued at the shutdown deadline).",
		}, []string{"listener", "reason"}),
		truncated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_syslog_truncated_total", Help: "Syslog messages longer than the listener's max-message, kept cut to it, by listener.",
		}, []string{"listener"}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_syslog_connections", Help: "Open TCP and TLS syslog connections, by listener.",
		}, []string{"listener"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_syslog_connections_refused_total", Help: "Syslog connections closed before reading, by listener and reason " +
				"(limit: max-connections reached and none could be evicted; tls: handshake failed; org: the client certificate names no org).",
		}, []string{"listener", "reason"}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_syslog_connection_errors_total", Help: "Syslog connections closed by the listener, by listener and reason " +
				"(malformed: a frame that is not one; idle: idle timeout; silent: nothing sent within the first-byte timeout; " +
				"evicted: the longest silent, for a new connection at max-connections; read: a read error).",
		}, []string{"listener", "reason"}),
		blocked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_syslog_blocked_seconds_total", Help: "Time the syslog listeners waited for the ingest queue to take a batch " +
				"(TCP and TLS stop reading meanwhile; UDP drops).",
		}),
	}
	reg.MustRegister(m.received, m.dropped, m.truncated, m.connections, m.refused, m.closed, m.blocked)
	return m
}
