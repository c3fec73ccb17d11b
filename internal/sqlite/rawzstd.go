package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"
)

// Raw lines are stored compressed with zstd and a dictionary trained on
// the lines of their org and source (raw_dicts, migration 0024): log
// lines of one source repeat the same words and layout, which a
// dictionary holds once, so that a line of 100–700 bytes takes a third to
// a half of them. artifacts.raw is TEXT (the line as it came, stored
// before its source had a dictionary, or when compressing did not make
// it smaller) or a BLOB: a zstd frame without its 4-byte magic number,
// whose header names its dictionary (the raw_dicts id).
//
// The full-text index is given the search text of the plain line
// (artifact.go, searchText) on insert and on delete (its external content
// is never read back, search reads only the index), so matches are
// exactly those of that text. FTS5's 'rebuild' and 'integrity-check' read
// the content table itself and would see the compressed bytes (and whole
// lines): neither is used, and a migration that rebuilds the index must
// feed it the search text of the decompressed lines instead.

const (
	// trainAfter: a source is given a dictionary once this many of its
	// lines are stored (since the process started) without one, trained
	// on its newest trainSamples lines.
	trainAfter   = 2000
	trainSamples = 2000
	// dictBytes is the largest dictionary trained.
	dictBytes = 16 << 10
	// maxEncoders bounds the encoders kept (about half a MiB each, their
	// tables): one of a source whose lines come while as many others are
	// kept is made again from its dictionary. An encoder compresses one
	// line at a time: letting two workers use it at once was 4 % faster
	// end to end and took 30 MiB more (docs/benchmarks.md).
	maxEncoders = 64
)

// zstdMagic begins every zstd frame; it is not stored.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// dictKey names the lines a dictionary is trained on.
type dictKey struct{ org, source string }

// rawCodec holds the dictionaries of a store (each org and source's
// newest, and encoders of some of them) and a decoder knowing them all.
type rawCodec struct {
	trainAfter int // trainAfter; tests lower it

	mu    sync.RWMutex
	dict  map[dictKey][]byte
	enc   map[dictKey]*zstd.Encoder
	dicts [][]byte        // every dictionary, for the decoder
	dec   *zstd.Decoder   // nil until the first dictionary
	plain map[dictKey]int // lines stored without a dictionary
	next  map[dictKey]int // when to train again, after a dictionary that did not pay
}

func newRawCodec() *rawCodec {
	return &rawCodec{trainAfter: trainAfter, dict: map[dictKey][]byte{}, enc: map[dictKey]*zstd.Encoder{},
		plain: map[dictKey]int{}, next: map[dictKey]int{}}
}

// load reads the store's dictionaries, building the decoder once.
func (c *rawCodec) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT org_id, source, dict FROM raw_dicts ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	keys, dicts := []dictKey{}, [][]byte{}
	for rows.Next() {
		var k dictKey
		var d []byte
		if err := rows.Scan(&k.org, &k.source, &d); err != nil {
			return err
		}
		keys, dicts = append(keys, k), append(dicts, d)
	}
	if err := rows.Err(); err != nil || len(dicts) == 0 {
		return err
	}
	last := len(dicts) - 1
	c.dicts = dicts[:last]
	for i, k := range keys[:last] {
		c.dict[k] = dicts[i]
	}
	return c.add(keys[last], dicts[last])
}

// newEncoder returns an encoder of dictionary d. Entropy coding of the
// literals is left out: for lines of a few hundred bytes it saves under
// 1 % of their size at a third of the encoding time. Single segment:
// the frame header records the line's size in place of a window size
// (RawSizes reads it).
func newEncoder(d []byte) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderDict(d), zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1), zstd.WithNoEntropyCompression(true),
		zstd.WithSingleSegment(true))
}

