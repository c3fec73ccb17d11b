package correlate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"path/filepath"
)

// spillLog keeps on disk the cold keys of a few signals that a full Tally
// spills, instead of the store's transaction: on an internet-facing host
// nearly every key of a port scan or a failed login is a scanning address
// seen once, held for its span and the lateness (3 to 7 minutes), and at
// thousands of new addresses a second most of them spill. Writing each to
// the database cost the single writer a row, its index entries and the
// WAL's checkpoints, and remembering it afterwards (goneKeys) 37 bytes
// of heap; here a key costs its record appended to a file (about 90
// bytes, written a buffer at a time, read back only if the key comes
// again) and 16 bytes of an index in memory, without pointers.
//
// Each (org, detector) pair of the Tally has its own segments, oldest
// first, the newest taking new records; a segment is one file and an
// open-addressed table of its records (a hash of the key and the
// record's offset). A key is in the log at most once: the Tally looks it
// up (take) before it holds a signal of it, and takes it out when it
// does. A segment is dropped whole once its newest record is past its
// pair's horizon; a record past the horizon in a segment still kept is
// found as absent. Nothing of it outlives the process: a crash loses what
// it holds, as it loses the signals held in memory (docs/detections.md).
type spillLog struct {
	dir   string
	seed  maphash.Seed
	pairs []*pairLog // by the Tally's pair number
	// live is how many records are logged and not taken, limit the most.
	live, limit int
	next        uint64 // the number of the next segment's file
	rd          []byte
	// err is the first I/O error: the log takes no more records.
	err error
}

type pairLog struct {
	segs []*logSeg // oldest first; the last takes new records
	made int       // segments made
	// from is the time before which no record counts (Tally.Prune).
	from int64
}

type logSeg struct {
	path    string
	f       *os.File
	w       *bufio.Writer // nil once sealed
	size    int64         // bytes written, buffered included
	records int
	max     int // records it takes: half its table
	live    int
	newest  int64 // the time of its newest record
	// table holds, per record, the high half of its key's hash (with its
	// lowest bit set) and its offset; 0 is empty, logTomb a record taken.
	// It lives outside the Go heap (newLogTable); free releases it.
	table []uint64
	free  func()
}

const (
	// logSegMin is how many records a pair's first segment takes; each
	// next one takes twice the last, up to logSegMax (a table of 8 MiB).
	// A key that is not logged (most: a scanner seen once) is looked for
	// in every segment of its pair within the horizon, a cache miss each:
	// at 2^17 records a full log of 4.8 M keys took 30-odd look-ups a new
	// key, 1.4 % of the edge mix's CPU (as many with twice the keys in
	// segments four times as large).
	logSegMin = 1 << 12
	logSegMax = 1 << 19
	// logRecordMax is the longest record logged; a longer key stays in
	// memory or spills to the store.
	logRecordMax = 1 << 10
	logTomb      = 1
	// logReadAhead is what one read of a record asks for: most records
	// are shorter.
	logReadAhead = 256
)

// newSpillLog returns an empty log in dir, removing whatever dir held (a
// crashed process's records, which count no more).
func newSpillLog(dir string, limit int) (*spillLog, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("spill log: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spill log: %w", err)
	}
	return &spillLog{dir: dir, seed: maphash.MakeSeed(), limit: limit, rd: make([]byte, logRecordMax+2)}, nil
}

func (l *spillLog) pair(p uint32) *pairLog {
	for int(p) >= len(l.pairs) {
		l.pairs = append(l.pairs, &pairLog{from: math.MinInt64})
	}
	return l.pairs[p]
}

