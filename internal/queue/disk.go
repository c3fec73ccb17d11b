package queue

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/datadir"
)

// The embedded server keeps its files in the data dir, beside SQLite.
// When that disk fills, a JetStream write fails with ENOSPC, and the
// server never answers that publish (the client would wait out its 30 s)
// and refuses every later write to the stream — acknowledgements included —
// until it restarts. So ingest stops while some room is left:
// below datadir.Reserve free bytes (after the batch), a publish is refused
// at once with ENOSPACE (507) naming the disk. The workers go on storing
// what the queue holds; when SQLite fills the rest, they hold their
// messages until space is freed (see handle in consume.go).

// roomFor returns ENOSPACE when the embedded server's disk would have
// less than its reserve left after need more bytes, or when the server
// has already failed to write the stream; nil with an external server.
func (q *Queue) roomFor(need int) error {
	if q.ns == nil {
		return nil
	}
	if err := q.embeddedHealth(); err != nil {
		return err
	}
	free, size, err := datadir.Available(q.dataDir())
	if err != nil {
		return nil // no statfs here: JetStream's own errors will tell
	}
	reserve := datadir.Reserve(size)
	if free < reserve+uint64(need) {
		return &vigil.Error{Code: vigil.ENOSPACE, Message: fmt.Sprintf(
			"no space left on the disk of the data directory: %d MiB free, %d MiB kept in reserve; "+
				"ingest resumes once space is freed", free>>20, reserve>>20)}
	}
	return nil
}

// dataDir is the data dir the embedded server's directory is in, where
// the ballast file is kept.
func (q *Queue) dataDir() string { return filepath.Dir(q.cfg.Dir) }

// embeddedHealth returns an error once the embedded server has failed to
// write the stream's files (no space, an I/O error): the stream then
// refuses every write until the process restarts. The server's health is
// read at most once a second.
func (q *Queue) embeddedHealth() error {
	if q.ns == nil {
		return nil
	}
	q.mu.Lock()
	if time.Since(q.healthAt) < time.Second {
		err := q.healthErr
		q.mu.Unlock()
		return err
	}
	q.healthAt = time.Now() // callers meanwhile get the last answer
	was := q.healthErr
	q.mu.Unlock()

	var err error
	if h := q.healthz(); h.Status != "ok" && h.Status != "" {
		if was == nil {
			q.log.Error("queue: the embedded JetStream server failed; ingest is refused until vigil restarts",
				slog.String("status", h.Status), slog.String("error", h.Error))
		}
		code := vigil.EUNAVAILABLE
		if free, size, serr := datadir.Available(q.dataDir()); serr == nil && free < datadir.Reserve(size) {
			code = vigil.ENOSPACE
		}
		err = &vigil.Error{Code: code, Err: errors.New(h.Error),
			Message: "the ingest queue failed to write its files (the log says why); free space on the data directory's disk, then restart vigil"}
	}
	q.mu.Lock()
	q.healthErr = err
	q.mu.Unlock()
	return err
}

// healthz asks the embedded server for its health, three times before
// taking a failure for one: its readiness check gives the server 1 ms,
// which a goroutine descheduled on a loaded machine misses ("failed to be
// ready for connections after 1ms: startup did not complete", refusing a
// second of ingest with 503), while a failed write fails every time.
func (q *Queue) healthz() *server.HealthStatus {
	var h *server.HealthStatus
	for range 3 {
		if h = q.ns.Healthz(&server.HealthzOptions{}); h.Status == "ok" || h.Status == "" {
			break
		}
	}
	return h
}

// serverLog passes the embedded server's warnings and errors (a failed
// write, data lost while recovering damaged files) to Vigil's log; its
// notices only at debug level.
type serverLog struct{ log *slog.Logger }

func (l serverLog) Noticef(format string, v ...any) {
	l.log.Debug("nats: " + fmt.Sprintf(format, v...))
}
func (l serverLog) Warnf(format string, v ...any)  { l.log.Warn("nats: " + fmt.Sprintf(format, v...)) }
func (l serverLog) Fatalf(format string, v ...any) { l.log.Error("nats: " + fmt.Sprintf(format, v...)) }
func (l serverLog) Errorf(format string, v ...any) { l.log.Error("nats: " + fmt.Sprintf(format, v...)) }
func (l serverLog) Debugf(format string, v ...any) { l.log.Debug("nats: " + fmt.Sprintf(format, v...)) }
func (l serverLog) Tracef(string, ...any)          {}
