package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestRawLiteralsThroughTheQueue: the API hands the queue a raw line as
// the literal the client sent when that decodes to it unaltered
// (vigil.Artifact.RawJSON); real Winlogbeat documents, full of escapes,
// and lines that must be altered or hold NUL, controls, HTML characters
// and characters outside the BMP, are stored as before, through
// JetStream and through the direct pipeline.
func TestRawLiteralsThroughTheQueue(t *testing.T) {
	files, _ := filepath.Glob("../../../shared/datasets/windows/winlogbeat/*/*/*.json")
	var raws []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var docs []json.RawMessage
		if err := json.Unmarshal(b, &docs); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, d := range docs[:min(len(docs), 5)] {
			raws = append(raws, string(d))
		}
	}
	if len(raws) < 20 {
		t.Fatalf("%d Winlogbeat documents under ../shared/datasets", len(raws))
	}
	// Sent as encoding/json writes them (\u003c for <, \u0026 for &) and
	// as the literals below write them.
	body := `{"artifacts":[{"source":"s","raw":"a\u0000b\u0001\t\n\"\\\/ \u003cb\u003e\u0026 \ud83d\ude00 \u2028 caf\u00e9"},` +
		`{"source":"s","raw":"lone \ud800 surrogate"},` + "{\"source\":\"s\",\"raw\":\"caf\xe9 latin-1\"}]}"
	want := []string{"a\x00b\x01\t\n\"\\/ <b>& 😀 \u2028 café", "lone \ufffd surrogate", "caf\ufffd latin-1"}
	for _, queue := range []string{"jetstream", "direct"} {
		t.Run(queue, func(t *testing.T) {
			if queue == "jetstream" {
				t.Setenv("VIGIL_TEST_API_QUEUE", "jetstream")
			}
			e := newEnv(t)
			tok := e.token("org-a", "signals:write", "signals:read")
			arts := make([]map[string]any, len(raws))
			for i, r := range raws {
				arts[i] = map[string]any{"source": "windows", "raw": r}
			}
			ids := strs(postArtifacts(t, e, tok, arts...)["ids"])
			d := must(t, call(t, e, "POST", "/v1/artifacts", tok, body), http.StatusAccepted).data()
			ids = append(ids, strs(d["ids"])...)
			all := append(append([]string(nil), raws...), want...)
			if len(ids) != len(all) {
				t.Fatalf("%d ids for %d lines", len(ids), len(all))
			}
			for i, id := range ids {
				got := must(t, call(t, e, "GET", "/v1/artifacts/"+id, tok, nil), http.StatusOK).data()["raw"]
				if got != all[i] {
					t.Errorf("line %d stored as %q, want %q", i, got, all[i])
				}
			}
		})
	}
}
