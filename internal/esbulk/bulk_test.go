package esbulk

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// Lines of ../../testdata and the datasets: an sshd line of Debian's auth
// log, a Suricata EVE alert, a netfilter kernel line, a BIND query line.
const (
	sshdLine  = `Nov 25 10:01:02 web-01 sshd[4211]: Failed password for root from 203.0.113.9 port 52144 ssh2`
	eveLine   = `{"timestamp":"2026-11-25T10:00:00.000000+0000","event_type":"alert","src_ip":"203.0.113.9","src_port":4444,"dest_ip":"10.0.0.5","dest_port":80,"proto":"TCP","alert":{"signature_id":2100498,"signature":"GPL ATTACK_RESPONSE id check returned root","severity":2}}`
	kernLine  = `Nov 25 10:01:02 gw kernel: [UFW BLOCK] IN=eth0 OUT= MAC= SRC=203.0.113.9 DST=10.0.0.1 LEN=40 PROTO=TCP SPT=4444 DPT=23`
	namedLine = `25-Nov-2026 10:01:02.123 client @0x7f 10.0.0.7#53211 (example.com): query: example.com IN A +E(0)K (10.0.0.1)`
)

// parsed is a request read as the API reads it (Scan, then Decode), and
// the artifact of each item taken.
type parsed struct {
	*Request
	arts map[int]*vigil.Artifact
}

func (p parsed) art(i int) *vigil.Artifact { return p.arts[i] }

func readBulk(body []byte, org, index string, now time.Time) (parsed, error) {
	req, err := Scan(bytes.NewReader(body), index, func(int64) error { return nil })
	if err != nil {
		return parsed{}, err
	}
	p := parsed{Request: req, arts: map[int]*vigil.Artifact{}}
	err = req.Decode(bytes.NewReader(body), org, now, func(arts []*vigil.Artifact, at []int) {
		for j, a := range arts {
			p.arts[at[j]] = a
		}
	})
	return p, err
}

func doc(fields map[string]any) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

func TestParseSources(t *testing.T) {
	tests := []struct {
		name, index, doc    string
		wantSource, wantRaw string
	}{
		{"Filebeat system.auth", "filebeat-8.19.0", doc(map[string]any{"message": sshdLine, "event": map[string]any{"dataset": "system.auth", "module": "system"}}), "auth", sshdLine},
		{"dotted dataset", "", doc(map[string]any{"message": eveLine, "event.dataset": "suricata.eve"}), "suricata", eveLine},
		{"fileset", "", doc(map[string]any{"message": sshdLine, "fileset": map[string]any{"name": "auth"}}), "auth", sshdLine},
		{"log.file.path auth.log", "filebeat", doc(map[string]any{"message": sshdLine, "log": map[string]any{"file": map[string]any{"path": "/var/log/auth.log"}}}), "auth", sshdLine},
		{"log.file.path eve.json", "", doc(map[string]any{"message": eveLine, "log.file.path": "/var/log/suricata/eve.json"}), "suricata", eveLine},
		{"index names the source", "auth", doc(map[string]any{"message": "anything"}), "auth", "anything"},
		{"data stream index", "logs-system.auth-default", doc(map[string]any{"message": sshdLine}), "auth", sshdLine},
		{"fields before index", "dns", doc(map[string]any{"message": sshdLine, "event.dataset": "system.auth"}), "auth", sshdLine},
		{"syslog program", "filebeat-8.19.0", doc(map[string]any{"message": sshdLine, "log.file.path": "/var/log/syslog", "input": map[string]any{"type": "filestream"}}), "auth", sshdLine},
		{"syslog kernel netfilter", "", doc(map[string]any{"message": kernLine}), "firewall", kernLine},
		{"Fluent Bit log key", "fluentbit", doc(map[string]any{"log": namedLine, "log.file.path": "/var/log/named/query.log"}), "fluentbit", namedLine},
		{"named file", "", doc(map[string]any{"message": namedLine, "log.file.path": "/var/log/named/named.log"}), "dns", namedLine},
		{"structured EVE", "vector", eveLine, "suricata", eveLine},
		{"unknown: index word", "vector-2026.11.25", doc(map[string]any{"message": "hello"}), "vector", "hello"},
		{"unknown: default", "", doc(map[string]any{"message": "hello"}), DefaultSource, "hello"},
		{"zeek is no dns", "", doc(map[string]any{"message": "x", "event.dataset": "zeek.conn"}), DefaultSource, "x"},
		{"fields of other types", "", doc(map[string]any{"message": sshdLine, "host": "web-01", "event": "x", "log": 7}), "auth", sshdLine},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := readBulk([]byte(`{"create":{}}`+"\n"+tc.doc+"\n"), "org-a", tc.index, now)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			it, a := req.Item(0), req.art(0)
			if a == nil {
				t.Fatalf("refused: %+v", it.Error)
			}
			if a.Source != tc.wantSource || a.Raw != tc.wantRaw {
				t.Errorf("source %q raw %q; want %q %q", a.Source, a.Raw, tc.wantSource, tc.wantRaw)
			}
			if it.Status != 201 || it.docID() != a.ID || !vigil.ValidID(a.ID) {
				t.Errorf("item %+v", it)
			}
		})
	}
}

