// Package evtximport sends the records of .evtx files to a Vigil server as
// artifacts: each record as the document Winlogbeat would send for it,
// through the Elasticsearch bulk endpoint, with an _id made of the
// computer, channel and record id so that importing a file twice stores
// each record once.
package evtximport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/evtx"
)

// Options say where records go and how many go in one request.
type Options struct {
	// Index names the bulk index (and so the source): "windows".
	Index string
	// Batch is the number of records per request.
	Batch int
	// Log receives one line per damaged chunk or record and per file.
	Log io.Writer
}

// Result counts what one file gave.
type Result struct {
	Records  int // read and accepted by the server
	Damaged  int // chunks or records that could not be read
	Rejected int // refused by the server, item by item
}

// Sender posts bulk bodies: *client.Client.
type Sender interface {
	PostElasticBulk(ctx context.Context, body []byte) (client.PostResult, error)
}

// File reads one .evtx file and sends its records. A damaged chunk is
// reported (file and offset) and skipped; the rest of the file is sent.
// The error is of the file as a whole (unreadable, not an EVTX file) or of
// the server (refusing the credentials, unreachable).
func File(ctx context.Context, s Sender, path string, opt Options) (Result, error) {
	var res Result
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	r, err := evtx.NewReader(f)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	var body bytes.Buffer
	pending := 0
	flush := func() error {
		if pending == 0 {
			return nil
		}
		acc, rej, err := post(ctx, s, body.Bytes())
		res.Records += acc
		res.Rejected += rej
		body.Reset()
		pending = 0
		return err
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var ce *evtx.ChunkError
		if errors.As(err, &ce) {
			res.Damaged++
			fmt.Fprintf(opt.Log, "%s: %v (skipped; the rest of the file is read)\n", path, ce)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", path, err)
		}
		doc, err := rec.Winlogbeat()
		if err != nil {
			res.Damaged++
			fmt.Fprintf(opt.Log, "%s: offset %d: %v (skipped)\n", path, rec.Offset, err)
			continue
		}
		if err := appendItem(&body, opt.Index, rec, doc); err != nil {
			return res, err
		}
		if pending++; pending >= opt.Batch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	return res, flush()
}

// appendItem adds a create action and its document. The _id names the
// record (computer, channel, record id), which a re-import repeats.
func appendItem(body *bytes.Buffer, index string, rec *evtx.Record, doc []byte) error {
	var id struct {
		Winlog struct {
			Channel  string `json:"channel"`
			Computer string `json:"computer_name"`
			RecordID uint64 `json:"record_id"`
		} `json:"winlog"`
	}
	if err := json.Unmarshal(doc, &id); err != nil {
		return fmt.Errorf("record at offset %d: %w", rec.Offset, err)
	}
	action, err := json.Marshal(map[string]any{"create": map[string]string{
		"_index": index,
		"_id":    fmt.Sprintf("evtx/%s/%s/%d", id.Winlog.Computer, id.Winlog.Channel, id.Winlog.RecordID),
	}})
	if err != nil {
		return err
	}
	body.Write(action)
	body.WriteByte('\n')
	body.Write(doc)
	body.WriteByte('\n')
	return nil
}

// post sends one body, waiting and sending again while the server answers
// 429 or 503 (a full queue), as shippers do.
func post(ctx context.Context, s Sender, body []byte) (accepted, rejected int, err error) {
	for {
		res, err := s.PostElasticBulk(ctx, body)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case res.Status == http.StatusOK:
			return res.Accepted, res.Rejected, nil
		case res.Status == http.StatusTooManyRequests || res.Status == http.StatusServiceUnavailable:
			select {
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			case <-time.After(res.RetryAfter):
			}
		default:
			return 0, 0, fmt.Errorf("the server answered %d: %s", res.Status, res.Body)
		}
	}
}
