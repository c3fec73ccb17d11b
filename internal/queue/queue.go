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
	"strconv"
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

	mu      sync.Mutex
	pending uint64 // last known backlog
	checked time.Time
	waiters map[string]*waiter
	sub     *nats.Subscription
	subOnce sync.Once
	subErr  error

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
	// Leave room under the server's payload limit for headers and framing.
	q.maxChunk = int(q.nc.MaxPayload()) - 64<<10
	if q.maxChunk > 4<<20 {
		q.maxChunk = 4 << 20
	}
	q.js, err = jetstream.New(q.nc)
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
// most every 250 ms.
func (q *Queue) Backlog(ctx context.Context) (uint64, error) {
	q.mu.Lock()
	if time.Since(q.checked) < 250*time.Millisecond {
		n := q.pending
		q.mu.Unlock()
		return n, nil
	}
	q.mu.Unlock()
	info, err := q.cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	n := info.NumPending + uint64(info.NumAckPending)
	q.mu.Lock()
	q.pending, q.checked = n, time.Now()
	q.mu.Unlock()
	return n, nil
}

// errFull is returned when the workers are too far behind.
var errFull = &vigil.Error{Code: vigil.ERATELIMITED, Message: "ingest queue is full; retry later"}

// Publish stores arts durably in the stream, in chunks under the server's
// payload limit. It returns ERATELIMITED when the stream is full or the
// workers are too far behind, ETOOLARGE when the batch is larger than the
// whole stream may hold, ENOSPACE when the disk the server writes to is
// (nearly) full, and EUNAVAILABLE when the server did not take them or is
// not connected. After a nil error the artifacts survive a crash of this
// process. It then waits up to wait for the pipeline to finish the batch,
// so that a client reading right after a reply finds its artifacts; it
// reports whether that happened (a timeout is not an error).
func (q *Queue) Publish(ctx context.Context, org string, arts []*vigil.Artifact, wait time.Duration) (processed bool, err error) {
	batch := vigil.NewID()
	chunks := q.chunk(org, batch, arts)
	// A batch the stream could not hold even empty is refused for good, not
	// with a 429 that no retry would cure.
	size := 0
	for _, c := range chunks {
		size += len(c) + len(q.names.Subject) + 128 // headers and JetStream's record
	}
	if int64(size) > q.cfg.MaxBytes {
		return false, &vigil.Error{Code: vigil.ETOOLARGE, Message: fmt.Sprintf(
			"batch needs %d bytes of queue, more than the whole ingest queue (%d bytes); send smaller batches", size, q.cfg.MaxBytes)}
	}
	if !q.nc.IsConnected() {
		// Published now, the batch (and the backlog query) would wait in
		// the client's reconnect buffer for a server that may not come
		// back within the request.
		return false, &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "ingest queue unavailable: not connected to NATS; retry later"}
	}
	if err := q.roomFor(size); err != nil {
		return false, err
	}
	if n, err := q.Backlog(ctx); err == nil && n >= uint64(q.cfg.MaxPending) {
		return false, errFull
	}
	var w *waiter
	if wait > 0 {
		if w, err = q.expect(batch, len(chunks)); err == nil {
			defer q.forget(batch)
		}
	}
	futures := make([]jetstream.PubAckFuture, 0, len(chunks))
	for i, body := range chunks {
		msg := nats.NewMsg(q.names.Subject)
		msg.Data = body
		msg.Header.Set(jetstream.MsgIDHeader, batch+"."+strconv.Itoa(i))
		f, err := q.js.PublishMsgAsync(msg)
		if err != nil {
			return false, publishError(err)
		}
		futures = append(futures, f)
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	// The embedded server never answers a publish it failed to write (a
	// full disk), and a server that dies with publishes in flight never
	// answers them: its health, or the lost connection, says so long
	// before the timeout.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last uint64 // the highest stream sequence acknowledged
	for _, f := range futures {
	acked:
		for {
			select {
			case pa := <-f.Ok():
				last = max(last, pa.Sequence)
				break acked
			case err := <-f.Err():
				return false, publishError(err)
			case <-ctx.Done():
				return false, &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "request cancelled", Err: ctx.Err()}
			case <-timeout.C:
				return false, &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "queue did not acknowledge in time"}
			case <-tick.C:
				if !q.nc.IsConnected() {
					return false, &vigil.Error{Code: vigil.EUNAVAILABLE,
						Message: "ingest queue unavailable: the connection to NATS was lost before it acknowledged the batch; retry later"}
				}
				if err := q.embeddedHealth(); err != nil {
					return false, err
				}
			}
		}
	}
	if q.acked != nil {
		q.acked.advance(last)
	}
	if w == nil {
		return false, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.done:
		return true, nil
	case <-t.C:
	case <-ctx.Done():
	}
	return false, nil
}

// JetStream API error codes (nats-server errors.json) that mean "no room".
const (
	errStoreFailed              jetstream.ErrorCode = 10077 // e.g. maximum bytes exceeded with DiscardNew
	errInsufficientResources    jetstream.ErrorCode = 10023
	errAccountResourcesExceeded jetstream.ErrorCode = 10002
)

// publishError maps a refusal by the stream's bound to ERATELIMITED (the
// workers will make room), a refusal for lack of storage on the server to
// ENOSPACE (retrying soon will not help), and any other failure to
// EUNAVAILABLE: the artifacts were not accepted.
func publishError(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errStoreFailed: // the stream's own bound (--max-queue-bytes): the workers will make room
			return &vigil.Error{Code: vigil.ERATELIMITED, Message: "ingest queue is full; retry later", Err: err}
		case errInsufficientResources, errAccountResourcesExceeded: // the server's storage, not the stream's
			return &vigil.Error{Code: vigil.ENOSPACE, Message: "the NATS server has no storage left for the ingest queue; " +
				"retry once its disk (or max_file_store) has room", Err: err}
		}
	}
	if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		return &vigil.Error{Code: vigil.ERATELIMITED, Message: "ingest queue is busy; retry later", Err: err}
	}
	return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "ingest queue unavailable", Err: err}
}

// chunk encodes arts into messages of at most maxChunk bytes each.
func (q *Queue) chunk(org, batch string, arts []*vigil.Artifact) [][]byte {
	var out [][]byte
	env := envelope{Org: org, Batch: batch}
	size := 0
	flush := func() {
		if len(env.Artifacts) == 0 {
			return
		}
		b, _ := json.Marshal(env)
		out = append(out, b)
		env.Artifacts = env.Artifacts[:0]
		size = 0
	}
	for _, a := range arts {
		// A raw line is at most 1 MiB; JSON escaping can at worst grow it
		// sixfold, so a single artifact may need a message of its own.
		est := len(a.Raw)*2 + len(a.Metadata) + 200
		if size > 0 && size+est > q.maxChunk {
			flush()
		}
		env.Artifacts = append(env.Artifacts, artifact{ID: a.ID, Source: a.Source, Raw: a.Raw,
			Timestamp: a.Timestamp.UnixNano(), Created: a.CreatedAt.UnixNano(), Metadata: a.Metadata, Defaulted: a.TimestampDefaulted})
		size += est
	}
	flush()
	return out
}
