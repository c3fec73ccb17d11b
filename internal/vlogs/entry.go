package vlogs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/search"
)

// The fields of an artifact's entry. _time, _msg (the raw line), source
// (the stream field) and w (the search text) as described in logsql.go;
// then id, created (RFC 3339), and when set ts (the exact time of a
// clamped _time), meta, event, enr (JSON), rawpg ("1": the raw line is
// in PostgreSQL, too long for an entry) and empty ("1": the raw line is
// empty, which an entry's _msg cannot be). For previews, which
// VictoriaLogs cannot cut: p and n, the first PreviewRawBytes of a
// longer raw line and its length; eb and mb ("1"): event or metadata
// larger than their previews.

// maxEntryBytes is below VictoriaLogs' limit of 2 MiB per entry (it
// ignores larger ones), with room for field names and escaping overhead
// counted by entrySize.
const maxEntryBytes = 2<<20 - 64<<10

// entry renders a as one JSON line, and says whether its raw line was
// left out for PostgreSQL to keep.
func entry(a *vigil.Artifact) ([]byte, bool) {
	w := strings.Join(search.Tokens(parse.SearchText(a.Raw)), " ")
	t, exact := entryTime(a.Timestamp)
	m := map[string]string{
		"_time":     t.UTC().Format(time.RFC3339Nano),
		"_msg":      a.Raw,
		"source":    a.Source,
		searchField: w,
		"id":        a.ID,
		"created":   a.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
	if exact != "" {
		m["ts"] = exact
	}
	if meta := bytes.TrimSpace(a.Metadata); len(meta) > 0 && !bytes.Equal(meta, []byte("{}")) {
		m["meta"] = string(meta)
	}
	if !isNull(a.Event) {
		m["event"] = string(a.Event)
	}
	if !isNull(a.Enrichment) {
		m["enr"] = string(a.Enrichment)
	}
	if a.Raw == "" {
		m["_msg"], m["empty"] = "-", "1"
	}
	if len(a.Raw) > vigil.PreviewRawBytes {
		m["p"], m["n"] = vigil.TrimPartialRune(a.Raw[:vigil.PreviewRawBytes]), strconv.Itoa(len(a.Raw))
	}
	if len(m["event"]) > vigil.PreviewEventBytes {
		m["eb"] = "1"
	}
	if len(m["meta"]) > vigil.PreviewMetadataBytes {
		m["mb"] = "1"
	}
	inPG := false
	if entrySize(m) > maxEntryBytes {
		m["_msg"], m["rawpg"] = vigil.TrimPartialRune(a.Raw[:min(len(a.Raw), vigil.PreviewRawBytes)]), "1"
		inPG = true
	}
	b, _ := json.Marshal(m)
	return b, inPG
}

// entrySize is about what VictoriaLogs counts of an entry: its names and
// values.
func entrySize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v) + 8
	}
	return n
}

func isNull(j json.RawMessage) bool {
	t := bytes.TrimSpace(j)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// artifactOf reads an entry of org back (a preview when it was read with
// previewPipes). The raw line of an entry with rawpg is filled in by the
// caller.
func artifactOf(org string, row map[string]string, previews bool) (*vigil.Artifact, bool, error) {
	a := &vigil.Artifact{ID: row["id"], OrgID: org, Source: row["source"], Raw: row["_msg"], Metadata: json.RawMessage("{}")}
	var err error
	if ts := row["ts"]; ts != "" {
		a.Timestamp, err = time.Parse(time.RFC3339Nano, ts)
	} else {
		a.Timestamp, err = time.Parse(time.RFC3339Nano, row["_time"])
	}
	if err != nil {
		return nil, false, fmt.Errorf("entry %s: time: %w", a.ID, err)
	}
	if a.CreatedAt, err = time.Parse(time.RFC3339Nano, row["created"]); err != nil {
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
const previewPipes = ` | format if (p:*) "<p>" as _msg | format if (eb:=1) "-" as event | format if (mb:=1) "-" as meta | delete p, w`

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