func (l *spillLog) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// put logs rec, the record of key of pair whose signal is at at, and
// reports whether it did: not when the log is full, failed, or rec is
// longer than logRecordMax.
func (l *spillLog) put(pair uint32, key string, at int64, rec []byte) bool {
	if l.err != nil || l.live >= l.limit || len(rec) > logRecordMax {
		return false
	}
	pl := l.pair(pair)
	var s *logSeg
	if n := len(pl.segs); n > 0 && pl.segs[n-1].w != nil {
		s = pl.segs[n-1]
	}
	if s == nil || s.records >= s.max || s.size+int64(len(rec))+2 > math.MaxUint32 {
		if s != nil {
			if err := s.seal(); err != nil {
				l.fail(err)
				return false
			}
		}
		var err error
		if s, err = l.newSeg(min(logSegMax, logSegMin<<min(pl.made, 8))); err != nil {
			l.fail(err)
			return false
		}
		pl.made++
		pl.segs = append(pl.segs, s)
	}
	off := s.size
	var hdr [2]byte
	binary.LittleEndian.PutUint16(hdr[:], uint16(len(rec)))
	s.w.Write(hdr[:])
	if _, err := s.w.Write(rec); err != nil { // bufio's errors stick: the last write reports the first
		l.fail(fmt.Errorf("spill log: %w", err))
		return false
	}
	s.size += int64(len(rec)) + 2
	s.records++
	s.live++
	l.live++
	s.newest = max(s.newest, at)
	s.insert(l.hash(key), uint32(off))
	return true
}

func (l *spillLog) hash(key string) uint64 { return maphash.String(l.seed, key) }

func (l *spillLog) newSeg(records int) (*logSeg, error) {
	path := filepath.Join(l.dir, fmt.Sprintf("%016x.log", l.next))
	l.next++
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spill log: %w", err)
	}
	table, free := newLogTable(2 * records)
	return &logSeg{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10), max: records, newest: math.MinInt64,
		table: table, free: free}, nil
}

// seal writes what s buffers and closes its file: it takes no more
// records, and is read (rarely) by opening it again, so that the files
// open are one a pair, however many orgs spill.
func (s *logSeg) seal() error {
	if s.w == nil {
		return nil
	}
	err := s.w.Flush()
	s.w = nil
	err = errors.Join(err, s.f.Close())
	s.f = nil
	if err != nil {
		return fmt.Errorf("spill log: %w", err)
	}
	return nil
}

// readAt reads s's file at off into b, as ReadAt does.
func (s *logSeg) readAt(b []byte, off int64) error {
	f := s.f
	if f == nil {
		var err error
		if f, err = os.Open(s.path); err != nil {
			return fmt.Errorf("spill log: %w", err)
		}
		defer f.Close()
	}
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("spill log: %w", err)
	}
	return nil
}

// drop closes s, releases its table and removes its file.
func (s *logSeg) drop() error {
	s.w = nil
	if s.free != nil {
		s.table = nil
		s.free()
		s.free = nil
	}
	var err error
	if s.f != nil {
		err = s.f.Close()
		s.f = nil
	}
	return errors.Join(err, os.Remove(s.path))
}

func logEntry(h uint64, off uint32) uint64 { return uint64(uint32(h>>32)|1)<<32 | uint64(off) }

func (s *logSeg) insert(h uint64, off uint32) {
	mask := uint64(len(s.table) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if e := s.table[i]; e == 0 || e == logTomb {
			s.table[i] = logEntry(h, off)
			return
		}
	}
}

// read returns the record of s at off, valid until the next read.
func (l *spillLog) read(s *logSeg, off int64) ([]byte, error) {
	if s.w != nil && off+logReadAhead > s.size-int64(s.w.Buffered()) && s.w.Buffered() > 0 {
		if err := s.w.Flush(); err != nil {
			return nil, fmt.Errorf("spill log: %w", err)
		}
	}
	b := l.rd[:min(logReadAhead, s.size-off)]
	if err := s.readAt(b, off); err != nil {
		return nil, err
	}
	if len(b) < 2 {
		return nil, errors.New("spill log: a record past the end of its file")
	}
	n := int(binary.LittleEndian.Uint16(b))
	if n+2 > len(b) {
		b = l.rd[:n+2]
		if err := s.readAt(b, off); err != nil {
			return nil, err
		}
	}
	return b[2 : n+2], nil
}

// take returns the record of key of pair and forgets it; false when none
// is logged, or its signal is before from (forgotten). The record is
// valid until the next call of the log.
func (l *spillLog) take(pair uint32, key string, from int64) ([]byte, bool, error) {
	if int(pair) >= len(l.pairs) || l.live == 0 {
		return nil, false, nil
	}
	pl := l.pairs[pair]
	from = max(from, pl.from)
	h := l.hash(key)
	tag := uint64(uint32(h>>32) | 1)
	for k := len(pl.segs) - 1; k >= 0; k-- {
		s := pl.segs[k]
		if s.live == 0 || s.newest < from {
			continue
		}
		mask := uint64(len(s.table) - 1)
		for i := h & mask; ; i = (i + 1) & mask {
			e := s.table[i]
			if e == 0 {
				break
			}
			if e>>32 != tag {
				continue
			}
			rec, err := l.read(s, int64(uint32(e)))
			if err != nil {
				l.fail(err)
				return nil, false, err
			}
			if string(recordKey(rec)) != key {
				continue
			}
			s.table[i] = logTomb
			s.live--
			l.live--
			if at := recordAt(rec); at < from {
				return nil, false, nil
			}
			return rec, true, nil
		}
	}
	return nil, false, nil
}

