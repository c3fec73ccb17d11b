package vlogs

import (
	"errors"
	"fmt"
	"strconv"
)

// Artifact ids in entries. Vigil's ids are UUIDs (36 characters, four
// dashes), and written so, each would be five VictoriaLogs words: most
// of them new to a block's bloom filter (two bytes each), and their
// digits compared as numbers when VictoriaLogs sorts strings, where the
// other stores compare ids byte by byte. An entry holds a UUID in field
// i as its 32 hexadecimal digits with 0…9 written A…J (a…f as they are):
// one word of letters only, whose byte order, which is also
// VictoriaLogs' order for text without digits, is the ids' own.

// idField holds the id of an entry in letters; id holds it as it is
// (entries written before, and ids that are not canonical UUIDs).
const idField = "i"

// receivedField holds the milliseconds from an artifact's time to its
// receipt (CreatedAt), when they differ: the receipt time is kept to the
// millisecond. createdField held the nanoseconds, in entries written
// before.
const (
	receivedField = "r"
	createdField  = "c"
)

// isUUID reports whether s is a UUID as Vigil writes them: lower-case
// hexadecimal digits in groups of 8, 4, 4, 4 and 12.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// appendIDLetters appends the letters of the UUID id to dst.
func appendIDLetters(dst []byte, id string) []byte {
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c == '-':
		case c <= '9':
			dst = append(dst, 'A'+c-'0')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// uuidOf returns the UUID written as the letters l.
func uuidOf(l string) (string, error) {
	if len(l) != 32 {
		return "", fmt.Errorf("entry id %q: not 32 letters", l)
	}
	b := make([]byte, 0, 36)
	for i := 0; i < len(l); i++ {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b = append(b, '-')
		}
		switch c := l[i]; {
		case 'A' <= c && c <= 'J':
			b = append(b, '0'+c-'A')
		case 'a' <= c && c <= 'f':
			b = append(b, c)
		default:
			return "", fmt.Errorf("entry id %q: not an id in letters", l)
		}
	}
	return string(b), nil
}

// idOf returns the id of an entry read back: id as written, else the
// UUID of i.
func idOf(row map[string]string) (string, error) {
	if id := row["id"]; id != "" {
		return id, nil
	}
	if l := row[idField]; l != "" {
		return uuidOf(l)
	}
	return "", errors.New("entry without an id")
}

// Streams. VictoriaLogs keeps each log stream (the values of its stream
// fields) in blocks of its own and finds a stream's blocks from its
// index, so a filter on the stream reads only them; but every stream
// costs it memory, index entries and blocks of their own, and the
// sources a tenant sends are named by its users (any number of them).
// So the stream field s is the source's bucket, one of streamBuckets per
// tenant, by a hash of its name: a search within a source reads its
// bucket's blocks only (those of its source alone, unless another source
// of the org falls in the same bucket) and filters the source exactly
// there. Entries written before had the source itself as their stream
// field; sourceFilter matches both.

// streamField is the stream field of entries.
const streamField = "s"

// streamBuckets bounds the streams of one tenant.
const streamBuckets = 1024

// appendStream appends the bucket of source to dst.
func appendStream(dst []byte, source string) []byte {
	// FNV-1a, 32 bits.
	h := uint32(2166136261)
	for i := 0; i < len(source); i++ {
		h ^= uint32(source[i])
		h *= 16777619
	}
	return strconv.AppendUint(dst, uint64(h%streamBuckets), 10)
}

// sourceFilter matches the entries of source: in its bucket, and in a
// stream of its own as entries written before were.
func sourceFilter(source string) string {
	q := quote(source)
	return "(_stream:{" + streamField + "=\"" + string(appendStream(nil, source)) + "\"} source:=" + q +
		" or _stream:{source=" + q + "})"
}
