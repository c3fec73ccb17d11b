package esbulk

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lines reads a body's lines one at a time, holding one line (at most
// max bytes of it) rather than the body.
type lines struct {
	br   *bufio.Reader
	max  int
	n    int    // the number of the line last read, from 1
	long []byte // a line longer than the reader's buffer, gathered
}

func newLines(r io.Reader, max int) *lines {
	return &lines{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line that is not blank, without its surrounding
// space, and its size; a line of more than max bytes is returned as nil
// with its size, its bytes skipped. The line is valid until the next
// call. At the end of the body: io.EOF; an error of the body's reader is
// returned as it is.
func (l *lines) next() ([]byte, int, error) {
	for {
		line, size, err := l.read()
		if err != nil {
			return nil, 0, err
		}
		l.n++
		if line == nil {
			return nil, size, nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, len(line), nil
		}
	}
}

// read returns the next line, blank or not (nil with its size when longer
// than max), or io.EOF once there is none.
func (l *lines) read() ([]byte, int, error) {
	l.long = l.long[:0]
	size, over := 0, false
	for {
		chunk, err := l.br.ReadSlice('\n')
		size += len(chunk)
		switch {
		case size > l.max:
			over, l.long = true, l.long[:0]
		case err == nil && len(l.long) == 0:
			return chunk, size, nil // the whole line in the buffer: no copy
		default:
			l.long = append(l.long, chunk...)
		}
		switch {
		case err == nil || (errors.Is(err, io.EOF) && size > 0):
			if over {
				if err == nil {
					size-- // the newline
				}
				return nil, size, nil
			}
			return l.long, size, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, 0, err
		}
	}
}
