// Package esbulk reads Elasticsearch bulk requests (NDJSON: an action
// line, then for index and create a document line) into artifacts, a
// batch at a time, and writes Elasticsearch's bulk response, so that shippers built for
// Elasticsearch (Filebeat, Logstash, Vector, Fluent Bit, rsyslog's
// omelasticsearch, syslog-ng's elasticsearch-http) send to Vigil
// unchanged.
package esbulk

import (
	"cmp"
	"errors"
	"fmt"
	"io"

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

// BatchDocuments is how many documents Decode gives at a time: as many as
// one POST /v1/artifacts takes, published to the queue at once.
const BatchDocuments = vigil.MaxBatchItems

// Item is one action of a bulk request and what became of it.
type Item struct {
	Action string // index, create (taken); delete, update (refused)
	Index  string
	ID     string // the client's _id, or ""
	Status int    // 201 once its document is an artifact; 0 before Decode
	Error  *ItemError
	// art is the id of the item's artifact, once decoded: 16 bytes an
	// item, where a request may hold 100,000 of them.
	art uuid.UUID
	// doc is whether the item's document is to be decoded (an index or
	// create action of a valid index with a document of a valid size).
	doc bool
}

// ItemError is an item's error in Elasticsearch's shape.
type ItemError struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// Fail marks it refused with e (which many items may share).
func (it *Item) Fail(status int, e *ItemError) {
	it.Status, it.Error = status, e
}

// docID is the item's _id in the response: the client's, else its
// artifact's.
func (it *Item) docID() string {
	if it.ID != "" || it.art == uuid.Nil {
		return it.ID
	}
	return it.art.String()
}

// artifactSpace names the artifacts of documents that carry an _id: the
// same (org, index, _id) is the same artifact, so that a shipper's retry
// of a document it gave an id is stored once.
var artifactSpace = uuid.MustParse("1d6e0c5e-7f8a-4c39-9b0e-2f1c6c1b7a40")

// Request is what Scan makes of a body: its items, in blocks, and what
// decoding their documents holds in memory.
type Request struct {
	blocks [][]Item
	n      int
	// Cost is the bytes Scan took from its hold: an estimate of what the
	// request holds beyond its body while it is decoded and published,
	// its items and its largest batch of documents as artifacts and as the
	// queue's encoding of them.
	Cost int64
}

// Len is the number of items; none for a nil request.
func (req *Request) Len() int {
	if req == nil {
		return 0
	}
	return req.n
}

// Item returns the item i, in the order of the request.
func (req *Request) Item(i int) *Item { return &req.blocks[i/itemBlock][i%itemBlock] }

// itemBlock is how many items a block holds. Items are kept in blocks, not
// one slice, which growing by append would allocate five times the items'
// bytes for, and hold more than twice them while it grows.
const itemBlock = 512

// What decoding holds, in bytes, as TestCostCoversMemory measures it on
// the heap: an Item (104 measured), and a document of a batch: its
// artifact (struct, id, source, metadata: 330 to 350 measured besides the
// line) and the queue's encoding of it (200 to 250 besides the line), the
// line counted two and a half times: once in the artifact, once escaped in
// the encoding (a line that is a JSON document grows by its quotes'
// escapes).
const (
	itemBytes     = 112
	artifactBytes = 700
	docPercent    = 250
)

// Scan reads a bulk request (NDJSON) from body, sent to index (the
// path's, or ""), one line at a time: its actions, paired with their
// document lines, without decoding the documents. A malformed action line
// refuses the whole request (as Elasticsearch does: the lines after it
// cannot be paired), so that nothing of a request is taken before all of
// it was read; an action refused on its own (update, delete, an index
// name or document too long) is its item's error. An error of body's
// reader is returned as it is.
//
// What the request will hold is taken from hold as it is known, before it
// is allocated: each block of items as it is made, and at the end the
// largest batch of documents Decode will make. An error of hold ends the
// scan and is returned as it is.
func Scan(body io.Reader, index string, hold func(bytes int64) error) (*Request, error) {
	req := &Request{}
	take := func(n int64) error {
		req.Cost += n
		return hold(n)
	}
	ln := newLines(body, MaxDocumentBytes)
	names := map[string]string{}         // index names, held once
	var strs int64                       // bytes of the strings of the items since the last block
	var batch, batchBytes, largest int64 // documents and bytes of the batch read, and of the largest
	for {
		l, size, err := ln.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if req.n >= MaxItems {
			return nil, vigil.InvalidField("body", fmt.Sprintf("must hold at most %d actions", MaxItems))
		}
		if l == nil {
			return nil, vigil.InvalidField(fmt.Sprintf("line %d", ln.n), fmt.Sprintf("malformed action line of %d bytes", size))
		}
		name, meta, err := parseAction(l)
		if err != nil {
			return nil, vigil.InvalidField(fmt.Sprintf("line %d", ln.n), err.Error())
		}
		it := Item{Action: name, Index: cmp.Or(meta.Index, index), ID: meta.ID}
		if n, ok := names[it.Index]; ok {
			it.Index = n
		} else {
			if len(names) < 1000 {
				names[it.Index] = it.Index
			}
			strs += int64(len(it.Index))
		}
		strs += int64(len(it.ID))
		docSize := 0
		if hasDocument(name) {
			var doc []byte
			doc, docSize, err = ln.next()
			if errors.Is(err, io.EOF) {
				return nil, vigil.InvalidField(fmt.Sprintf("line %d", ln.n+1), "the "+name+" action has no document line")
			}
			if err != nil {
				return nil, err
			}
			if doc == nil {
				docSize = -docSize // too long
			}
		}
		switch {
		case len(it.Index) > maxIndexBytes:
			it.Fail(400, &ItemError{"invalid_index_name_exception", fmt.Sprintf("index name of %d bytes: at most %d", len(it.Index), maxIndexBytes)})
		case name == "update" || name == "delete":
			it.Fail(400, errKeptAsSent)
		case docSize < 0:
			it.Fail(400, &ItemError{"illegal_argument_exception", fmt.Sprintf("document of %d bytes: at most %d", -docSize, MaxDocumentBytes)})
		default:
			it.doc = true
			if batch == BatchDocuments {
				largest, batch, batchBytes = max(largest, batchBytes), 0, 0
			}
			batch++
			batchBytes += artifactBytes + int64(docSize)*docPercent/100
		}
		if req.n%itemBlock == 0 {
			if err := take(itemBlock*itemBytes + strs); err != nil {
				return nil, err
			}
			strs = 0
			req.blocks = append(req.blocks, make([]Item, 0, itemBlock))
		}
		b := &req.blocks[len(req.blocks)-1]
		*b = append(*b, it)
		req.n++
	}
	if req.n == 0 {
		return nil, vigil.InvalidField("body", "must hold at least one action (NDJSON: an action line, then a document line)")
	}
	if err := take(max(largest, batchBytes) + strs); err != nil {
		return nil, err
	}
	return req, nil
}

// errKeptAsSent is the error of the actions Vigil does not take.
var errKeptAsSent = &ItemError{"illegal_argument_exception", "Vigil keeps artifacts as sent: only index and create actions are taken"}
