package esbulk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParse reads a bulk request of 1000 documents as Filebeat sends
// them (the auth dataset's lines as message, with @timestamp,
// event.dataset, log.file.path and host.name): one op is the request.
//
//	go test ./internal/esbulk -run '^$' -bench Parse -benchmem
func BenchmarkParse(b *testing.B) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", "auth", "*.log"))
	var lines []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() && len(lines) < 1000 {
			if l := sc.Text(); l != "" {
				lines = append(lines, l)
			}
		}
		f.Close()
	}
	if len(lines) == 0 {
		b.Fatal("no lines in ../shared/datasets/auth")
	}
	var body bytes.Buffer
	for i := range 1000 {
		body.WriteString(`{"create":{"_index":"filebeat-8.19.0"}}` + "\n")
		d, _ := json.Marshal(map[string]any{"@timestamp": "2026-11-25T10:00:00.000Z", "message": lines[i%len(lines)],
			"event": map[string]any{"dataset": "system.auth", "module": "system"},
			"log":   map[string]any{"file": map[string]any{"path": "/var/log/auth.log"}},
			"host":  map[string]any{"name": "web-01"}})
		body.Write(d)
		body.WriteByte('\n')
	}
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readBulk(body.Bytes(), "org", "", now); err != nil {
			b.Fatal(err)
		}
	}
}
