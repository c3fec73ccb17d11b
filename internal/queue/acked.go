package queue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// ackedMark records the highest stream sequence the embedded server
// acknowledged to a publish, in a file beside the server's own, so that
// the next start can tell when the server's files lost acknowledged
// messages. JetStream recovers a message block whose end was torn (a crash
// of the machine with deferred fsync, a damaged disk) by dropping the torn
// records without a word — the stream simply ends earlier — and the
// artifacts a client was told are kept would vanish unnoticed.
type ackedMark struct {
	mu  sync.Mutex
	f   *os.File
	seq uint64
}

// openAckedMark opens (creating) the mark of stream in dir and returns it
// with the sequence it holds (0 when new or unreadable).
func openAckedMark(dir, stream string) (*ackedMark, error) {
	f, err := os.OpenFile(filepath.Join(dir, "acknowledged-"+stream+".seq"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("queue: acknowledged mark: %w", err)
	}
	m := &ackedMark{f: f}
	var b [8]byte
	if n, _ := f.ReadAt(b[:], 0); n == len(b) {
		m.seq = binary.BigEndian.Uint64(b[:])
	}
	return m, nil
}

// advance records seq if it is the highest yet. The write is not synced:
// the mark is evidence of loss when it outlives the stream's tail, never
// a promise.
func (m *ackedMark) advance(seq uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq > m.seq {
		m.set(seq)
	}
}

func (m *ackedMark) set(seq uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	m.f.WriteAt(b[:], 0) // best effort: a failed write only weakens the evidence
	m.seq = seq
}

func (m *ackedMark) close() {
	if m != nil {
		m.f.Close()
	}
}

// checkLost compares the embedded server's artifact stream, as recovered
// from its files, with the mark of what was acknowledged, and logs an
// error naming what is gone: the messages after the stream's last
// sequence up to the mark, of which those beyond the consumer's ack floor
// had not been stored by the workers. It then lowers the mark to the
// stream, so that the loss is reported once. It returns the number of
// acknowledged messages the stream no longer has.
func (q *Queue) checkLost(ctx context.Context) (uint64, error) {
	mark, err := openAckedMark(q.cfg.Dir, q.names.Stream)
	if err != nil {
		return 0, err
	}
	q.acked = mark
	s, err := q.js.Stream(ctx, q.names.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s = nil
	} else if err != nil {
		return 0, fmt.Errorf("queue: stream %s: %w", q.names.Stream, err)
	}
	var last, floor uint64
	if s != nil {
		info, err := s.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("queue: stream %s: %w", q.names.Stream, err)
		}
		last = info.State.LastSeq
		if l := info.State.Lost; l != nil && len(l.Msgs) > 0 {
			q.log.Error("queue: JetStream lost messages of the ingest stream while recovering damaged files; "+
				"the artifacts acknowledged in them are gone", slog.Int("messages", len(l.Msgs)), slog.Uint64("bytes", l.Bytes),
				slog.Any("sequences", l.Msgs))
		}
		if c, err := s.Consumer(ctx, q.names.Consumer); err == nil {
			if ci, err := c.Info(ctx); err == nil {
				floor = ci.AckFloor.Stream
			}
		}
	}
	if mark.seq <= last {
		return 0, nil
	}
	gone := mark.seq - last
	attrs := []any{slog.Uint64("stream_last_sequence", last), slog.Uint64("acknowledged_up_to", mark.seq),
		slog.Uint64("messages_gone", gone), slog.String("dir", q.cfg.Dir)}
	if floor >= mark.seq {
		q.log.Warn("queue: the ingest stream's files end before messages that had been acknowledged to clients, "+
			"but the workers had stored them all: nothing is lost", attrs...)
	} else {
		q.log.Error("queue: the ingest stream's files end before messages that had been acknowledged to clients: "+
			"they are gone from the queue (files torn by a crash of the machine with --fsync deferred, or damaged); "+
			"the artifacts of those the workers had not stored yet are lost",
			append(attrs, slog.Uint64("at_most_unstored", mark.seq-max(last, floor)))...)
	}
	mark.mu.Lock()
	mark.set(last)
	mark.mu.Unlock()
	return gone, nil
}
