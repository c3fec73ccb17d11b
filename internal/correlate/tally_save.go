package correlate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// A snapshot is what a Tally holds, written when its store closes and
// read back when it opens (Save, Restore), so that a restart counts the
// keys below their thresholds as if the process had stayed up. Before,
// the store wrote them to its database and loaded every key it held as
// one the database decides: an internet-facing host's scanners seen
// again after a restart (most are) all went to the database's one
// writer from then on, at a fifth of the rate (docs/benchmarks.md,
// issue 34).
//
// The file is snapshotMagic, then entries each led by a tag byte, then
// the CRC-32C of everything before it (4 bytes, big-endian):
//
//	'p' org detector mark   an (org, detector) pair, numbered in order
//	's' detector span       the span of a detector's windows
//	'c' pair n record…      a key held in memory: its n signals' records
//	'l' pair record         a key of the spill log: its record
//	'e'                     the end
//
// Strings and records are a uvarint length and their bytes, numbers
// uvarints (marks and spans zig-zag varints); a record is the spill
// log's (heldCodec.appendRecord).
const snapshotMagic = "vigil tally snapshot 1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Save writes what t holds, in memory, in its spill log and not yet
// written to the store (the pending signals of a hot key whose
// transaction did not commit), to w, and returns how many keys it wrote.
// It leaves t as it was, but its spill log takes no records without new
// segments: call it when the store closes, and Drain if it failed.
func (t *Tally) Save(w io.Writer) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	crc := crc32.New(castagnoli)
	sw := snapWriter{w: bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)}
	sw.w.WriteString(snapshotMagic)
	for _, p := range t.pairNames {
		sw.w.WriteByte('p')
		sw.str(p[0])
		sw.str(p[1])
		sw.int(t.marks[p])
	}
	for det, span := range t.spans {
		sw.w.WriteByte('s')
		sw.str(det)
		sw.int(int64(span))
	}
	keys := 0
	var buf [1]heldSignal
	for ref, e := range t.cold.one {
		key, sigs := t.cold.key(ref), t.cold.signals(ref, e, &buf)
		sw.w.WriteByte('c')
		sw.uint(uint64(ref.pair))
		sw.uint(uint64(len(sigs)))
		for _, h := range sigs {
			t.rec = t.codec.appendRecord(t.rec[:0], key, h)
			sw.bytes(t.rec)
		}
		keys++
	}
	// The pending signals of hot keys, as keys held in memory: the next
	// process finds them in the store's keys (Restore) or holds them.
	pending := newHeldCodec()
	for tk, h := range t.hot {
		if len(h.pending) == 0 {
			continue
		}
		sw.w.WriteByte('c')
		sw.uint(uint64(t.pair(tk)))
		sw.uint(uint64(len(h.pending)))
		for _, sg := range h.pending {
			t.rec = pending.appendRecord(t.rec[:0], tk.key, pending.encode(tk.key, sg))
			sw.bytes(t.rec)
		}
		keys++
	}
	var err error
	if t.log != nil {
		err = t.log.each(func(pair uint32, rec []byte) {
			sw.w.WriteByte('l')
			sw.uint(uint64(pair))
			sw.bytes(rec)
			keys++
		})
	}
	sw.w.WriteByte('e')
	if ferr := sw.w.Flush(); ferr != nil || err != nil {
		return keys, fmt.Errorf("tally snapshot: %w", errors.Join(ferr, err))
	}
	if _, err := w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return keys, fmt.Errorf("tally snapshot: %w", err)
	}
	return keys, nil
}

type snapWriter struct {
	w   *bufio.Writer
	num [binary.MaxVarintLen64]byte
}

func (sw *snapWriter) uint(n uint64) { sw.w.Write(binary.AppendUvarint(sw.num[:0], n)) }
func (sw *snapWriter) int(n int64)   { sw.w.Write(binary.AppendVarint(sw.num[:0], n)) }

func (sw *snapWriter) str(s string) {
	sw.uint(uint64(len(s)))
	sw.w.WriteString(s)
}

func (sw *snapWriter) bytes(b []byte) {
	sw.uint(uint64(len(b)))
	sw.w.Write(b)
}

