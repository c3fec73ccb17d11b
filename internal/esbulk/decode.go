package esbulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/vigil-soc/vigil"
)

// Decode reads the documents of req from body, the bytes Scan read,
// read again, into artifacts of org received at now, BatchDocuments at a time,
// so that a request holds one batch of artifacts, not all of them: take
// is given each batch and the number (req.Item) of each artifact's item,
// and keeps neither slice. Each item is answered: 201 with its artifact's
// id, or its document's error (400).
func (req *Request) Decode(body io.Reader, org string, now time.Time, take func(arts []*vigil.Artifact, items []int)) error {
	ln := newLines(body, MaxDocumentBytes)
	arts := make([]*vigil.Artifact, 0, min(req.n, BatchDocuments))
	at := make([]int, 0, cap(arts))
	flush := func() {
		if len(arts) > 0 {
			take(arts, at)
			clear(arts)
			arts, at = arts[:0], at[:0]
		}
	}
	for i := range req.n {
		it := req.Item(i)
		if _, _, err := ln.next(); err != nil {
			return fmt.Errorf("esbulk: action line of item %d read again: %w", i, unexpected(err))
		}
		if !hasDocument(it.Action) {
			continue
		}
		doc, _, err := ln.next()
		if err != nil {
			return fmt.Errorf("esbulk: document of item %d read again: %w", i, unexpected(err))
		}
		if !it.doc {
			continue
		}
		a, u, e := document(doc, org, it.Index, it.ID, now)
		if e != nil {
			it.Fail(400, e)
			continue
		}
		it.Status, it.art = 201, u
		arts, at = append(arts, a), append(at, i)
		if len(arts) == BatchDocuments {
			flush()
		}
	}
	flush()
	return nil
}

// unexpected is an end of the body, read again, where Scan found a line.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// document turns a document line into an artifact, or says why it cannot.
func document(doc []byte, org, index, id string, now time.Time) (*vigil.Artifact, uuid.UUID, *ItemError) {
	if doc[0] != '{' {
		return nil, uuid.Nil, &ItemError{Type: "mapper_parsing_exception", Reason: "the document must be a JSON object"}
	}
	f, err := decodeShape(doc)
	if err != nil {
		return nil, uuid.Nil, &ItemError{Type: "mapper_parsing_exception", Reason: "failed to parse the document: " + shortErr(err)}
	}
	raw, structured := "", false
	if len(f.Winlog) > 0 {
		// A Windows event (Winlogbeat, vigil import): the document is the
		// event, whole, and its message is only Windows' rendering of it.
		raw, structured = string(doc), true
	} else if f.Message != "" {
		raw = string(f.Message)
	} else if f.Log.line != "" {
		// Fluent Bit's tail input names the line "log".
		raw = string(f.Log.line)
	} else {
		// A structured event (Suricata EVE parsed by the shipper): the
		// document is the line.
		raw, structured = string(doc), true
	}
	if !utf8.ValidString(raw) {
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	if len(raw) > vigil.MaxRawBytes {
		return nil, uuid.Nil, &ItemError{Type: "illegal_argument_exception", Reason: "the message must be at most 1 MiB"}
	}
	path := first(string(f.LogFilePath), f.Log.path)
	hints := hints{
		dataset: first(string(f.EventDataset), string(f.Event.Dataset)), module: first(string(f.EventModule), string(f.Event.Module)),
		fileset: first(string(f.FilesetName), string(f.Fileset.Name)), input: first(string(f.InputType), string(f.Input.Type)),
		path: path, index: index, eve: structured && len(f.EventType) > 0, windows: len(f.Winlog) > 0,
	}
	a := &vigil.Artifact{Source: hints.source([]byte(raw)), Raw: raw, Timestamp: now, TimestampDefaulted: true, CreatedAt: now}
	u := vigil.NewUUID()
	if id != "" {
		u = uuid.NewSHA1(artifactSpace, []byte(org+"\x00"+index+"\x00"+id))
	}
	a.ID = u.String()
	// The shipper's @timestamp is when it read the line: the event time the
	// parser finds in the line replaces it, as the server's time would be.
	if f.Timestamp == "" {
		// none: no parse, whose error would be made only to be dropped
	} else if t, err := time.Parse(time.RFC3339Nano, string(f.Timestamp)); err == nil && vigil.ValidTimestamp(t) {
		a.Timestamp = t.UTC()
	}
	var meta struct {
		Elastic struct {
			Host    string `json:"host,omitempty"`
			Index   string `json:"index"`
			LogFile string `json:"log_file,omitempty"`
		} `json:"elastic"`
	}
	meta.Elastic.Index, meta.Elastic.LogFile = index, path
	meta.Elastic.Host = first(string(f.HostName), string(f.Host.Name), string(f.HostHostname), string(f.Host.Hostname), f.Host.line)
	a.Metadata, _ = json.Marshal(meta)
	return a, u, nil
}

// jsonString decodes a JSON string value.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	// A string with no escape is its bytes (the document was validated
	// as JSON when decoded), unless they are not UTF-8, which decoding
	// replaces.
	if in := raw[1 : len(raw)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// shortErr is an error's message cut to what an item's reason shows.
func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
