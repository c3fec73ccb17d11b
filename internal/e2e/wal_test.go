package e2e_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTornWAL kills vigil serve with SIGKILL while its workers are
// storing, then tears the SQLite WAL in the middle of a frame, and starts
// it again. SQLite's recovery keeps the transactions whose commit frame is
// whole and drops the rest; the workers acknowledge a queue message only
// after its transaction committed, so a torn transaction's messages are
// still in the queue and stored again.
//
//   - UncommittedTail: the tear is after the last commit frame (a
//     transaction the kill interrupted, the only tear a process crash can
//     leave): every artifact acknowledged with a 2xx is stored exactly once.
//   - CommittedFrames: the last committed transaction is torn, which only
//     a crash of the machine with --fsync deferred (SQLite
//     synchronous=NORMAL, no fsync per commit) can do: the artifacts of
//     that transaction may be lost, as docs/operations.md says, but not
//     silently: vigil starts, on a database that passes its integrity
//     check, and logs that the database lacks what it had committed.
func TestTornWAL(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed bool
	}{{"UncommittedTail", false}, {"CommittedFrames", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()
			p1 := startVigil(t, "vigil#1", dir, "--ingest-wait", "0", "--no-enrichment")
			tok := mintToken(t, dir, org, "signals:write", "signals:read")
			lctx, stopLoad := context.WithCancel(ctx)
			done := make(chan *ledger, 1)
			go func() { done <- flood(lctx, newClient(p1, tok), load{clients: 4, batches: 1000, size: 200}) }()
			pollUntil(t, 30*time.Second, "10,000 artifacts stored", func() (float64, bool) {
				n := processed(t, ctx, p1)
				return n, n >= 10_000
			})
			stopLoad()
			p1.kill(t)
			lg := <-done
			requireClean(t, lg, true)

			wal := filepath.Join(dir, "vigil.db-wal")
			w, err := readWAL(wal)
			if err != nil {
				t.Fatal(err)
			}
			cut := w.commitEnd + w.frameSize/2 // a frame after the last commit, torn
			if tc.committed {
				cut = w.commitEnd - w.frameSize/2 // the last commit frame, torn
				if w.commits == 0 {
					t.Fatalf("the WAL holds no committed transaction to tear: %+v", w)
				}
			}
			if err := tearAt(wal, cut, w); err != nil {
				t.Fatal(err)
			}
			t.Logf("WAL of %d bytes, %d valid frames, %d commits, the last ending at %d; torn at %d",
				w.size, w.frames, w.commits, w.commitEnd, cut)

			p2 := startVigil(t, "vigil#2", dir, "--ingest-wait", "0", "--no-enrichment")
			c2 := newClient(p2, tok)
			if !tc.committed {
				s := awaitStored(t, ctx, p2, c2, lg.acked)
				requireExactlyOnce(t, s, lg.acked)
				t.Logf("%d acknowledged, %d stored after the restart, %d processed again from the queue",
					len(lg.acked), s.total, int(processed(t, ctx, p2)))
				if p2.logs.count("the database lacks the last artifact") > 0 {
					t.Errorf("vigil#2 reported a lost WAL end although only an uncommitted frame was torn")
				}
			} else {
				// What the torn transaction held may be gone; wait for the
				// queue to drain, then count.
				pollUntil(t, storeTimeout, "the queue drained", func() (float64, bool) {
					n, err := metric(ctx, p2, "vigil_queue_depth")
					return n, err == nil && n == 0
				})
				s, err := takeSnapshot(ctx, c2)
				if err != nil {
					t.Fatal(err)
				}
				if d := s.duplicates(); d > 0 {
					t.Errorf("%d duplicate rows", d)
				}
				reported := p2.logs.count("the database lacks the last artifact a transaction committed") > 0
				t.Logf("%d acknowledged; after the committed frames were torn %d stored, %d acknowledged missing (the limit of --fsync deferred); reported in the log: %v",
					len(lg.acked), s.total, s.missing(lg.acked), reported)
				if s.missing(lg.acked) > 0 && !reported {
					t.Errorf("acknowledged artifacts are missing and vigil#2 did not say so")
				}
			}
			if _, err := p2.terminate(t, 40*time.Second); err != nil {
				t.Errorf("vigil#2 exited with %v after SIGTERM, want status 0", err)
			}
			requireIntact(t, filepath.Join(dir, "vigil.db"))
		})
	}
}

// walInfo is the layout of a SQLite WAL file as its recovery reads it.
type walInfo struct {
	size      int64
	frameSize int64
	frames    int   // valid frames: this generation's salts, checksums right
	commits   int   // valid commit frames
	commitEnd int64 // offset after the last valid commit frame (32: none)
	lastFrame []byte
}

// readWAL reads the WAL at path, checking each frame's salts and running
// checksum as SQLite's recovery does.
func readWAL(path string) (*walInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 32 {
		return nil, fmt.Errorf("WAL of %d bytes: no header", len(b))
	}
	magic := binary.BigEndian.Uint32(b[0:])
	if magic&^1 != 0x377f0682 {
		return nil, fmt.Errorf("WAL magic %#x", magic)
	}
	var order binary.ByteOrder = binary.LittleEndian
	if magic&1 == 1 {
		order = binary.BigEndian
	}
	sum := func(s0, s1 uint32, data []byte) (uint32, uint32) {
		for i := 0; i+8 <= len(data); i += 8 {
			s0 += order.Uint32(data[i:]) + s1
			s1 += order.Uint32(data[i+4:]) + s0
		}
		return s0, s1
	}
	pageSize := int64(binary.BigEndian.Uint32(b[8:]))
	salt1, salt2 := binary.BigEndian.Uint32(b[16:]), binary.BigEndian.Uint32(b[20:])
	s0, s1 := sum(0, 0, b[:24])
	if s0 != binary.BigEndian.Uint32(b[24:]) || s1 != binary.BigEndian.Uint32(b[28:]) {
		return nil, errors.New("WAL header checksum mismatch")
	}
	w := &walInfo{size: int64(len(b)), frameSize: 24 + pageSize, commitEnd: 32}
	for off := int64(32); off+w.frameSize <= w.size; off += w.frameSize {
		f := b[off : off+w.frameSize]
		if binary.BigEndian.Uint32(f[8:]) != salt1 || binary.BigEndian.Uint32(f[12:]) != salt2 {
			break
		}
		s0, s1 = sum(s0, s1, f[:8])
		s0, s1 = sum(s0, s1, f[24:])
		if s0 != binary.BigEndian.Uint32(f[16:]) || s1 != binary.BigEndian.Uint32(f[20:]) {
			break
		}
		w.frames++
		w.lastFrame = f
		if binary.BigEndian.Uint32(f[4:]) != 0 {
			w.commits++
			w.commitEnd = off + w.frameSize
		}
	}
	return w, nil
}

// tearAt leaves the WAL at path ending at cut, in the middle of a frame:
// truncated when it is longer, else extended with the start of a copy of
// its last valid frame (a frame whose write the crash cut short).
func tearAt(path string, cut int64, w *walInfo) error {
	if cut <= w.size {
		return os.Truncate(path, cut)
	}
	if w.lastFrame == nil {
		return errors.New("no frame to copy")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(w.lastFrame[:cut-w.size], w.size); err != nil {
		return err
	}
	return f.Sync()
}
