package queue

import (
	"encoding/json"
	"testing"
)

func BenchmarkZZUnmarshal(b *testing.B) {
	arts := datasetArtifacts(b)
	msgs := (&Queue{maxChunk: 1 << 20}).chunk("org-1", "batch-1", arts)
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			var env envelope
			if err := json.Unmarshal(m, &env); err != nil {
				b.Fatal(err)
			}
		}
	}
}