// expire drops the segments of pair whose newest record is before from,
// and returns how many records not taken they held.
func (l *spillLog) expire(pair uint32, from int64) int {
	if int(pair) >= len(l.pairs) {
		return 0
	}
	pl := l.pairs[pair]
	n, kept := 0, pl.segs[:0]
	for _, s := range pl.segs {
		if s.newest >= from && (s.live > 0 || s.w != nil) {
			kept = append(kept, s)
			continue
		}
		n += s.live
		l.live -= s.live
		if err := s.drop(); err != nil {
			l.fail(err)
		}
	}
	clear(pl.segs[len(kept):])
	pl.segs = kept
	return n
}

// prune forgets the records of pair before from (Tally.Prune), and
// returns how many it dropped with their segments.
func (l *spillLog) prune(pair uint32, from int64) int {
	if int(pair) >= len(l.pairs) {
		return 0
	}
	l.pairs[pair].from = max(l.pairs[pair].from, from)
	return l.expire(pair, from)
}

// drain calls f with every record logged and not taken, with its pair,
// then drops every segment.
func (l *spillLog) drain(f func(pair uint32, rec []byte)) error {
	err := l.each(f)
	var errs []error
	for _, pl := range l.pairs {
		for _, s := range pl.segs {
			if err := s.drop(); err != nil {
				errs = append(errs, err)
			}
		}
		pl.segs = nil
	}
	l.live = 0
	return errors.Join(append(errs, err)...)
}

// each calls f with every record logged and not taken, with its pair,
// sealing every segment (a record put after it starts a segment of its
// own).
func (l *spillLog) each(f func(pair uint32, rec []byte)) error {
	var errs []error
	for p, pl := range l.pairs {
		for _, s := range pl.segs {
			if err := s.seal(); err != nil {
				errs = append(errs, err)
			}
			if s.live == 0 {
				continue
			}
			b := make([]byte, s.size)
			if err := s.readAt(b, 0); err != nil {
				errs = append(errs, err)
			}
			for off := 0; off+2 <= len(b); {
				n := int(binary.LittleEndian.Uint16(b[off:]))
				if off+2+n > len(b) {
					break
				}
				rec := b[off+2 : off+2+n]
				if s.holds(l.hash(string(recordKey(rec))), uint32(off)) && recordAt(rec) >= pl.from {
					f(uint32(p), rec)
				}
				off += 2 + n
			}
		}
	}
	return errors.Join(errs...)
}

// holds reports whether the record at off, its key's hash h, is in s and
// not taken.
func (s *logSeg) holds(h uint64, off uint32) bool {
	mask := uint64(len(s.table) - 1)
	want := logEntry(h, off)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.table[i] {
		case 0:
			return false
		case want:
			return true
		}
	}
}

// close drops every segment and removes the log's directory.
func (l *spillLog) close() error {
	var errs []error
	for _, pl := range l.pairs {
		for _, s := range pl.segs {
			errs = append(errs, s.drop())
		}
		pl.segs = nil
	}
	l.live = 0
	errs = append(errs, os.RemoveAll(l.dir))
	return errors.Join(errs...)
}

// A record is its key, then each of its signals by time: its time,
// artifact id, count and flags, and its strings written out (the codec's
// numbers are renumbered while it is on disk): member, unit, the signal's
// own key, the artifact id when no UUID, and its nodes' templates as the
// codec's lists are keyed. A record of one signal is what the log and the
// snapshot held before a key of several could be logged.

