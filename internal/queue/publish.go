package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/jsontext"
)

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
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	n, err := q.Backlog(bctx)
	cancel()
	if err == nil && n >= uint64(q.cfg.MaxPending) {
		return false, errFull
	}
	var w *waiter
	if wait > 0 {
		if w, err = q.expect(batch, len(chunks)); err == nil {
			defer q.forget(batch)
		}
	}
	msgs := make([]*nats.Msg, len(chunks))
	futures := make([]jetstream.PubAckFuture, len(chunks))
	for i, body := range chunks {
		msgs[i] = nats.NewMsg(q.names.Subject)
		msgs[i].Data = body
		msgs[i].Header.Set(jetstream.MsgIDHeader, batch+"."+strconv.Itoa(i))
		if futures[i], err = q.js.PublishMsgAsync(msgs[i]); err != nil && !retryable(err) {
			return false, publishError(err)
		}
	}
	deadline := time.Now().Add(publishRetryFor)
	var last uint64 // the highest stream sequence acknowledged
	for i, m := range msgs {
		seq, err := q.awaitAck(ctx, m, futures[i], deadline)
		if err != nil {
			return false, err
		}
		last = max(last, seq)
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

// A message JetStream has not acknowledged may be in the stream or not:
// the leader of an R3 stream killed after its followers stored a message
// but before it answered never answers, and the client learns nothing
// until it gives up. A 503 for it would have the client send it again, to
// be stored twice. So Publish sends such a message again, with the same
// Nats-Msg-Id, which the stream stores at most once (Duplicates, 2 min)
// and acknowledges either way: after publishAttemptWait without an
// answer, after a refusal that says nothing was stored for want of a
// leader (no responders while a new one is elected), and after a lost
// connection once the client is connected again (to another node of a
// cluster). It gives up with a 503 publishRetryFor after the first send:
// longer than a stream's leader election (4 to 9 s of nats-server's
// election timeout, and the time to notice the leader is gone).
const (
	publishAttemptWait = 3 * time.Second
	publishRetryFor    = 15 * time.Second
	publishRetryPause  = 250 * time.Millisecond
)

// awaitAck waits for the stream's acknowledgement of m, first sent as f
// (nil if that send failed), sending it again as long as its fate is
// unknown, until deadline. It returns the stream sequence of m.
func (q *Queue) awaitAck(ctx context.Context, m *nats.Msg, f jetstream.PubAckFuture, deadline time.Time) (uint64, error) {
	// The embedded server never answers a publish it failed to write (a
	// full disk): its health says so long before the deadline.
	tick := time.NewTicker(publishRetryPause)
	defer tick.Stop()
	cause := errors.New("no acknowledgement")
	for {
		if f != nil {
			select {
			case pa := <-f.Ok():
				return pa.Sequence, nil
			case err := <-f.Err():
				if !retryable(err) {
					return 0, publishError(err)
				}
				cause, f = err, nil
			case <-ctx.Done():
				return 0, &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "request cancelled", Err: ctx.Err()}
			case <-tick.C:
				if err := q.embeddedHealth(); err != nil {
					return 0, err
				}
			}
			continue
		}
		// Sent again once connected, after a pause: a stream without a
		// leader refuses at once.
		for first := true; first || !q.nc.IsConnected(); first = false {
			if !time.Now().Before(deadline) {
				return 0, unacknowledged(q.nc.IsConnected(), cause)
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return 0, &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "request cancelled", Err: ctx.Err()}
			}
			if err := q.embeddedHealth(); err != nil {
				return 0, err
			}
		}
		var err error
		if f, err = q.js.PublishMsgAsync(m); err != nil {
			if !retryable(err) {
				return 0, publishError(err)
			}
			cause, f = err, nil
		}
	}
}

