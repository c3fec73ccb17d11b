// Package queue carries artifacts from the API to the pipeline workers over
// NATS JetStream: an in-process nats-server storing under the data dir by
// default, or an external server or cluster at a nats:// URL, with the same
// code. A publish returns only after JetStream has stored the message, so
// an accepted artifact survives a crash of the process. The names on the
// server derive from a queue name, so that several deployments can share
// one NATS; each queue name belongs to one database.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigil-soc/vigil"
)

// Config tunes the queue.
type Config struct {
	// Name is the queue name: the namespace of the streams, subjects and
	// consumer on the server (see NamesFor); "" is DefaultName.
	// Deployments sharing one NATS need one each.
	Name string
	// Owner is the identity of the database this process writes to
	// (vigil.Store.DeploymentID). The first process to open the queue
	// name records it; Open refuses a process with another one (ErrOwned).
	// "" skips the check (tests of the queue alone).
	Owner string
	// OwnerLabel says where the Owner database is, for people reading the
	// record or the refusal; it must hold no secret.
	OwnerLabel string
	// URL of an external NATS server; "" starts the embedded one.
	URL string
	// Dir is where the embedded server keeps its JetStream files: a
	// directory in the data dir, whose ballast file (see datadir.Available)
	// ingest does not count as free space.
	Dir string
	// MaxBytes bounds the stream; a publish that would exceed it is refused
	// (ERATELIMITED) rather than dropping older messages.
	MaxBytes int64
	// MaxPending is the number of unprocessed messages above which new
	// publishes are refused with ERATELIMITED: the workers are too far behind.
	MaxPending int
	// MaxDeliver is how many times a message is tried before it is moved to
	// the dead-letter stream.
	MaxDeliver int
	// AckWait is how long a delivered message may stay unacknowledged
	// before it is redelivered (to another worker after a crash).
	AckWait time.Duration
	// RetryBase is the delay before the first redelivery of a failed
	// message; each further try waits four times longer, at most a minute.
	RetryBase time.Duration
	// FsyncAlways makes the embedded server fsync every write.
	FsyncAlways bool
	// Replicas of the streams on a cluster (1 on a single server).
	Replicas int
	// ListenPort, when > 0, lets the embedded server accept outside clients.
	ListenPort int
}

func (c *Config) defaults() {
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 30
	}
	if c.MaxPending == 0 {
		c.MaxPending = 2000
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 5
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.RetryBase == 0 {
		c.RetryBase = time.Second
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
}

// Queue is a connection to the artifact stream.
type Queue struct {
	cfg    Config
	names  Names
	log    *slog.Logger
	ns     *server.Server // nil when external
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	cons   jetstream.Consumer

	maxChunk int

	mu         sync.Mutex
	pending    uint64 // last known backlog
	checked    time.Time
	refreshing bool // a Backlog call is asking the server
	waiters    map[string]*waiter
	sub        *nats.Subscription
	subOnce    sync.Once
	subErr     error

	healthAt  time.Time // of the last look at the embedded server's health
	healthErr error

	acked *ackedMark // embedded only: the highest sequence acknowledged to a publish
}

// Open connects to (or starts) the server, checks that the queue name
// belongs to cfg.Owner's database (or records that it does; an
// *OwnedError, which wraps ErrOwned, if it belongs to another) and makes
// sure the streams and the durable consumer exist.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Queue, error) {
	cfg.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	names, err := NamesFor(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	q := &Queue{cfg: cfg, names: names, log: log, waiters: map[string]*waiter{}}
	if cfg.URL == "" {
		if err := q.startEmbedded(); err != nil {
			return nil, err
		}
		q.nc, err = nats.Connect("", append(q.logOptions(), nats.InProcessServer(q.ns), nats.Name("vigil"), nats.MaxReconnects(-1))...)
	} else {
		if err := checkURLs(cfg.URL); err != nil {
			return nil, fmt.Errorf("queue: %w", err)
		}
		q.nc, err = nats.Connect(cfg.URL, append(q.logOptions(), nats.Name("vigil"), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false))...)
	}
	if err != nil {
		q.Close()
		return nil, vigil.ScrubError(fmt.Errorf("queue: connect: %w", err), secrets(cfg.URL))
	}
	if cfg.URL != "" {
		// Which node of a cluster: the one whose loss costs this process
		// its connection (docs/operations.md, "A NATS node lost").
		log.Info("queue: connected to NATS", slog.String("url", RedactURL(q.nc.ConnectedUrl())),
			slog.String("server", q.nc.ConnectedServerName()))
	}
	// Leave room under the server's payload limit for headers and framing.
	q.maxChunk = int(q.nc.MaxPayload()) - 64<<10
	if q.maxChunk > 4<<20 {
		q.maxChunk = 4 << 20
	}
	q.js, err = jetstream.New(q.nc, jetstream.WithPublishAsyncTimeout(publishAttemptWait))
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("queue: jetstream: %w", err)
	}
	if cfg.Owner != "" {
		if err := q.claim(ctx); err != nil {
			q.Close()
			return nil, err
		}
	}
	if q.ns != nil {
		// Before ensure, which may reset the consumer's ack floor.
		if _, err := q.checkLost(ctx); err != nil {
			q.Close()
			return nil, err
		}
	}
	if err := q.ensure(ctx); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}

// Names returns the JetStream names this queue uses.
func (q *Queue) Names() Names { return q.names }

// jetStreamMaxStore is the embedded server's storage limit: larger than
// any disk it runs on.
const jetStreamMaxStore = 1 << 50

