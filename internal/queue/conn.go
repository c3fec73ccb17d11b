package queue

import (
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/vigil-soc/vigil"
)

// logOptions sends the NATS client's asynchronous errors (a slow
// consumer dropping messages, which come back after AckWait) and its
// disconnections and reconnections to Vigil's log, instead of the
// client's default of printing errors to stderr and saying nothing of
// the rest.
func (q *Queue) logOptions() []nats.Option {
	return []nats.Option{
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			attrs := []any{slog.String("error", q.scrub(err))}
			if sub != nil {
				attrs = append(attrs, slog.String("subject", sub.Subject))
			}
			q.log.Warn("queue: nats", attrs...)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				q.log.Warn("queue: disconnected from NATS; ingest answers 503 until it is back", slog.String("error", q.scrub(err)))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			// Not ConnectedUrlRedacted: it hides a password, not a token
			// given as the user name (nats://TOKEN@host).
			q.log.Info("queue: reconnected to NATS", slog.String("url", RedactURL(nc.ConnectedUrl())),
				slog.String("server", nc.ConnectedServerName()))
		}),
	}
}

// scrub is err's message without the credentials of the --nats-url.
func (q *Queue) scrub(err error) string {
	return vigil.ScrubError(err, secrets(q.cfg.URL)).Error()
}