// unacknowledged is the error of a message whose fate stayed unknown until
// the deadline: the stream may have it.
func unacknowledged(connected bool, cause error) error {
	if !connected {
		return &vigil.Error{Code: vigil.EUNAVAILABLE, Err: cause,
			Message: "ingest queue unavailable: the connection to NATS was lost before it acknowledged the batch; retry later"}
	}
	return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "queue did not acknowledge in time", Err: cause}
}

// errClusterUnavailable is JetStream's "temporarily unavailable" (a
// cluster without a meta leader): nothing was stored.
const errClusterUnavailable jetstream.ErrorCode = 10008

// retryable reports whether a publish that failed with err may be sent
// again: the server did not answer (no responders: a stream electing its
// leader; a timeout; a lost connection) or said it was temporarily
// unavailable. Its other answers (a full stream, no storage, a message
// too large) stand.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == errClusterUnavailable
	}
	return !errors.Is(err, jetstream.ErrTooManyStalledMsgs) && !errors.Is(err, nats.ErrConnectionClosed)
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

// chunk encodes arts into messages of at most maxChunk bytes each, each
// written into an array made once for it.
func (q *Queue) chunk(org, batch string, arts []*vigil.Artifact) [][]byte {
	var out [][]byte
	for start := 0; start < len(arts); {
		end, size, room := start, 0, len(org)+len(batch)+64
		for ; end < len(arts); end++ {
			a := arts[end]
			// A raw line is at most 1 MiB; JSON escaping can at worst
			// grow it sixfold, so a single artifact may need a message
			// of its own.
			est := len(a.Raw)*2 + len(a.RawJSON) + len(a.Metadata) + 200
			if end > start && size+est > q.maxChunk {
				break
			}
			size += est
			room += len(a.RawJSON) + len(a.Raw) + len(a.Raw)/8 + len(a.ID) + len(a.Source) + len(a.Metadata) + 100
		}
		msg := appendEnvelopeStart(make([]byte, 0, room), org, batch)
		for i := start; i < end; i++ {
			if i > start {
				msg = append(msg, ',')
			}
			msg = appendArtifact(msg, arts[i])
		}
		out = append(out, append(msg, "]}"...))
		start = end
	}
	return out
}

// appendEnvelopeStart writes an envelope's members up to its artifacts'
// '[', as json.Marshal writes an envelope.
func appendEnvelopeStart(b []byte, org, batch string) []byte {
	b = append(b, `{"org":`...)
	b = jsontext.AppendString(b, org)
	b = append(b, `,"batch":`...)
	b = jsontext.AppendString(b, batch)
	return append(b, `,"artifacts":[`...)
}

// appendArtifact writes a as json.Marshal writes its artifact, without
// reflection (docs/benchmarks.md: Marshal was 3 % of the CPU of the
// Windows mix, most of it escaping the raw line again): the raw line as
// the literal the client sent (RawJSON) when there is one, which the
// worker decodes to the same line.
func appendArtifact(b []byte, a *vigil.Artifact) []byte {
	b = append(b, `{"id":`...)
	b = jsontext.AppendString(b, a.ID)
	b = append(b, `,"source":`...)
	b = jsontext.AppendString(b, a.Source)
	b = append(b, `,"raw":`...)
	if a.RawJSON != nil {
		b = append(b, a.RawJSON...)
	} else {
		b = jsontext.AppendString(b, a.Raw)
	}
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, a.Timestamp.UnixNano(), 10)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, a.CreatedAt.UnixNano(), 10)
	if len(a.Metadata) > 0 {
		b = append(b, `,"meta":`...)
		// As json.Marshal writes a json.RawMessage: compacted (the API's
		// is already).
		meta := a.Metadata
		if bytes.ContainsAny(meta, " \t\r\n") {
			var c bytes.Buffer
			if json.Compact(&c, meta) == nil {
				meta = c.Bytes()
			} // else not JSON: the worker refuses the message, as it did Marshal's nothing
		}
		b = append(b, meta...)
	}
	if a.TimestampDefaulted {
		b = append(b, `,"tsd":true`...)
	}
	return append(b, '}')
}
