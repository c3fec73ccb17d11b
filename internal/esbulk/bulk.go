// Package esbulk reads Elasticsearch bulk requests (NDJSON: an action
// line, then for index and create a document line) into artifacts, and
// writes Elasticsearch's bulk response, so that shippers built for
// Elasticsearch (Filebeat, Logstash, Vector, Fluent Bit, rsyslog's
// omelasticsearch, syslog-ng's elasticsearch-http) send to Vigil
// unchanged.
package esbulk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/vigil-soc/vigil"
)

// MaxDocumentBytes bounds one document line: a raw line of
// vigil.MaxRawBytes wrapped in the fields a shipper adds.
const MaxDocumentBytes = vigil.MaxRawBytes + 64<<10

// maxIndexBytes bounds an index name, as Elasticsearch does.
const maxIndexBytes = 255

// MaxItems bounds the actions of one request.
const MaxItems = 100000

// Item is one action of a bulk request and what became of it.
type Item struct {
	Action string // index, create (taken); delete, update (refused)
	Index  string
	ID     string // the client's _id, or the artifact's
	// Artifact is the document as an artifact; nil when the item is
	// refused (Status and Error say why).
	Artifact *vigil.Artifact
	Status   int
	Error    *ItemError
}

// ItemError is an item's error in Elasticsearch's shape.
type ItemError struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// Fail marks it refused.
func (it *Item) Fail(status int, typ, reason string) {
	it.Artifact, it.Status, it.Error = nil, status, &ItemError{Type: typ, Reason: reason}
}

// artifactSpace names the artifacts of documents that carry an _id: the
// same (org, index, _id) is the same artifact, so that a shipper's retry
// of a document it gave an id is stored once.
var artifactSpace = uuid.MustParse("1d6e0c5e-7f8a-4c39-9b0e-2f1c6c1b7a40")

// Request is what Parse makes of a body.
type Request struct {
	Items []Item
}

// action is an action line's metadata.
type action struct {
	Index string `json:"_index"`
	ID    string `json:"_id"`
}

// Parse reads body, a bulk request of org sent to index (the path's, or
// ""), received at now. A malformed action line refuses the whole request
// (as Elasticsearch does: the lines after it cannot be paired); a bad
// document refuses only its item.
func Parse(body []byte, org, index string, now time.Time) (*Request, error) {
	req := &Request{}
	line := 0
	next := func() ([]byte, bool) {
		for len(body) > 0 {
			var l []byte
			if i := bytes.IndexByte(body, '\n'); i >= 0 {
				l, body = body[:i], body[i+1:]
			} else {
				l, body = body, nil
			}
			line++
			if l = bytes.TrimSpace(l); len(l) > 0 {
				return l, true
			}
		}
		return nil, false
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if len(req.Items) >= MaxItems {
			return nil, vigil.InvalidField("body", fmt.Sprintf("must hold at most %d actions", MaxItems))
		}
		name, meta, err := parseAction(l)
		if err != nil {
			return nil, vigil.InvalidField(fmt.Sprintf("line %d", line), err.Error())
		}
		it := Item{Action: name, Index: meta.Index, ID: meta.ID}
		if it.Index == "" {
			it.Index = index
		}
		if len(it.Index) > maxIndexBytes {
			if name == "index" || name == "create" || name == "update" {
				next()
			}
			it.Fail(400, "invalid_index_name_exception", fmt.Sprintf("index name of %d bytes: at most %d", len(it.Index), maxIndexBytes))
			req.Items = append(req.Items, it)
			continue
		}
		switch name {
		case "index", "create":
			doc, ok := next()
			if !ok {
				return nil, vigil.InvalidField(fmt.Sprintf("line %d", line+1), "the "+name+" action has no document line")
			}
			it.Status = 201
			it.Artifact, it.Error = document(doc, org, it.Index, it.ID, now)
			if it.Error != nil {
				it.Status = 400
			} else if it.ID == "" {
				it.ID = it.Artifact.ID
			}
		case "update":
			if _, ok := next(); !ok {
				return nil, vigil.InvalidField(fmt.Sprintf("line %d", line+1), "the update action has no document line")
			}
			it.Fail(400, "illegal_argument_exception", "Vigil keeps artifacts as sent: only index and create actions are taken")
		case "delete":
			it.Fail(400, "illegal_argument_exception", "Vigil keeps artifacts as sent: only index and create actions are taken")
		}
		req.Items = append(req.Items, it)
	}
	if len(req.Items) == 0 {
		return nil, vigil.InvalidField("body", "must hold at least one action (NDJSON: an action line, then a document line)")
	}
	return req, nil
}

// parseAction reads an action line: an object with one member, the action,
// whose value is an object of metadata.
func parseAction(l []byte) (string, action, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(l, &m); err != nil || m == nil {
		return "", action{}, fmt.Errorf("malformed action line: must be a JSON object such as {\"create\":{}}")
	}
	if len(m) != 1 {
		return "", action{}, fmt.Errorf("malformed action line: must name exactly one action")
	}
	for name, raw := range m {
		switch name {
		case "index", "create", "update", "delete":
		default:
			return "", action{}, fmt.Errorf("unknown action %.32q: want index, create, update or delete", name)
		}
		var a action
		if err := json.Unmarshal(raw, &a); err != nil {
			return "", action{}, fmt.Errorf("malformed %s action: its metadata must be an object with string _index and _id", name)
		}
		return name, a, nil
	}
	panic("unreachable")
}

// document turns a document line into an artifact, or says why it cannot.
func document(doc []byte, org, index, id string, now time.Time) (*vigil.Artifact, *ItemError) {
	if len(doc) > MaxDocumentBytes {
		return nil, &ItemError{Type: "illegal_argument_exception", Reason: fmt.Sprintf("document of %d bytes: at most %d", len(doc), MaxDocumentBytes)}
	}
	if doc[0] != '{' {
		return nil, &ItemError{Type: "mapper_parsing_exception", Reason: "the document must be a JSON object"}
	}
	f, err := decodeShape(doc)
	if err != nil {
		return nil, &ItemError{Type: "mapper_parsing_exception", Reason: "failed to parse the document: " + shortErr(err)}
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
		return nil, &ItemError{Type: "illegal_argument_exception", Reason: "the message must be at most 1 MiB"}
	}
	path := first(string(f.LogFilePath), f.Log.path)
	hints := hints{
		dataset: first(string(f.EventDataset), string(f.Event.Dataset)), module: first(string(f.EventModule), string(f.Event.Module)),
		fileset: first(string(f.FilesetName), string(f.Fileset.Name)), input: first(string(f.InputType), string(f.Input.Type)),
		path: path, index: index, eve: structured && len(f.EventType) > 0, windows: len(f.Winlog) > 0,
	}
	a := &vigil.Artifact{Source: hints.source([]byte(raw)), Raw: raw, Timestamp: now, TimestampDefaulted: true, CreatedAt: now}
	if id != "" {
		a.ID = uuid.NewSHA1(artifactSpace, []byte(org+"\x00"+index+"\x00"+id)).String()
	} else {
		a.ID = vigil.NewID()
	}
	// The shipper's @timestamp is when it read the line: the event time the
	// parser finds in the line replaces it, as the server's time would be.
	if t, err := time.Parse(time.RFC3339Nano, string(f.Timestamp)); err == nil && vigil.ValidTimestamp(t) {
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
	return a, nil
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