// add makes d the dictionary of k's new lines, and known to the decoder.
func (c *rawCodec) add(k dictKey, d []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	dicts := append(c.dicts[:len(c.dicts):len(c.dicts)], d)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(dicts...), zstd.WithDecoderMaxMemory(2<<20))
	if err != nil {
		return fmt.Errorf("zstd dictionary of %q: %w", k.source, err)
	}
	c.dict[k], c.dicts, c.dec = d, dicts, dec
	delete(c.enc, k)
	delete(c.plain, k)
	delete(c.next, k)
	return nil
}

// has reports whether k has a dictionary.
func (c *rawCodec) has(k dictKey) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dict[k] != nil
}

// later counts k's lines from zero again, and trains after four times as
// many as the last time.
func (c *rawCodec) later(k dictKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next[k] = 4 * max(c.next[k], c.trainAfter)
	c.plain[k] = 0
}

// encode returns what to store as the raw column for line of k: the
// compressed frame, or line itself when k has no dictionary yet or
// compressing does not make it smaller. The frame is appended to buf,
// returned for the next line, so that a batch's frames share a few
// arrays: an allocation per line, in a process holding a large heap,
// costs more garbage collection than the compressing itself. train
// reports a k that just reached the lines without a dictionary it is
// trained after. It may run in several goroutines at once; those that
// compress lines of the same source take turns.
func (c *rawCodec) encode(k dictKey, line string, buf []byte) (v any, next []byte, train bool) {
	c.mu.RLock()
	d, enc := c.dict[k], c.enc[k]
	c.mu.RUnlock()
	if d == nil {
		c.mu.Lock()
		c.plain[k]++
		train = c.plain[k] == max(c.next[k], c.trainAfter)
		c.mu.Unlock()
		return line, buf, train
	}
	if enc == nil {
		var err error
		if enc, err = newEncoder(d); err != nil {
			return line, buf, false // checked when trained: not expected
		}
		c.mu.Lock()
		if len(c.enc) >= maxEncoders {
			for other := range c.enc {
				delete(c.enc, other)
				break
			}
		}
		c.enc[k] = enc
		c.mu.Unlock()
	}
	// EncodeAll only reads its input: the line's bytes, not a copy. It
	// appends the frame; the frames before it stay where they are, in
	// this array or the one it outgrew.
	start := len(buf)
	buf = enc.EncodeAll(unsafe.Slice(unsafe.StringData(line), len(line)), buf)
	frame := buf[start:len(buf):len(buf)]
	if len(frame)-len(zstdMagic) >= len(line) {
		return line, buf[:start], false
	}
	return frame[len(zstdMagic):], buf, false
}

// decode returns the line stored as v (a raw column: TEXT or a BLOB).
func (c *rawCodec) decode(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		c.mu.RLock()
		dec := c.dec
		c.mu.RUnlock()
		if dec == nil {
			return "", errors.New("compressed raw line, but no dictionary")
		}
		frame := make([]byte, 0, len(zstdMagic)+len(v))
		out, err := dec.DecodeAll(append(append(frame, zstdMagic...), v...), nil)
		if err != nil {
			return "", fmt.Errorf("decompressing raw line: %w", err)
		}
		return string(out), nil
	case nil:
		return "", errors.New("raw line is NULL")
	}
	return "", fmt.Errorf("raw line of type %T", v)
}

// rawValue scans a raw column of either type.
type rawValue struct{ v any }

func (r *rawValue) Scan(src any) error {
	switch src := src.(type) {
	case []byte:
		r.v = append([]byte(nil), src...)
	default:
		r.v = src
	}
	return nil
}

// train gives k a dictionary trained on its newest lines, unless they are
// alike too little for one to pay, or it fails (it is tried again later
// then; meanwhile the lines are stored as they came). It commits the
// dictionary before any line uses it.
func (s *Store) train(ctx context.Context, k dictKey) {
	// One at a time: two workers training at once (two sources reaching
	// their count in the same moment) took the same dictionary id, and
	// one failed on raw_dicts' key.
	s.trainMu.Lock()
	defer s.trainMu.Unlock()
	if s.raw.has(k) {
		return // trained by another worker meanwhile
	}
	ok, err := s.trainDict(ctx, k)
	if err != nil {
		s.log.Warn("training a compression dictionary of raw lines", "source", k.source, "err", err)
	}
	if !ok {
		s.raw.later(k)
	}
}

