package esbulk

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLines: a body is read a line at a time, whatever the size of its
// lines against the reader's buffer: blank lines skipped, space and CR
// trimmed, a last line without a newline kept, a line over the bound
// given as its size only; an error of the body's reader is returned.
func TestLines(t *testing.T) {
	long := strings.Repeat("a", 200<<10) // longer than the reader's buffer
	type line struct {
		text string
		size int // when text is "": a line over the bound
	}
	for _, c := range []struct {
		name, body string
		max        int
		want       []line
	}{
		{"blank lines and CRLF", "\n\n a \r\nb\r\n\n", 10, []line{{"a", 1}, {"b", 1}}},
		{"no final newline", "a\nbc", 10, []line{{"a", 1}, {"bc", 2}}},
		{"longer than the buffer", "x\n" + long + "\ny", 300 << 10, []line{{"x", 1}, {long, len(long)}, {"y", 1}}},
		{"over the bound", "x\n" + long + "\ny\n", 100 << 10, []line{{"x", 1}, {"", len(long)}, {"y", 1}}},
		{"over the bound, last", "x\n" + long, 100 << 10, []line{{"x", 1}, {"", len(long)}}},
		{"empty", "", 10, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// One byte at a time as well: a line never arrives whole.
			for _, r := range []io.Reader{strings.NewReader(c.body), iotest.OneByteReader(strings.NewReader(c.body))} {
				ln := newLines(r, c.max)
				var got []line
				for {
					l, size, err := ln.next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, line{string(l), size})
				}
				if len(got) != len(c.want) {
					t.Fatalf("%d lines, want %d", len(got), len(c.want))
				}
				for i := range got {
					if got[i] != c.want[i] {
						t.Errorf("line %d: %.20q (%d bytes), want %.20q (%d)", i, got[i].text, got[i].size, c.want[i].text, c.want[i].size)
					}
				}
			}
		})
	}
	ln := newLines(iotest.ErrReader(errors.New("gone")), 10)
	if _, _, err := ln.next(); err == nil || err.Error() != "gone" {
		t.Errorf("reader error: %v", err)
	}
}