func (q *Queue) startEmbedded() error {
	opts := &server.Options{
		ServerName: "vigil-embedded",
		JetStream:  true,
		StoreDir:   filepath.Join(q.cfg.Dir),
		DontListen: q.cfg.ListenPort <= 0,
		Host:       "127.0.0.1",
		Port:       q.cfg.ListenPort,
		MaxPayload: 8 << 20,
		NoSigs:     true,
		NoLog:      true,
		// JetStream's default limit is 75 % of the space free at start, and
		// a stream reserves its MaxBytes against it: the default 1 GiB queue
		// could not start on a smaller or fuller disk. The stream's own
		// bound and roomFor's reserve keep the disk from filling instead.
		JetStreamMaxStore:  max(jetStreamMaxStore, 2*q.cfg.MaxBytes),
		JetStreamMaxMemory: 64 << 20,
	}
	if q.cfg.FsyncAlways {
		opts.SyncAlways = true
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("queue: embedded server: %w", err)
	}
	ns.SetLogger(serverLog{q.log}, false, false)
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return errors.New("queue: embedded server did not start")
	}
	q.ns = ns
	return nil
}

// ensure creates or updates the streams and the consumer.
func (q *Queue) ensure(ctx context.Context) error {
	var err error
	q.stream, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.names.Stream,
		Description: "artifacts accepted by the API, waiting for the pipeline",
		Subjects:    []string{q.names.Subject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		MaxBytes:    q.cfg.MaxBytes,
		Discard:     jetstream.DiscardNew,
		Duplicates:  2 * time.Minute,
		Replicas:    q.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("queue: stream %s: %w", q.names.Stream, err)
	}
	if _, err := q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.names.DeadStream,
		Description: "artifacts the pipeline failed on MaxDeliver times",
		Subjects:    []string{q.names.DeadSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      30 * 24 * time.Hour,
		Replicas:    q.cfg.Replicas,
	}); err != nil {
		return fmt.Errorf("queue: stream %s: %w", q.names.DeadStream, err)
	}
	if err := q.ensureWebhooks(ctx); err != nil {
		return err
	}
	cc := jetstream.ConsumerConfig{
		Durable:       q.names.Consumer,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       q.cfg.AckWait,
		MaxDeliver:    -1, // the worker dead-letters after MaxDeliver tries itself, so nothing is dropped unseen
		MaxAckPending: 4096,
	}
	q.cons, err = q.stream.CreateOrUpdateConsumer(ctx, cc)
	if err != nil {
		return fmt.Errorf("queue: consumer: %w", err)
	}
	// The embedded server without a port has no consumer but this process,
	// which has just started it: messages still counted as delivered were
	// fetched by a previous run that died before acknowledging them, and
	// would wait out AckWait before anyone got them again. A new consumer
	// hands them out at once; the work-queue stream keeps every message
	// until it is acknowledged, so none is lost.
	if q.ns != nil && q.cfg.ListenPort <= 0 {
		info, err := q.cons.Info(ctx)
		if err != nil {
			return fmt.Errorf("queue: consumer: %w", err)
		}
		if info.NumAckPending > 0 {
			q.log.Info("queue: redelivering messages fetched before a crash", slog.Int("messages", info.NumAckPending))
			if err := q.stream.DeleteConsumer(ctx, q.names.Consumer); err != nil {
				return fmt.Errorf("queue: reset consumer: %w", err)
			}
			if q.cons, err = q.stream.CreateOrUpdateConsumer(ctx, cc); err != nil {
				return fmt.Errorf("queue: consumer: %w", err)
			}
		}
	}
	return nil
}

// Name identifies the queue in readiness reports.
func (q *Queue) Name() string { return "queue" }

// Ready reports whether the server answers.
func (q *Queue) Ready(ctx context.Context) error {
	if q.nc == nil || !q.nc.IsConnected() {
		return errors.New("queue: not connected")
	}
	if err := q.roomFor(0); err != nil {
		return err
	}
	_, err := q.stream.Info(ctx)
	return err
}

// Close closes the connection and stops the embedded server.
func (q *Queue) Close() {
	if q.nc != nil {
		q.nc.Drain()
		q.nc.Close()
	}
	if q.ns != nil {
		q.ns.Shutdown()
		q.ns.WaitForShutdown()
	}
	q.acked.close()
}

// envelope is the JSON of one message: a chunk of one org's batch.
type envelope struct {
	Org       string     `json:"org"`
	Batch     string     `json:"batch"`
	Artifacts []artifact `json:"artifacts"`
}

type artifact struct {
	ID        string          `json:"id"`
	Source    string          `json:"source"`
	Raw       string          `json:"raw"`
	Timestamp int64           `json:"ts"`
	Created   int64           `json:"created"`
	Metadata  json.RawMessage `json:"meta,omitempty"`
	Defaulted bool            `json:"tsd,omitempty"`
}

// Backlog returns the number of messages not yet processed, refreshed at
// most every 250 ms. One caller at a time asks the server; the others get
// the last answer meanwhile, so that a consumer electing its leader on a
// cluster (its info unanswered for seconds) delays one request, not all.
func (q *Queue) Backlog(ctx context.Context) (uint64, error) {
	q.mu.Lock()
	if q.refreshing || time.Since(q.checked) < 250*time.Millisecond {
		n := q.pending
		q.mu.Unlock()
		return n, nil
	}
	q.refreshing = true
	q.mu.Unlock()
	info, err := q.cons.Info(ctx)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refreshing = false
	if err != nil {
		return 0, err
	}
	q.pending, q.checked = info.NumPending+uint64(info.NumAckPending), time.Now()
	return q.pending, nil
}
