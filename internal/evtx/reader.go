// Package evtx reads Windows XML Event Log files (.evtx): the file header,
// its 64 KiB chunks (each with its own string and template tables and two
// CRC-32 checksums), and the binary XML of each event record, templates and
// substitutions resolved. It reads a file as a stream, one chunk at a time,
// so its memory does not grow with the file.
//
// The layout follows Joachim Metz's "Windows XML Event Log (EVTX) format"
// (libevtx) and Microsoft's [MS-EVEN6]. A damaged chunk is reported as a
// *ChunkError naming its offset, and the reader goes on with the next one.
package evtx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

const (
	fileHeaderSize  = 4096
	chunkSize       = 65536
	chunkHeaderSize = 512
	recordHeader    = 24
)

var (
	fileMagic   = []byte("ElfFile\x00")
	chunkMagic  = []byte("ElfChnk\x00")
	recordMagic = []byte{0x2a, 0x2a, 0x00, 0x00}
)

// Record is one event record: its identifier, the time it was written and
// its event as an element tree (<Event> with <System> and <EventData> or
// <UserData>).
type Record struct {
	ID      uint64
	Written time.Time
	// Offset is the record's offset in the file.
	Offset int64
	Event  *Element
	size   int // bytes in the file
}

// ChunkError says a chunk or a record in it could not be read. The reader
// goes on after it: Next returns the records of the chunks that follow.
type ChunkError struct {
	// Offset in the file of the chunk or record that could not be read.
	Offset int64
	Err    error
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("offset %d: %v", e.Offset, e.Err)
}

func (e *ChunkError) Unwrap() error { return e.Err }

// Reader reads the records of one .evtx file in the order they are stored.
type Reader struct {
	r      io.Reader
	offset int64 // of the next chunk in the file
	chunk  *chunk
	buf    []byte
	done   bool
	// chunks is how many chunks the header says the file has; chunks
	// beyond it are read too when they are whole and valid (a file that
	// was not closed cleanly undercounts them).
	chunks int
	read   int
}

// NewReader reads and checks the file header. It returns an error when r
// does not begin with an .evtx file header.
func NewReader(r io.Reader) (*Reader, error) {
	var h [fileHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("file header: %w", unexpected(err))
	}
	if !bytes.Equal(h[:8], fileMagic) {
		return nil, errors.New("file header: not an EVTX file (no ElfFile signature)")
	}
	// The header's own checksum is not checked: it covers counters only,
	// and a file copied while Windows held it open carries a stale one.
	// Each chunk has checksums of its own, checked as it is read.
	blockSize := int(binary.LittleEndian.Uint16(h[40:]))
	if blockSize != fileHeaderSize {
		return nil, fmt.Errorf("file header: header block size %d, want %d", blockSize, fileHeaderSize)
	}
	return &Reader{
		r:      r,
		offset: fileHeaderSize,
		buf:    make([]byte, chunkSize),
		chunks: int(binary.LittleEndian.Uint16(h[42:])),
	}, nil
}

