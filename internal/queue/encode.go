package queue

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// appendEnvelope appends the message of arts, a chunk of org's batch, to
// dst: the bytes json.Marshal writes for their envelope (TestAppendEnvelope),
// without its reflection and without the doubling buffer it grows and
// then copies (three times a message's size allocated for each message:
// the largest allocations of the edge mix's ingest, docs/benchmarks.md).
// ok is false when json.Marshal would fail: metadata that is not JSON.
func appendEnvelope(dst []byte, org, batch string, arts []*vigil.Artifact) (out []byte, ok bool) {
	dst = append(dst, `{"org":`...)
	dst = appendString(dst, org)
	dst = append(dst, `,"batch":`...)
	dst = appendString(dst, batch)
	dst = append(dst, `,"artifacts":[`...)
	for i, a := range arts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = appendString(dst, a.ID)
		dst = append(dst, `,"source":`...)
		dst = appendString(dst, a.Source)
		dst = append(dst, `,"raw":`...)
		dst = appendString(dst, a.Raw)
		dst = append(dst, `,"ts":`...)
		dst = strconv.AppendInt(dst, a.Timestamp.UnixNano(), 10)
		dst = append(dst, `,"created":`...)
		dst = strconv.AppendInt(dst, a.CreatedAt.UnixNano(), 10)
		if len(a.Metadata) > 0 {
			dst = append(dst, `,"meta":`...)
			if dst, ok = appendRaw(dst, a.Metadata); !ok {
				return dst, false
			}
		}
		if a.TimestampDefaulted {
			dst = append(dst, `,"tsd":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), true
}

// appendRaw appends m compacted and escaped as json.Marshal writes a
// RawMessage, false when m is no JSON.
func appendRaw(dst []byte, m json.RawMessage) ([]byte, bool) {
	if bytes.ContainsAny(m, "<>&\u2028\u2029") {
		b, err := json.Marshal(m)
		return append(dst, b...), err == nil
	}
	buf := bytes.NewBuffer(dst)
	err := json.Compact(buf, m)
	return buf.Bytes(), err == nil
}

// appendString appends s as a JSON string as json.Marshal writes it: <, >
// and & escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