// Restore reads a snapshot that Save wrote (of the size given) into t,
// after the store's keys were loaded with Hold, and returns how many keys
// it read. A key the store holds signals of takes its snapshot's signals
// as pending, written with its next; the others are held as they were,
// in memory or in the spill log. A snapshot that is damaged (its
// checksum), cut short or of another version restores nothing.
func (t *Tally) Restore(r io.ReadSeeker) (int, error) {
	size, err := checkSnapshot(r)
	if err != nil {
		return 0, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("tally snapshot: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	sr := snapReader{r: bufio.NewReaderSize(io.LimitReader(r, size-4), 1<<16)}
	if magic := sr.bytes(len(snapshotMagic)); string(magic) != snapshotMagic {
		return 0, errors.New("tally snapshot: not a snapshot of this version")
	}
	var pairs []uint32 // the file's pair numbers to t's
	pairOf := func() uint32 {
		n := sr.uint()
		if n >= uint64(len(pairs)) {
			sr.fail(fmt.Errorf("pair %d of %d", n, len(pairs)))
			return 0
		}
		return pairs[n]
	}
	keys := 0
	for sr.err == nil {
		switch tag := sr.byte(); tag {
		case 'p':
			// One at a time: str's bytes are valid until the next read.
			org := string(sr.str())
			det := string(sr.str())
			mark := sr.int()
			p := t.pair(tallyKey{org, det, ""})
			pairs = append(pairs, p)
			if m, ok := t.marks[[2]string{org, det}]; !ok || mark > m {
				t.marks[[2]string{org, det}] = mark
			}
		case 's':
			det := string(sr.str())
			span := time.Duration(sr.int())
			t.spans[det] = max(t.spans[det], span)
		case 'c':
			pair, n := pairOf(), sr.uint()
			if n == 0 || n > 1<<24 {
				sr.fail(fmt.Errorf("a key of %d signals", n))
				break
			}
			c := &coldKey{}
			var key string
			for range n {
				k, hs, err := t.codec.readRecord(sr.str(), c.sigs)
				if err != nil {
					sr.fail(err)
					break
				}
				key = k
				c.sigs = hs
			}
			if sr.err == nil {
				t.restore(pair, key, c)
				keys++
			}
		case 'l':
			pair, rec := pairOf(), sr.str()
			if sr.err != nil {
				break
			}
			key := string(recordKey(rec))
			if t.hot[t.restoredKey(pair, key)] == nil && t.log != nil && t.log.put(pair, key, recordAt(rec), rec) {
				keys++
				break
			}
			k, hs, err := t.codec.readRecord(rec, nil)
			if err != nil {
				sr.fail(err)
				break
			}
			t.restore(pair, k, &coldKey{sigs: hs})
			keys++
		case 'e':
			return keys, nil
		default:
			sr.fail(fmt.Errorf("entry %q", tag))
		}
	}
	// Unreachable with the checksum right, but for a bug: what was
	// restored stays (each key whole), the rest counts from zero.
	return keys, fmt.Errorf("tally snapshot: %w", sr.err)
}

func (t *Tally) restoredKey(pair uint32, key string) tallyKey {
	p := t.pairNames[pair]
	return tallyKey{p[0], p[1], key}
}

// restore holds c, the signals of key of pair by time, as a cold key, or
// as the pending signals of a key the store holds signals of.
func (t *Tally) restore(pair uint32, key string, c *coldKey) {
	tk := t.restoredKey(pair, key)
	if h := t.hot[tk]; h != nil {
		h.pending = append(h.pending, t.codec.decodeAll(key, c.sigs)...)
		h.newest = max(h.newest, c.newest())
		return
	}
	if len(c.sigs) >= indexFrom {
		c.ids = make(map[heldIdent]bool, 2*len(c.sigs))
		for _, h := range c.sigs {
			c.ids[identOf(h)] = true
		}
	}
	ref := t.cold.intern(pair, key)
	if e, ok := t.cold.one[ref]; ok { // only if the file named it twice
		t.held -= t.cold.count(ref, e)
	}
	t.held += len(c.sigs)
	t.cold.put(ref, c)
}

// checkSnapshot returns the size of the snapshot r holds, an error when
// its checksum is not that of its bytes.
func checkSnapshot(r io.ReadSeeker) (int64, error) {
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("tally snapshot: %w", err)
	}
	if size < int64(len(snapshotMagic))+5 {
		return 0, fmt.Errorf("tally snapshot: %d bytes, too short", size)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("tally snapshot: %w", err)
	}
	crc := crc32.New(castagnoli)
	if _, err := io.CopyN(crc, r, size-4); err != nil {
		return 0, fmt.Errorf("tally snapshot: %w", err)
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return 0, fmt.Errorf("tally snapshot: %w", err)
	}
	if binary.BigEndian.Uint32(sum[:]) != crc.Sum32() {
		return 0, errors.New("tally snapshot: damaged (its checksum does not match)")
	}
	return size, nil
}

// snapReader reads a snapshot's entries; its first error sticks.
type snapReader struct {
	r   *bufio.Reader
	err error
	buf []byte
}

func (sr *snapReader) fail(err error) {
	if sr.err == nil {
		sr.err = err
	}
}

func (sr *snapReader) byte() byte {
	b, err := sr.r.ReadByte()
	if err != nil {
		sr.fail(io.ErrUnexpectedEOF)
	}
	return b
}

func (sr *snapReader) uint() uint64 {
	n, err := binary.ReadUvarint(sr.r)
	if err != nil {
		sr.fail(io.ErrUnexpectedEOF)
	}
	return n
}

func (sr *snapReader) int() int64 {
	n, err := binary.ReadVarint(sr.r)
	if err != nil {
		sr.fail(io.ErrUnexpectedEOF)
	}
	return n
}

// bytes reads n bytes, valid until the next read.
func (sr *snapReader) bytes(n int) []byte {
	if sr.err != nil {
		return nil
	}
	if cap(sr.buf) < n {
		sr.buf = make([]byte, n)
	}
	b := sr.buf[:n]
	if _, err := io.ReadFull(sr.r, b); err != nil {
		sr.fail(io.ErrUnexpectedEOF)
		return nil
	}
	return b
}

// str reads a length and that many bytes, valid until the next read.
func (sr *snapReader) str() []byte {
	n := sr.uint()
	if n > 1<<20 {
		sr.fail(fmt.Errorf("a string of %d bytes", n))
		return nil
	}
	return sr.bytes(int(n))
}