// Next returns the next record, valid until the next call to Next (its
// elements are reused). At the end of the file it returns io.EOF.
// A damaged chunk or record gives a *ChunkError; calling Next again goes on
// with what follows it.
func (r *Reader) Next() (*Record, error) {
	for {
		if r.chunk != nil {
			rec, err := r.chunk.next()
			if err == nil {
				return rec, nil
			}
			if err != io.EOF {
				return nil, err
			}
			r.chunk = nil
		}
		if r.done {
			return nil, io.EOF
		}
		off := r.offset
		n, err := io.ReadFull(r.r, r.buf)
		r.offset += int64(n)
		if err == io.EOF {
			r.done = true
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			r.done = true
			if allZero(r.buf[:n]) {
				return nil, io.EOF
			}
			return nil, &ChunkError{Offset: off, Err: fmt.Errorf("truncated chunk: %d of %d bytes", n, chunkSize)}
		}
		if err != nil {
			r.done = true
			return nil, &ChunkError{Offset: off, Err: err}
		}
		r.read++
		if !bytes.Equal(r.buf[:8], chunkMagic) {
			if allZero(r.buf) || r.read > r.chunks {
				// Unused space after the last chunk.
				continue
			}
			return nil, &ChunkError{Offset: off, Err: errors.New("chunk: no ElfChnk signature")}
		}
		c, err := openChunk(r.buf, off)
		if err != nil {
			return nil, &ChunkError{Offset: off, Err: err}
		}
		r.chunk = c
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// chunk is one 64 KiB chunk being read: its records, and the names and
// templates its records share.
type chunk struct {
	data      []byte
	fileOff   int64
	pos       int // of the next record
	end       int // free space offset
	names     map[uint32]string
	templates map[uint32]*template
	failed    bool
	// parser and its slabs, reused record after record.
	parser   parser
	elements []Element
	attrs    []Attr
	values   []value
	children []*Element
}

func openChunk(data []byte, fileOff int64) (*chunk, error) {
	le := binary.LittleEndian
	sum := crc32.ChecksumIEEE(data[:120])
	sum = crc32.Update(sum, crc32.IEEETable, data[128:chunkHeaderSize])
	if want := le.Uint32(data[124:]); sum != want {
		return nil, fmt.Errorf("chunk header checksum %08x, stored %08x", sum, want)
	}
	free := le.Uint32(data[48:])
	if free < chunkHeaderSize || free > chunkSize {
		return nil, fmt.Errorf("chunk free space offset %d out of range", free)
	}
	if want := le.Uint32(data[52:]); crc32.ChecksumIEEE(data[chunkHeaderSize:free]) != want {
		return nil, fmt.Errorf("chunk records checksum does not match (stored %08x)", want)
	}
	return &chunk{
		data:      data,
		fileOff:   fileOff,
		pos:       chunkHeaderSize,
		end:       int(free),
		names:     map[uint32]string{},
		templates: map[uint32]*template{},
		elements:  make([]Element, 0, 128),
		attrs:     make([]Attr, 0, 128),
		values:    make([]value, 0, 128),
		children:  make([]*Element, 0, 128),
	}, nil
}

func (c *chunk) next() (*Record, error) {
	if c.failed || c.pos+recordHeader > c.end {
		return nil, io.EOF
	}
	le := binary.LittleEndian
	start := c.pos
	d := c.data[start:]
	if !bytes.Equal(d[:4], recordMagic) {
		if allZero(d[:4]) {
			return nil, io.EOF
		}
		c.failed = true
		return nil, &ChunkError{Offset: c.fileOff + int64(start), Err: errors.New("record: no signature")}
	}
	size := int(le.Uint32(d[4:]))
	if size < recordHeader+4 || start+size > c.end || int(le.Uint32(d[size-4:])) != size {
		c.failed = true
		return nil, &ChunkError{Offset: c.fileOff + int64(start), Err: fmt.Errorf("record: size %d out of range", size)}
	}
	c.pos = start + size
	rec := &Record{
		size:    size,
		ID:      le.Uint64(d[8:]),
		Written: filetime(le.Uint64(d[16:])),
		Offset:  c.fileOff + int64(start),
	}
	// The record's elements and attributes reuse the chunk's slabs: a
	// record is valid until the next call to Next (Reader.Next).
	p := &c.parser
	*p = parser{c: c, end: start + size - 4, elements: c.elements[:0], attrs: c.attrs[:0], values: c.values[:0], children: c.children[:0]}
	root, err := p.document(start + recordHeader)
	if err != nil {
		return nil, &ChunkError{Offset: c.fileOff + int64(start), Err: fmt.Errorf("record %d: %w", rec.ID, err)}
	}
	rec.Event = root
	return rec, nil
}

// filetime converts a FILETIME (100 ns since 1601-01-01) to a time in UTC.
func filetime(v uint64) time.Time {
	const epochDelta = 116444736000000000 // 1601 to 1970 in 100 ns
	if v < epochDelta {
		return time.Unix(0, 0).UTC().Add(-time.Duration(epochDelta-v) * 100)
	}
	v -= epochDelta
	return time.Unix(int64(v/1e7), int64(v%1e7)*100).UTC()
}