func TestParseItems(t *testing.T) {
	body := strings.Join([]string{
		`{"index":{"_index":"auth","_id":"a1"}}`,
		doc(map[string]any{"message": sshdLine, "@timestamp": "2026-11-25T10:01:02.5Z", "host": map[string]any{"name": "web-01"}}),
		``,
		`{"create":{}}`,
		`[1,2]`,
		`{"delete":{"_id":"x"}}`,
		`{"update":{"_id":"x"}}`,
		`{"doc":{"a":1}}`,
		`{"create":{}}`,
		`{"message": "cut`,
		`{"create":{}}`,
		doc(map[string]any{"message": strings.Repeat("x", vigil.MaxRawBytes+1)}),
		`{ "create" : { "_index" : "dns" } }`,
		doc(map[string]any{"message": "bad \xff byte"}),
		`{"create":{}}`,
		doc(map[string]any{"message": strings.Repeat("x", MaxDocumentBytes)}),
		`{"\u0069ndex":{"routing":{"a":[1,"}"]},"_index":"au\u0074h","_id":null,"pipeline":"p"}}`,
		doc(map[string]any{"message": sshdLine}),
	}, "\n")
	req, err := readBulk([]byte(body), "org-a", "filebeat", now)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	want := []struct {
		action, index string
		status        int
		errType       string
	}{
		{"index", "auth", 201, ""},
		{"create", "filebeat", 400, "mapper_parsing_exception"},
		{"delete", "filebeat", 400, "illegal_argument_exception"},
		{"update", "filebeat", 400, "illegal_argument_exception"},
		{"create", "filebeat", 400, "mapper_parsing_exception"},
		{"create", "filebeat", 400, "illegal_argument_exception"},
		{"create", "dns", 201, ""},
		{"create", "filebeat", 400, "illegal_argument_exception"},
		{"index", "auth", 201, ""},
	}
	if req.Len() != len(want) {
		t.Fatalf("%d items, want %d", req.Len(), len(want))
	}
	for i, w := range want {
		it := req.Item(i)
		typ := ""
		if it.Error != nil {
			typ = it.Error.Type
		}
		if it.Action != w.action || it.Index != w.index || it.Status != w.status || typ != w.errType || (req.art(i) == nil) != (w.status != 201) {
			t.Errorf("item %d = %s %s %d %q (artifact %v); want %+v", i, it.Action, it.Index, it.Status, typ, req.art(i) != nil, w)
		}
	}
	a := req.art(0)
	if req.Item(0).docID() != "a1" || a.ID == "a1" || !vigil.ValidID(a.ID) {
		t.Errorf("item 0 id %q artifact %q: want the client's _id answered, a UUID stored", req.Item(0).docID(), a.ID)
	}
	again, _ := readBulk([]byte(body), "org-a", "filebeat", now)
	other, _ := readBulk([]byte(body), "org-b", "filebeat", now)
	if again.art(0).ID != a.ID || other.art(0).ID == a.ID {
		t.Errorf("a retried _id must name the same artifact in its org only: %s %s %s", a.ID, again.art(0).ID, other.art(0).ID)
	}
	if !a.Timestamp.Equal(time.Date(2026, 11, 25, 10, 1, 2, 5e8, time.UTC)) || !a.TimestampDefaulted {
		t.Errorf("timestamp %v defaulted %v: want @timestamp, replaceable by the line's own time", a.Timestamp, a.TimestampDefaulted)
	}
	if string(a.Metadata) != `{"elastic":{"host":"web-01","index":"auth"}}` {
		t.Errorf("metadata %s", a.Metadata)
	}
	if got := req.art(6).Raw; got != "bad \uFFFD byte" {
		t.Errorf("invalid UTF-8 stored as %q", got)
	}
}

