package vlogs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/jsontext"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/search"
)

// The fields of an artifact's entry. _time, _msg (the raw line), s (the
// stream field: the source's stream bucket, streams.go), source and w
// (the search text) as described in logsql.go; then the id, as i (a
// UUID written as 32 letters, idLetters) or, for an id that is not a
// UUID in its canonical form, as id; r, the milliseconds from the
// artifact's time to its receipt, when they differ by half a millisecond
// or more (in entries written before: c, the nanoseconds, or created, in
// RFC 3339; a receipt time beyond a Duration is still written so); and
// when set ts (the exact time of
// a clamped _time), meta, event, enr (JSON), rawpg ("1": the raw line
// is in PostgreSQL, too long for an entry) and empty ("1": the raw line
// is empty, which an entry's _msg cannot be). For previews, which
// VictoriaLogs cannot cut: p and n, the first PreviewRawBytes of a
// longer raw line and its length; eb and mb ("1"): event or metadata
// larger than their previews.

// maxEntryBytes is below VictoriaLogs' limit of 2 MiB per entry (it
// ignores larger ones), with room for field names and escaping overhead
// counted by entry.
const maxEntryBytes = 2<<20 - 64<<10

// entry appends a as one JSON line (no newline) to dst, and says whether
// its raw line was left out for PostgreSQL to keep. It writes the JSON
// itself, the fields in a fixed order, with no map and no reflection:
// this runs once per artifact stored.
func entry(dst []byte, a *vigil.Artifact) ([]byte, bool) {
	t, exact := entryTime(a.Timestamp)
	meta := bytes.TrimSpace(a.Metadata)
	if bytes.Equal(meta, []byte("{}")) {
		meta = nil
	}
	var event, enr []byte
	if !isNull(a.Event) {
		event = a.Event
	}
	if !isNull(a.Enrichment) {
		enr = a.Enrichment
	}
	start := len(dst)
	dst = append(dst, `{"_time":"`...)
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","`+streamField+`":"`...)
	dst = appendStream(dst, a.Source)
	dst = append(dst, `","source":`...)
	dst = jsontext.AppendString(dst, a.Source)
	dst = append(dst, `,"`+searchField+`":"`...)
	dst = appendTokens(dst, parse.SearchText(a.Raw))
	dst = append(dst, '"')
	if len(a.Raw) > 0 && hasAddressPart(a.Raw) {
		mark := len(dst)
		dst = append(dst, `,"`+addressField+`":"`...)
		keys := len(dst)
		dst = search.AppendAddressKeys(dst, a.Raw)
		if len(dst) == keys {
			dst = dst[:mark]
		} else {
			one := true
			for i := keys; i < len(dst); i++ {
				switch dst[i] {
				case '.':
					dst[i] = '_'
				case ' ':
					one = false
				}
			}
			if one {
				// One key alone ("10_0_0_1") would read as a number to
				// VictoriaLogs (it drops '_' from digits): were every
				// value of a block so, it would store them as numbers,
				// and "1_2_3_45" would match "12_3_4_5".
				dst = append(dst, ' ')
			}
			dst = append(dst, '"')
		}
	}
	if isUUID(a.ID) {
		dst = append(dst, `,"`+idField+`":"`...)
		dst = appendIDLetters(dst, a.ID)
		dst = append(dst, '"')
	} else {
		dst = append(dst, `,"id":`...)
		dst = jsontext.AppendString(dst, a.ID)
	}
	switch d := a.CreatedAt.Round(0).Sub(a.Timestamp.Round(0)); d {
	case 0:
	case math.MinInt64, math.MaxInt64: // beyond a Duration: written whole
		dst = append(dst, `,"created":"`...)
		dst = a.CreatedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	default:
		// To the millisecond: an offset of up to a minute is then a
		// 16-bit number with few distinct values per block, ≈ 2 bytes
		// stored where nanoseconds take 6 (values and bloom filter).
		if ms := int64(d.Round(time.Millisecond) / time.Millisecond); ms != 0 {
			dst = append(dst, `,"`+receivedField+`":"`...)
			dst = strconv.AppendInt(dst, ms, 10)
			dst = append(dst, '"')
		}
	}
	if exact != "" {
		dst = append(dst, `,"ts":"`...)
		dst = append(dst, exact...)
		dst = append(dst, '"')
	}
	if meta != nil {
		dst = append(dst, `,"meta":`...)
		dst = jsontext.AppendString(dst, string(meta))
	}
	if event != nil {
		dst = append(dst, `,"event":`...)
		dst = jsontext.AppendString(dst, string(event))
	}
	if enr != nil {
		dst = append(dst, `,"enr":`...)
		dst = jsontext.AppendString(dst, string(enr))
	}
	if len(a.Raw) > vigil.PreviewRawBytes {
		dst = append(dst, `,"p":`...)
		dst = jsontext.AppendString(dst, vigil.TrimPartialRune(a.Raw[:vigil.PreviewRawBytes]))
		dst = append(dst, `,"n":"`...)
		dst = strconv.AppendInt(dst, int64(len(a.Raw)), 10)
		dst = append(dst, '"')
	}
	if len(event) > vigil.PreviewEventBytes {
		dst = append(dst, `,"eb":"1"`...)
	}
	if len(meta) > vigil.PreviewMetadataBytes {
		dst = append(dst, `,"mb":"1"`...)
	}
	// The raw line last: it is left out when the entry would be too large.
	msg, inPG := a.Raw, false
	switch {
	case a.Raw == "":
		msg = "-"
		dst = append(dst, `,"empty":"1"`...)
	case len(dst)-start+len(a.Raw) > maxEntryBytes:
		msg, inPG = vigil.TrimPartialRune(a.Raw[:min(len(a.Raw), vigil.PreviewRawBytes)]), true
		dst = append(dst, `,"rawpg":"1"`...)
	}
	dst = append(dst, `,"_msg":`...)
	dst = jsontext.AppendString(dst, msg)
	return append(dst, '}'), inPG
}

