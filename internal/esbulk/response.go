package esbulk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"time"
)

// created is a taken item of a bulk response, as Elasticsearch writes it.
type created struct {
	Index   string `json:"_index"`
	ID      string `json:"_id"`
	Version int    `json:"_version"`
	Result  string `json:"result"`
	Shards  shards `json:"_shards"`
	SeqNo   int    `json:"_seq_no"`
	Term    int    `json:"_primary_term"`
	Status  int    `json:"status"`
}

// failed is a failed item of a bulk response.
type failed struct {
	Index  string     `json:"_index"`
	ID     string     `json:"_id"`
	Status int        `json:"status"`
	Error  *ItemError `json:"error"`
}

type shards struct {
	Total      int `json:"total"`
	Successful int `json:"successful"`
	Failed     int `json:"failed"`
}

// WriteResponse writes the body of a bulk response to w: took
// (milliseconds), errors (whether any item failed) and one item per
// action, in order, named by its action, with its status and, when it
// failed, its error. It is written an item at a time: a response of
// 100,000 items is never held whole.
func WriteResponse(w io.Writer, req *Request, took time.Duration) error {
	return writeResponse(w, req, took, nil, 0)
}

// WriteRefused writes the body of a request refused whole with status
// (429 when the queue is full or the server holds as much as it may) to
// w: a bulk response whose every item not already failed fails with e,
// and the error and status of the request, as Elasticsearch writes a
// refused request. Clients that read the status retry the request;
// rsyslog's omelasticsearch, which reads only the body, finds each item
// failed and retries it (retryfailures). req is nil for a request refused
// before all of it was read: the response then has no items.
func WriteRefused(w io.Writer, req *Request, took time.Duration, status int, e *ItemError) error {
	for i := range req.Len() {
		if it := req.Item(i); it.Error == nil {
			it.Fail(status, e)
		}
	}
	return writeResponse(w, req, took, map[string]any{"root_cause": []*ItemError{e}, "type": e.Type, "reason": e.Reason}, status)
}

func writeResponse(w io.Writer, req *Request, took time.Duration, reqErr map[string]any, status int) error {
	anyFailed := reqErr != nil
	for i := range req.Len() {
		anyFailed = anyFailed || req.Item(i).Error != nil
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"took":`)
	bw.WriteString(strconv.FormatInt(took.Milliseconds(), 10))
	bw.WriteString(`,"errors":`)
	bw.WriteString(strconv.FormatBool(anyFailed))
	bw.WriteString(`,"items":[`)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range req.Len() {
		it := req.Item(i)
		buf.Reset()
		// Of strings and numbers: cannot fail.
		if it.Error == nil {
			enc.Encode(created{Index: it.Index, ID: it.docID(), Version: 1, Result: "created", Shards: shards{Total: 1, Successful: 1},
				SeqNo: i, Term: 1, Status: it.Status})
		} else {
			enc.Encode(failed{Index: it.Index, ID: it.docID(), Status: it.Status, Error: it.Error})
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"` + it.Action + `":`)
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		bw.WriteByte('}')
	}
	bw.WriteByte(']')
	if reqErr != nil {
		b, _ := json.Marshal(reqErr)
		bw.WriteString(`,"error":`)
		bw.Write(b)
		bw.WriteString(`,"status":`)
		bw.WriteString(strconv.Itoa(status))
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