// appendRecord appends the record of hs, the signals of key by time.
func (c *heldCodec) appendRecord(b []byte, key string, hs ...heldSignal) []byte {
	b = appendString(b, key)
	for _, h := range hs {
		b = binary.LittleEndian.AppendUint64(b, uint64(h.at))
		b = append(b, h.id[:]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(h.count))
		b = append(b, h.flags)
		b = appendString(b, c.names[h.member])
		b = appendString(b, c.names[h.unit])
		b = appendString(b, c.names[h.key])
		if h.flags&heldIDString != 0 {
			b = appendString(b, c.names[h.id.number()])
		}
		var enc []byte
		for _, t := range c.tmpls[h.nodes] {
			enc = appendTemplate(enc, t)
		}
		b = appendString(b, enc)
	}
	return b
}

func appendString[S string | []byte](b []byte, s S) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readString returns the string at the start of b and the rest of b.
func readString(b []byte) ([]byte, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// recordKey is the key of a record.
func recordKey(rec []byte) []byte {
	k, _, _ := readString(rec)
	return k
}

// recordAt is the time of a record's newest signal, its last.
func recordAt(rec []byte) int64 {
	_, b, ok := readString(rec)
	at := int64(math.MinInt64)
	for ok && len(b) > 0 {
		var sig signalFields
		if sig, b, ok = readSignal(b); ok {
			at = sig.at
		}
	}
	if !ok {
		return math.MinInt64
	}
	return at
}

// strOf is str of a string in bytes.
func (c *heldCodec) strOf(b []byte) uint32 {
	if n, ok := c.strs[string(b)]; ok {
		return n
	}
	return c.str(string(b))
}

// signalFields is one signal of a record as read, its strings still
// the record's bytes.
type signalFields struct {
	at    int64
	id    heldID
	count int32
	flags uint8
	strs  [4][]byte // member, unit, key, and the id when a string
	nodes []byte
}

// readSignal reads the signal at the start of b and returns the rest of b.
func readSignal(b []byte) (signalFields, []byte, bool) {
	var f signalFields
	if len(b) < 8+16+4+1 {
		return f, nil, false
	}
	f.at = int64(binary.LittleEndian.Uint64(b))
	copy(f.id[:], b[8:24])
	f.count = int32(binary.LittleEndian.Uint32(b[24:]))
	f.flags = b[28]
	b = b[29:]
	n := 3
	if f.flags&heldIDString != 0 {
		n = 4
	}
	var ok bool
	for i := range n {
		if f.strs[i], b, ok = readString(b); !ok {
			return f, nil, false
		}
	}
	if f.nodes, b, ok = readString(b); !ok {
		return f, nil, false
	}
	return f, b, true
}

// errRecordCut is a record that ends inside a signal: made once, as
// every key read back from the log goes through readRecord.
var errRecordCut = errors.New("spill log: a record cut short")

// readRecord appends the signals of rec, in c's numbers, to into, and
// returns them with rec's key.
func (c *heldCodec) readRecord(rec []byte, into []heldSignal) (string, []heldSignal, error) {
	key, b, ok := readString(rec)
	if !ok || len(b) == 0 {
		return "", into, errRecordCut
	}
	for len(b) > 0 {
		var f signalFields
		if f, b, ok = readSignal(b); !ok {
			return "", into, errRecordCut
		}
		h := heldSignal{at: f.at, id: f.id, count: f.count, flags: f.flags}
		h.member, h.unit, h.key = c.strOf(f.strs[0]), c.strOf(f.strs[1]), c.strOf(f.strs[2])
		if f.flags&heldIDString != 0 {
			h.id = stringID(c.strOf(f.strs[3]))
		}
		if id, ok := c.lists[string(f.nodes)]; ok {
			h.nodes = id
		} else {
			t, err := parseTemplates(f.nodes)
			if err != nil {
				return "", into, err
			}
			h.nodes = c.addList(string(f.nodes), t)
		}
		into = append(into, h)
	}
	return string(key), into, nil
}

// parseTemplates reads what appendTemplate wrote of each template.
func parseTemplates(b []byte) ([]nodeTemplate, error) {
	var out []nodeTemplate
	for len(b) > 0 {
		typ, rest, ok := readString(b)
		if !ok {
			return nil, errors.New("spill log: a node cut short")
		}
		val, rest, ok := readString(rest)
		if !ok || len(rest) < 2 {
			return nil, errors.New("spill log: a node cut short")
		}
		out = append(out, nodeTemplate{Type: string(typ), Value: string(val), part: rest[0], Key: rest[1] == 1})
		b = rest[2:]
	}
	return out, nil
}
