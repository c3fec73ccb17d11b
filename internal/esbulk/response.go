package esbulk

import (
	"encoding/json"
	"time"
)

// itemResult is one item of a bulk response, as Elasticsearch writes it.
type itemResult struct {
	Index   string     `json:"_index"`
	ID      string     `json:"_id"`
	Version int        `json:"_version,omitempty"`
	Result  string     `json:"result,omitempty"`
	Shards  *shards    `json:"_shards,omitempty"`
	SeqNo   *int       `json:"_seq_no,omitempty"`
	Term    int        `json:"_primary_term,omitempty"`
	Status  int        `json:"status"`
	Error   *ItemError `json:"error,omitempty"`
}

type shards struct {
	Total      int `json:"total"`
	Successful int `json:"successful"`
	Failed     int `json:"failed"`
}

// Response is the body of a bulk response: took (milliseconds), errors
// (whether any item failed) and one item per action, in order, named by
// its action, with its status and, when it failed, its error.
func Response(items []Item, took time.Duration) []byte {
	return response(items, took, nil, 0)
}

// Refused is the body of a request refused whole with status (429 when
// the queue is full): a bulk response whose every item failed with the
// error, and the error and status of the request, as Elasticsearch writes
// a refused request. Clients that read the status retry the request;
// rsyslog's omelasticsearch, which reads only the body, finds each item
// failed and retries it (retryfailures).
func Refused(items []Item, took time.Duration, status int, typ, reason string) []byte {
	for i := range items {
		if items[i].Error == nil {
			items[i].Fail(status, typ, reason)
		}
	}
	e := &ItemError{Type: typ, Reason: reason}
	return response(items, took, map[string]any{"root_cause": []*ItemError{e}, "type": typ, "reason": reason}, status)
}

func response(items []Item, took time.Duration, reqErr map[string]any, status int) []byte {
	var out struct {
		Took   int64                   `json:"took"`
		Errors bool                    `json:"errors"`
		Items  []map[string]itemResult `json:"items"`
		Error  map[string]any          `json:"error,omitempty"`
		Status int                     `json:"status,omitempty"`
	}
	out.Error, out.Status = reqErr, status
	out.Took = took.Milliseconds()
	out.Items = make([]map[string]itemResult, len(items))
	one := &shards{Total: 1, Successful: 1}
	for i, it := range items {
		r := itemResult{Index: it.Index, ID: it.ID, Status: it.Status, Error: it.Error}
		if it.Error == nil {
			seq := i
			r.Version, r.Result, r.Shards, r.SeqNo, r.Term = 1, "created", one, &seq, 1
		} else {
			out.Errors = true
		}
		out.Items[i] = map[string]itemResult{it.Action: r}
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}
