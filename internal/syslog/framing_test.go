package syslog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type frameWant struct {
	frame string
	cut   int
}

// readAll reads every frame of in, as a connection would, and the error
// that ended it.
func readAll(r io.Reader, max int) ([]frameWant, framing, error) {
	f := newFramer(r, max)
	var out []frameWant
	for i := 0; i < 10000; i++ {
		fr, cut, err := f.next()
		if err != nil {
			return out, f.mode, err
		}
		out = append(out, frameWant{string(fr), cut})
	}
	return out, f.mode, errors.New("too many frames")
}

func TestFramer(t *testing.T) {
	long := strings.Repeat("x", 300)
	huge := strings.Repeat("y", readBuffer+500) // past the reader's buffer
	tests := []struct {
		name  string
		in    string
		max   int
		mode  framing
		want  []frameWant
		err   error // the error that ends the stream
		isErr error // or one it wraps
	}{
		{name: "lf", in: "<13>Nov 25 10:00:00 h sshd[1]: a\n<13>Nov 25 10:00:01 h sshd[1]: b\n", mode: framingLF,
			want: []frameWant{{"<13>Nov 25 10:00:00 h sshd[1]: a", 0}, {"<13>Nov 25 10:00:01 h sshd[1]: b", 0}}, err: io.EOF},
		{name: "lf crlf and blank lines", in: "a\r\n\r\nb\n", mode: framingLF,
			want: []frameWant{{"a", 0}, {"", 0}, {"b", 0}}, err: io.EOF},
		{name: "lf last line without lf", in: "a\nb", mode: framingLF, want: []frameWant{{"a", 0}, {"b", 0}}, err: io.EOF},
		{name: "lf starting with an iso timestamp", in: "2026-11-25T10:00:00Z h sshd: x\n", mode: framingLF,
			want: []frameWant{{"2026-11-25T10:00:00Z h sshd: x", 0}}, err: io.EOF},
		{name: "lf starting with digits and no space", in: "12345\n", mode: framingLF, want: []frameWant{{"12345", 0}}, err: io.EOF},
		{name: "lf a lone digit", in: "7", mode: framingLF, want: []frameWant{{"7", 0}}, err: io.EOF},
		{name: "empty stream", in: "", err: io.EOF},
		{name: "octet", in: "5 hello3 abc", mode: framingOctet, want: []frameWant{{"hello", 0}, {"abc", 0}}, err: io.EOF},
		{name: "octet with lf inside and after", in: "7 a\nb\nc\n\n4 xyz\n", mode: framingOctet,
			want: []frameWant{{"a\nb\nc", 0}, {"xyz", 0}}, err: io.EOF},
		{name: "octet rfc5424", in: "36 <13>1 2026-11-25T10:00:00Z h a - - m", mode: framingOctet,
			want: []frameWant{{"<13>1 2026-11-25T10:00:00Z h a - - m", 0}}, err: io.EOF},
		{name: "octet cut", in: "300 " + long + "2 ok", max: 256, mode: framingOctet,
			want: []frameWant{{long[:256], 300}, {"ok", 0}}, err: io.EOF},
		{name: "octet longer than the buffer", in: fmt.Sprint(len(huge)) + " " + huge + "1 z", max: 1 << 20, mode: framingOctet,
			want: []frameWant{{huge, 0}, {"z", 0}}, err: io.EOF},
		{name: "octet longer than the buffer, cut", in: fmt.Sprint(len(huge)) + " " + huge + "1 z", max: 1000, mode: framingOctet,
			want: []frameWant{{huge[:1000], len(huge)}, {"z", 0}}, err: io.EOF},
		{name: "octet truncated stream", in: "10 abc", mode: framingOctet, err: io.ErrUnexpectedEOF},
		{name: "octet length without message", in: "3 abc12", mode: framingOctet, want: []frameWant{{"abc", 0}}, err: io.ErrUnexpectedEOF},
		{name: "octet then garbage", in: "3 abcxyz", mode: framingOctet, want: []frameWant{{"abc", 0}}, isErr: ErrMalformed},
		{name: "octet zero length", in: "3 abc0 ", mode: framingOctet, want: []frameWant{{"abc", 0}}, isErr: ErrMalformed},
		{name: "octet length too long", in: "3 abc1234567890 x", mode: framingOctet, want: []frameWant{{"abc", 0}}, isErr: ErrMalformed},
		{name: "lf cut", in: long + "\nok\n", max: 256, mode: framingLF, want: []frameWant{{long[:256], 300}, {"ok", 0}}, err: io.EOF},
		{name: "lf longer than the buffer", in: huge + "\nok\n", max: 1 << 20, mode: framingLF,
			want: []frameWant{{huge, 0}, {"ok", 0}}, err: io.EOF},
		{name: "lf longer than the buffer, cut", in: huge + "\r\nok", max: 1000, mode: framingLF,
			want: []frameWant{{huge[:1000], len(huge) + 1}, {"ok", 0}}, err: io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = DefaultMaxMessage
			}
			// One byte at a time too: framing must not depend on how the
			// bytes arrive.
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, mode, err := readAll(r, max)
				if mode != tt.mode && tt.in != "" {
					t.Errorf("framing %v, want %v", mode, tt.mode)
				}
				if tt.isErr != nil {
					if !errors.Is(err, tt.isErr) {
						t.Errorf("error %v, want one wrapping %v", err, tt.isErr)
					}
				} else if err != tt.err {
					t.Errorf("error %v, want %v", err, tt.err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("%d frames %+v, want %d", len(got), got, len(tt.want))
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("frame %d: %q (cut %d), want %q (cut %d)", i, short(got[i].frame), got[i].cut, short(tt.want[i].frame), tt.want[i].cut)
					}
				}
			}
		})
	}
}

func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%s…(%d bytes)", s[:60], len(s))
	}
	return s
}

// FuzzFramer: any byte stream ends in a frame sequence without a panic,
// each frame at most max bytes, a cut frame said to be longer than max.
func FuzzFramer(f *testing.F) {
	for _, s := range []string{"", "a\nb\n", "5 hello", "3 abcxyz", "10 abc", "0 ", "1234567890 x", "7 a\nb\nc\n\n4 xyz\n",
		"<13>Nov 25 10:00:00 h sshd[1]: a\n", "300 " + strings.Repeat("x", 300)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 256
		got, _, err := readAll(bytes.NewReader(in), max)
		if err == nil {
			t.Fatal("no end")
		}
		for _, fr := range got {
			if len(fr.frame) > max {
				t.Fatalf("frame of %d bytes > max %d", len(fr.frame), max)
			}
			if fr.cut != 0 && fr.cut <= max {
				t.Fatalf("cut %d not past max", fr.cut)
			}
		}
	})
}

// FuzzOctetRoundTrip: messages framed with octet counting come back as
// they were sent (less trailing CR, LF and NUL).
func FuzzOctetRoundTrip(f *testing.F) {
	f.Add("hello", "<13>1 - h a - - m\n", "x")
	f.Add("\n", "a b", "99 z")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var in bytes.Buffer
		var want []string
		for _, m := range []string{a, b, c} {
			if len(m) == 0 {
				continue
			}
			fmt.Fprintf(&in, "%d %s", len(m), m)
			want = append(want, string(trimEOL([]byte(m))))
		}
		got, _, err := readAll(&in, 1<<20)
		if err != io.EOF {
			t.Fatalf("error %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d frames, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i].frame != want[i] || got[i].cut != 0 {
				t.Fatalf("frame %d %q, want %q", i, got[i].frame, want[i])
			}
		}
	})
}
