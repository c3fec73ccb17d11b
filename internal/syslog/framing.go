package syslog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// readBuffer is the buffer of a connection's reader: frames up to its
// size are returned without a copy.
const readBuffer = 64 << 10

// maxLenDigits bounds the length field of an octet-counted frame: nine
// digits is under 1 GB, far past any syslog message; more is not a
// length but garbage.
const maxLenDigits = 9

// ErrMalformed is a frame that cannot be read past: the connection is
// closed.
var ErrMalformed = errors.New("malformed frame")

type framing int

const (
	framingUnknown framing = iota
	framingOctet           // RFC 6587 octet counting: "LEN SP MSG"
	framingLF              // RFC 6587 non-transparent framing: "MSG LF"
)

func (f framing) String() string {
	switch f {
	case framingOctet:
		return "octet-counting"
	case framingLF:
		return "lf"
	}
	return "unknown"
}

// framer reads the frames of one TCP or TLS connection. Its framing is
// chosen once, from the connection's first bytes: a nonzero digit, more
// digits and a space open an octet-counted frame (a syslog message opens
// with "<", or a timestamp whose digits are followed by "-" or ":"), and
// anything else is LF-framed.
type framer struct {
	r    *bufio.Reader
	max  int
	mode framing
	big  []byte // a frame longer than the reader's buffer
}

func newFramer(r io.Reader, max int) *framer {
	return &framer{r: bufio.NewReaderSize(r, readBuffer), max: max}
}

// next returns the next frame without its framing (the length and its
// space, the LF, and any CR or LF ending an octet-counted message), valid
// until the next call. A frame longer than max is cut to max and the
// rest skipped: cut is the length it had. It returns io.EOF at the end of
// the stream (a last LF-framed message without its LF is returned first),
// io.ErrUnexpectedEOF for a stream ending inside an octet-counted frame,
// and an error wrapping ErrMalformed for a length that is not one.
func (f *framer) next() (frame []byte, cut int, err error) {
	if f.mode == framingUnknown {
		if f.mode, err = f.detect(); err != nil {
			return nil, 0, err
		}
	}
	if f.mode == framingOctet {
		return f.nextOctet()
	}
	return f.nextLF()
}

// detect chooses the framing from the first bytes, without consuming
// them.
func (f *framer) detect() (framing, error) {
	for n := 1; n <= maxLenDigits+1; n++ {
		b, err := f.r.Peek(n)
		if len(b) < n {
			if len(b) == 0 && err != nil {
				return framingUnknown, err
			}
			return framingLF, nil // a short last message
		}
		c := b[n-1]
		switch {
		case n == 1 && (c < '1' || c > '9'):
			return framingLF, nil
		case c == ' ' && n > 1:
			return framingOctet, nil
		case c < '0' || c > '9':
			return framingLF, nil
		}
	}
	return framingLF, nil
}

func (f *framer) nextOctet() ([]byte, int, error) {
	// Some senders end each frame with an LF (or NUL) that the length does
	// not count: skip them between frames.
	for {
		c, err := f.r.ReadByte()
		if err != nil {
			return nil, 0, err // io.EOF between frames is a clean end
		}
		if c != '\n' && c != '\r' && c != 0 {
			f.r.UnreadByte()
			break
		}
	}
	n, digits := 0, 0
	for {
		c, err := f.r.ReadByte()
		if err != nil {
			return nil, 0, io.ErrUnexpectedEOF
		}
		if c == ' ' && digits > 0 {
			break
		}
		if c < '0' || c > '9' || (digits == 0 && c == '0') || digits == maxLenDigits {
			return nil, 0, fmt.Errorf("%w: octet-counted frame does not start with a length and a space (byte %q after %d digits)", ErrMalformed, c, digits)
		}
		n = n*10 + int(c-'0')
		digits++
	}
	keep := min(n, f.max)
	var frame []byte
	peeked := keep <= f.r.Size()
	if peeked {
		b, err := f.r.Peek(keep)
		if err != nil {
			return nil, 0, io.ErrUnexpectedEOF
		}
		frame = b
		// Discarding what was peeked cannot fail; the bytes stay valid
		// until the next read.
		f.r.Discard(keep)
	} else {
		if cap(f.big) < keep {
			f.big = make([]byte, keep)
		}
		frame = f.big[:keep]
		if _, err := io.ReadFull(f.r, frame); err != nil {
			return nil, 0, io.ErrUnexpectedEOF
		}
	}
	cut := 0
	if n > keep {
		cut = n
		// Skipping the rest refills the buffer under a peeked frame.
		if peeked {
			f.big = append(f.big[:0], frame...)
			frame = f.big
		}
		if _, err := f.r.Discard(n - keep); err != nil {
			return nil, 0, io.ErrUnexpectedEOF
		}
	}
	return trimEOL(frame), cut, nil
}

func (f *framer) nextLF() ([]byte, int, error) {
	line, err := f.r.ReadSlice('\n')
	if err == nil || (err == io.EOF && len(line) > 0) {
		t := trimEOL(line)
		if len(t) > f.max {
			return t[:f.max], len(t), nil
		}
		return t, 0, nil
	}
	if err != bufio.ErrBufferFull {
		return nil, 0, err
	}
	// Longer than the buffer: keep up to max, skip to the LF.
	f.big = append(f.big[:0], line[:min(len(line), f.max)]...)
	total := len(line)
	for {
		line, err = f.r.ReadSlice('\n')
		total += len(line)
		if room := f.max - len(f.big); room > 0 {
			f.big = append(f.big, line[:min(len(line), room)]...)
		}
		if err != bufio.ErrBufferFull {
			break
		}
	}
	if err != nil && err != io.EOF {
		return nil, 0, err
	}
	if len(line) > 0 && line[len(line)-1] == '\n' {
		total-- // the LF is framing
	}
	if total > f.max {
		return f.big, total, nil
	}
	return trimEOL(f.big), 0, nil
}

// trimEOL drops the LF, CR and NUL bytes that end b.
func trimEOL(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case '\n', '\r', 0:
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}
