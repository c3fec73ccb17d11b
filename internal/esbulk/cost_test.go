package esbulk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/vigil-soc/vigil"
)

// datasetLines returns the non-empty lines, of at most maxLen bytes, of the
// files of ../shared/datasets matching glob.
func datasetLines(tb testing.TB, glob string, maxLen int) []string {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", glob))
	var lines []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, vigil.MaxRawBytes)
		for sc.Scan() {
			if l := sc.Text(); l != "" && len(l) <= maxLen {
				lines = append(lines, l)
			}
		}
		f.Close()
	}
	if len(lines) == 0 {
		tb.Fatalf("no lines of ../shared/datasets/%s", glob)
	}
	return lines
}

// bulkBody is a bulk request of n create actions, the documents made of
// lines in turn by doc.
func bulkBody(n int, lines []string, doc func(line string) any) []byte {
	var b bytes.Buffer
	for i := range n {
		b.WriteString(`{"create":{}}` + "\n")
		d, _ := json.Marshal(doc(lines[i%len(lines)]))
		b.Write(d)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// filebeatDoc is a document as Filebeat sends a line of /var/log/auth.log.
func filebeatDoc(line string) any {
	return map[string]any{"@timestamp": "2026-11-25T10:00:00.000Z", "message": line,
		"event": map[string]any{"dataset": "system.auth", "module": "system"},
		"log":   map[string]any{"file": map[string]any{"path": "/var/log/auth.log"}},
		"host":  map[string]any{"name": "web-01"}}
}

// heapNow is the heap in use after a collection (two: the first keeps
// what sync.Pools hold, encoding/json's buffers among them).
func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// queueEncoding encodes arts as the queue publishes them (internal/queue:
// an envelope of these members per artifact).
func queueEncoding(arts []*vigil.Artifact) []byte {
	type queued struct {
		ID        string          `json:"id"`
		Source    string          `json:"source"`
		Raw       string          `json:"raw"`
		Timestamp int64           `json:"ts"`
		Created   int64           `json:"created"`
		Metadata  json.RawMessage `json:"meta,omitempty"`
		Defaulted bool            `json:"tsd,omitempty"`
	}
	env := make([]queued, len(arts))
	for i, a := range arts {
		env[i] = queued{a.ID, a.Source, a.Raw, a.Timestamp.UnixNano(), a.CreatedAt.UnixNano(), a.Metadata, a.TimestampDefaulted}
	}
	b, _ := json.Marshal(env)
	return b
}

// TestCostCoversMemory: what Scan says a request costs covers what it
// holds beyond its body, measured on the heap after a collection: its
// items, and the largest batch of artifacts with their JSON encoding (as
// the queue encodes a batch); and it is no more than twice that, so that
// the budget it is charged to is not spent on nothing.
func TestCostCoversMemory(t *testing.T) {
	small := datasetLines(t, "*/*.log", 60)
	auth := datasetLines(t, "auth/*.log", 1<<20)
	eve := datasetLines(t, "suricata/*.json", 1<<20)
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"99,000 small documents", bulkBody(99000, small, func(l string) any { return map[string]string{"message": l} })},
		{"25,000 Filebeat documents", bulkBody(25000, auth, filebeatDoc)},
		{"Suricata EVE documents", bulkBody(len(eve), eve, func(l string) any { return json.RawMessage(l) })},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := heapNow()
			req, err := Scan(bytes.NewReader(c.body), "logs", func(int64) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			items := heapNow() - base
			var batch int64
			err = req.Decode(bytes.NewReader(c.body), "org-a", now, func(arts []*vigil.Artifact, _ []int) {
				enc := queueEncoding(arts)
				batch = max(batch, heapNow()-base-items)
				runtime.KeepAlive(enc)
			})
			if err != nil {
				t.Fatal(err)
			}
			held := items + batch
			t.Logf("body %d KiB, %d items: cost %d KiB; held %d KiB (items %d KiB, largest batch %d KiB)",
				len(c.body)>>10, req.Len(), req.Cost>>10, held>>10, items>>10, batch>>10)
			if req.Cost < held || req.Cost > 2*held {
				t.Errorf("cost %d bytes for %d held: want at least what is held and at most twice it", req.Cost, held)
			}
			runtime.KeepAlive(req)
		})
	}
}
