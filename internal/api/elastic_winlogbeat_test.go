package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestElasticWinlogbeat posts the real Winlogbeat documents of the datasets
// (what Winlogbeat sends for real Security, Sysmon and PowerShell events)
// as Winlogbeat's default output does: create actions into its versioned
// index, through /_bulk with its ingest pipeline named. Each is stored
// whole, as source windows, at its event's time, and found by a search on
// its event data.
func TestElasticWinlogbeat(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	k := createKey(t, e, admin, "winlogbeat")
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", "windows", "winlogbeat", "*", "collection", "*.json"))
	if len(files) == 0 {
		t.Fatal("no Winlogbeat documents in ../shared/datasets/windows/winlogbeat")
	}
	var body bytes.Buffer
	var docs []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ds []map[string]any
		if err := json.Unmarshal(b, &ds); err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			body.WriteString(`{"create":{"_index":"winlogbeat-8.4.0"}}` + "\n")
			j, _ := json.Marshal(d)
			body.Write(j)
			body.WriteByte('\n')
			docs = append(docs, d)
		}
	}
	r := must(t, bulk(t, e, "/_bulk?pipeline=winlogbeat-8.4.0-routing", "ApiKey "+k["encoded"].(string), body.Bytes()), http.StatusOK)
	items := bulkItems(t, r)
	if r.Body["errors"] != false || len(items) != len(docs) {
		t.Fatalf("errors %v, %d items for %d documents", r.Body["errors"], len(items), len(docs))
	}
	if n := artifactTotal(t, e, "org-a", "windows"); n != len(docs) {
		t.Errorf("%d windows artifacts, want %d", n, len(docs))
	}
	for i, it := range items {
		a := must(t, call(t, e, "GET", "/v1/artifacts/"+it["_id"].(string), admin, nil), http.StatusOK).data()
		var stored map[string]any
		if err := json.Unmarshal([]byte(a["raw"].(string)), &stored); err != nil {
			t.Fatalf("item %d: raw is not the document: %v", i, err)
		}
		if stored["winlog"] == nil || a["source"] != "windows" {
			t.Errorf("item %d: source %v, raw %.100v", i, a["source"], a["raw"])
		}
		want, _ := time.Parse(time.RFC3339Nano, docs[i]["@timestamp"].(string))
		if got, _ := time.Parse(time.RFC3339Nano, a["timestamp"].(string)); !got.Equal(want) {
			t.Errorf("item %d: timestamp %v, the event's %v", i, a["timestamp"], docs[i]["@timestamp"])
		}
	}
	// A user name of a 4624 in its event data is found.
	res := must(t, call(t, e, "GET", "/v1/artifacts?source=windows&query=vagrant", admin, nil), http.StatusOK)
	if total(t, res) == 0 {
		t.Error("no windows artifact found for vagrant")
	}
}
