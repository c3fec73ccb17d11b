package queue

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// chunk writes the bytes json.Marshal wrote for the same messages (the
// queue's format before appendEnvelope, and the one a queue that
// outlives an upgrade holds), on the real lines of the datasets and on
// strings as odd as a raw line gets.
func TestAppendEnvelope(t *testing.T) {
	arts := datasetArtifacts(t)
	// Not log lines: every character json.Marshal writes otherwise than
	// as itself (controls, HTML characters, invalid UTF-8, U+2028 and
	// U+2029), and metadata that json.Marshal compacts and escapes.
	for _, r := range []string{"a\x00b\x01\b\f\t\n\r\x1f\x7f\"\\/", "<script>&amp;</script>", "héllo 😀 \u2028\u2029 \ufffd",
		"bad \xff\xfe utf-8 \xe2\x80", ""} {
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: r, Raw: r, Timestamp: time.Unix(0, -5)})
	}
	arts = append(arts, &vigil.Artifact{ID: "x", Source: "s", Raw: "r", Metadata: json.RawMessage("{ \"a\" : [ 1 , \"<&>\" ] }\n")})
	for _, limit := range []int{256 << 10, 4 << 20} {
		q := &Queue{maxChunk: limit}
		got := q.chunk("org-<1>", "batch-1", arts)
		var want [][]byte
		for _, part := range chunks(arts, limit) {
			want = append(want, marshalChunk("org-<1>", "batch-1", part))
		}
		if len(got) != len(want) {
			t.Fatalf("maxChunk %d: %d messages, json.Marshal's %d", limit, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				j := 0
				for j < len(got[i]) && j < len(want[i]) && got[i][j] == want[i][j] {
					j++
				}
				t.Fatalf("maxChunk %d, message %d differs at byte %d:\n%.120q\njson.Marshal:\n%.120q", limit, i, j, got[i][j:], want[i][j:])
			}
		}
	}
}

// Metadata that is no JSON fails json.Marshal: chunk writes what it wrote
// before (an empty message, which the worker dead-letters).
func TestChunkInvalidMetadata(t *testing.T) {
	arts := []*vigil.Artifact{{ID: "x", Source: "s", Raw: "r", Metadata: json.RawMessage(`{"a":`)}}
	got := (&Queue{maxChunk: 1 << 20}).chunk("o", "b", arts)
	if len(got) != 1 || got[0] != nil {
		t.Fatalf("%q", got)
	}
}

// BenchmarkChunk encodes the messages of the real lines with chunk, and
// with json.Marshal as the queue did before appendEnvelope.
func BenchmarkChunk(b *testing.B) {
	arts := datasetArtifacts(b)
	size := 0
	for _, a := range arts {
		size += len(a.Raw)
	}
	q := &Queue{maxChunk: 1 << 40} // one message, as marshalChunk writes
	for _, enc := range []struct {
		name string
		enc  func() int
	}{
		{"append", func() int { return len(q.chunk("org-1", "batch-1", arts)) }},
		{"json.Marshal", func() int { return len(marshalChunk("org-1", "batch-1", arts)) }},
	} {
		b.Run(enc.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				enc.enc()
			}
		})
	}
}