func TestParseRefusesRequest(t *testing.T) {
	for name, c := range map[string]struct{ body, field string }{
		"empty":                {"\n\n", "body"},
		"action not JSON":      {"create\n{}\n", "line 1"},
		"action an array":      {"[]\n{}\n", "line 1"},
		"two actions":          {`{"create":{},"index":{}}` + "\n{}\n", "line 1"},
		"unknown action":       {`{"upsert":{}}` + "\n{}\n", "line 1"},
		"metadata not object":  {`{"create":"x"}` + "\n{}\n", "line 1"},
		"_id a number":         {`{"create":{"_id":5}}` + "\n{}\n", "line 1"},
		"no document":          {`{"create":{}}`, "line 2"},
		"document then junk":   {`{"create":{}}` + "\n{}\n" + `{"message":"x"}` + "\n", "line 3"},
		"action repeated":      {`{"create":{},"create":{}}` + "\n{}\n", "line 1"},
		"action line too long": {`{"create":{"_id":"` + strings.Repeat("x", MaxDocumentBytes) + `"}}` + "\n{}\n", "line 1"},
		"action null":          {"null\n{}\n", "line 1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readBulk([]byte(c.body), "org-a", "", now)
			d := vigil.ErrorDetails(err)
			if vigil.ErrorCode(err) != vigil.EINVALID || len(d) == 0 || d[0].Field != c.field {
				t.Errorf("Parse = %v (%v), want invalid naming %q", err, d, c.field)
			}
		})
	}
}

func TestResponse(t *testing.T) {
	items := []Item{{Action: "create", Index: "auth", ID: "a", Status: 201}, {Action: "index", Index: "auth", ID: "b"}}
	items[1].Fail(429, &ItemError{"es_rejected_execution_exception", "ingest queue is full; retry later"})
	var got struct {
		Took   *int64 `json:"took"`
		Errors bool   `json:"errors"`
		Items  []map[string]struct {
			Index  string `json:"_index"`
			ID     string `json:"_id"`
			Status int    `json:"status"`
			Result string `json:"result"`
			Error  *struct{ Type, Reason string }
		} `json:"items"`
	}
	var out bytes.Buffer
	if err := WriteResponse(&out, &Request{blocks: [][]Item{items}, n: len(items)}, 1500*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Took == nil || *got.Took != 1 || !got.Errors || len(got.Items) != 2 {
		t.Fatalf("response %+v", got)
	}
	if c := got.Items[0]["create"]; c.Status != 201 || c.Result != "created" || c.ID != "a" || c.Error != nil {
		t.Errorf("item 0 %+v", c)
	}
	if c := got.Items[1]["index"]; c.Status != 429 || c.Error == nil || c.Error.Type != "es_rejected_execution_exception" {
		t.Errorf("item 1 %+v", c)
	}
}