// addressField holds an entry's address keys (search.AddressKeys), each
// written with '_' for '.' so that it is one VictoriaLogs word: an
// address term is then one word of one field, which VictoriaLogs' bloom
// filters find without reading the text of entries that lack it.
const addressField = "a"

// hasAddressPart is a quick test that text may hold an address key: it
// holds a digit.
func hasAddressPart(text string) bool {
	return strings.ContainsAny(text, "0123456789")
}

// appendTokens appends the search text of raw to dst: search.Tokens(raw)
// joined by single spaces, without allocating but to grow dst.
func appendTokens(dst []byte, raw string) []byte {
	first := true
	start := -1
	ascii := true
	flush := func(i int) {
		tok := raw[start:i]
		if !first {
			dst = append(dst, ' ')
		}
		first = false
		if ascii {
			for j := 0; j < len(tok); j++ {
				c := tok[j]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				dst = append(dst, c)
			}
		} else {
			// Letters and digits only, valid UTF-8: nothing to escape.
			dst = append(dst, strings.ToLower(tok)...)
		}
		start, ascii = -1, true
	}
	for i, r := range raw {
		if r < utf8.RuneSelf {
			c := byte(r)
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				if start < 0 {
					start = i
				}
				continue
			}
		} else if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			ascii = false
			continue
		}
		if start >= 0 {
			flush(i)
		}
	}
	if start >= 0 {
		flush(len(raw))
	}
	return dst
}

func isNull(j json.RawMessage) bool {
	t := bytes.TrimSpace(j)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// artifactOf reads an entry of org back (a preview when it was read with
// previewPipes). The raw line of an entry with rawpg is filled in by the
// caller.
func artifactOf(org string, row map[string]string, previews bool) (*vigil.Artifact, bool, error) {
	id, err := idOf(row)
	if err != nil {
		return nil, false, err
	}
	a := &vigil.Artifact{ID: id, OrgID: org, Source: row["source"], Raw: row["_msg"], Metadata: json.RawMessage("{}")}
	if ts := row["ts"]; ts != "" {
		a.Timestamp, err = time.Parse(time.RFC3339Nano, ts)
	} else {
		a.Timestamp, err = time.Parse(time.RFC3339Nano, row["_time"])
	}
	if err != nil {
		return nil, false, fmt.Errorf("entry %s: time: %w", a.ID, err)
	}
	switch r, c, old := row[receivedField], row[createdField], row["created"]; {
	case r != "":
		var ms int64
		ms, err = strconv.ParseInt(r, 10, 64)
		a.CreatedAt = a.Timestamp.Add(time.Duration(ms) * time.Millisecond)
	case old != "":
		a.CreatedAt, err = time.Parse(time.RFC3339Nano, old)
	case c != "":
		var d int64
		d, err = strconv.ParseInt(c, 10, 64)
		a.CreatedAt = a.Timestamp.Add(time.Duration(d))
	default:
		a.CreatedAt = a.Timestamp
	}
	if err != nil {
		return nil, false, fmt.Errorf("entry %s: created: %w", a.ID, err)
	}
	if m := row["meta"]; m != "" {
		a.Metadata = json.RawMessage(m)
	}
	if e := row["event"]; e != "" {
		a.Event = json.RawMessage(e)
	}
	if e := row["enr"]; e != "" {
		a.Enrichment = json.RawMessage(e)
	}
	if row["empty"] == "1" {
		a.Raw = ""
	}
	if previews {
		preview(a, row)
	}
	return a, row["rawpg"] == "1", nil
}

// previewPipes make VictoriaLogs answer previews: the cut raw line in
// place of a longer one, and a dash in place of an event or metadata
// larger than its preview, so that a page of large artifacts never
// crosses the network whole.
const previewPipes = ` | format if (p:*) "<p>" as _msg | format if (eb:=1) "-" as event | format if (mb:=1) "-" as meta` + deletePipe

// preview reads the previews of an entry read with previewPipes.
func preview(a *vigil.Artifact, row map[string]string) {
	if n, err := strconv.Atoi(row["n"]); err == nil && n > vigil.PreviewRawBytes {
		a.Raw = vigil.TrimPartialRune(a.Raw[:min(len(a.Raw), vigil.PreviewRawBytes)])
		a.RawTruncated, a.RawBytes = true, n
	}
	if row["mb"] == "1" {
		a.Metadata, a.MetadataTruncated = json.RawMessage("{}"), true
	}
	if row["eb"] == "1" {
		a.Event, a.EventTruncated = nil, true
	}
}
