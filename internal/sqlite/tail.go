package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// With synchronous=NORMAL a commit is in the WAL but not yet on the disk:
// a crash of the machine can tear the end of the WAL, and SQLite's
// recovery then drops the transactions whose commit frame is gone without
// a word. The pipeline acknowledges a queue message once its transaction
// committed, so the artifacts of such a transaction are in neither the
// queue nor the database. To say so rather than lose them unnoticed, each
// transaction that inserted artifacts leaves the id of its last one in
// <database>-last (unsynced: one small write per transaction); Open looks
// that artifact up, and logs an error when the database no longer has it.

// tailRecord names the artifact last inserted.
type tailRecord struct {
	Org string `json:"org"`
	ID  string `json:"id"`
	TS  int64  `json:"ts"` // its timestamp, so that retention may forget it
}

// tailSize is the fixed length of the record on disk (JSON padded with
// spaces), so that each write replaces the whole of the previous one.
const tailSize = 1024

// tailMark is the file holding the record.
type tailMark struct {
	mu   sync.Mutex
	f    *os.File
	last tailRecord
}

func openTail(path string) (*tailMark, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	m := &tailMark{f: f}
	b := make([]byte, tailSize)
	n, _ := f.ReadAt(b, 0)
	// A torn or empty record says nothing.
	json.Unmarshal(bytes.TrimSpace(b[:n]), &m.last)
	return m, nil
}

// set records rec (the zero record forgets).
func (m *tailMark) set(rec tailRecord) {
	b, err := json.Marshal(rec)
	if err != nil || len(b) > tailSize {
		return // an org id too long to record: no evidence, no harm
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.f.WriteAt(append(b, bytes.Repeat([]byte{' '}, tailSize-len(b))...), 0) // best effort, like the record itself
	m.last = rec
}

// forgetBefore forgets the record when retention may have deleted its
// artifact (timestamp before t).
func (m *tailMark) forgetBefore(t time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	old := m.last.ID != "" && m.last.TS < t.UnixNano()
	m.mu.Unlock()
	if old {
		m.set(tailRecord{})
	}
}

func (m *tailMark) close() error {
	if m == nil {
		return nil
	}
	return m.f.Close()
}

// markInserted records the last of arts, just committed.
func (s *Store) markInserted(org string, arts []*vigil.Artifact) {
	if s.tail == nil || len(arts) == 0 {
		return
	}
	a := arts[len(arts)-1]
	s.tail.set(tailRecord{Org: org, ID: a.ID, TS: a.Timestamp.UnixNano()})
}

// checkTail reports, on log, when the artifact last inserted before the
// previous stop is not in the database. It returns whether it is missing.
func (s *Store) checkTail(ctx context.Context, log *slog.Logger) (bool, error) {
	rec := s.tail.last
	if rec.ID == "" {
		return false, nil
	}
	var one int
	err := s.w.QueryRowContext(ctx, `SELECT 1 FROM artifacts WHERE org_id = ? AND id = ?`, rec.Org, rec.ID).Scan(&one)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("sqlite: look for the last artifact stored: %w", err)
	}
	if log != nil {
		log.Error("sqlite: the database lacks the last artifact a transaction committed before the previous stop: "+
			"the end of its WAL was lost (a crash of the machine with --fsync deferred, or a damaged disk); "+
			"artifacts whose queue messages had already been acknowledged in that time are gone",
			slog.String("org", rec.Org), slog.String("artifact_id", rec.ID))
	}
	// Reported once: from here on the database is what it is.
	s.tail.set(tailRecord{})
	return true, nil
}