// trainDict is train; ok is false when k has no dictionary after it.
func (s *Store) trainDict(ctx context.Context, k dictKey) (ok bool, err error) {
	rows, err := s.w.QueryContext(ctx, `SELECT raw FROM artifacts WHERE org_id = ? AND source = ? ORDER BY ts DESC LIMIT ?`,
		k.org, k.source, trainSamples)
	if err != nil {
		return false, err
	}
	var lines [][]byte
	size := 0
	for rows.Next() {
		var r rawValue
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return false, err
		}
		line, err := s.raw.decode(r.v)
		if err != nil {
			rows.Close()
			return false, err
		}
		lines = append(lines, []byte(line))
		size += len(line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	var id int64
	if err := s.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM raw_dicts`).Scan(&id); err != nil {
		return false, err
	}
	d, err := dict.BuildZstdDict(lines, dict.Options{MaxDictSize: dictBytes, HashBytes: 6, ZstdDictID: uint32(id),
		ZstdLevel: zstd.SpeedFastest})
	if err != nil || !pays(d, lines, size) {
		return false, nil // too few lines, or too unlike each other
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO raw_dicts (id, org_id, source, dict, created_at) VALUES (?, ?, ?, ?, ?)`,
		id, k.org, k.source, d, time.Now().UnixNano()); err != nil {
		return false, err
	}
	return true, s.raw.add(k, d)
}

// pays reports whether d compresses lines (of size bytes) to at most
// three quarters of their size.
func pays(d []byte, lines [][]byte, size int) bool {
	enc, err := newEncoder(d)
	if err != nil {
		return false
	}
	defer enc.Close()
	n := 0
	var buf []byte
	for _, l := range lines {
		buf = enc.EncodeAll(l, buf[:0])
		n += min(len(buf)-len(zstdMagic), len(l))
	}
	return 4*n <= 3*size
}

// SourceRaw is the artifacts of a source and the bytes of their raw
// lines as they came.
type SourceRaw struct {
	Source           string
	Artifacts, Bytes int64
}

// RawSizes reads the artifacts and raw bytes per source of the database
// db (a full scan), counting a compressed line by the size its frame
// records, without its dictionary.
func RawSizes(ctx context.Context, db *sql.DB) ([]SourceRaw, error) {
	by := map[string]*SourceRaw{}
	get := func(src string) *SourceRaw {
		if by[src] == nil {
			by[src] = &SourceRaw{Source: src}
		}
		return by[src]
	}
	rows, err := db.QueryContext(ctx, `SELECT source, COUNT(*), SUM(length(CAST(raw AS BLOB))) FROM artifacts WHERE typeof(raw) <> 'blob' GROUP BY source`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var src string
		var n, b int64
		if err := rows.Scan(&src, &n, &b); err != nil {
			rows.Close()
			return nil, err
		}
		s := get(src)
		s.Artifacts, s.Bytes = s.Artifacts+n, s.Bytes+b
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = db.QueryContext(ctx, `SELECT source, substr(raw, 1, 16) FROM artifacts WHERE typeof(raw) = 'blob'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var frame []byte
	for rows.Next() {
		var src string
		var head []byte
		if err := rows.Scan(&src, &head); err != nil {
			return nil, err
		}
		var h zstd.Header
		frame = append(append(frame[:0], zstdMagic...), head...)
		if err := h.Decode(frame); err != nil || !h.HasFCS {
			return nil, fmt.Errorf("a compressed raw line of %q without its size: %v", src, err)
		}
		s := get(src)
		s.Artifacts++
		s.Bytes += int64(h.FrameContentSize)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]SourceRaw, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b SourceRaw) int { return strings.Compare(a.Source, b.Source) })
	return out, nil
}
