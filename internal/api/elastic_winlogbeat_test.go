package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// TestElasticWinlogbeatBadDocuments: a real Winlogbeat document (Sysmon
// process creation) posted as Winlogbeat does, then mangled as a broken
// shipper or a hostile host could send it: no event id, event data that
// is no object, a number where a string is due, 10,000 data fields, a
// 1 MiB command line. Each item is answered: stored (the raw kept whole)
// or refused with a reason; none is dropped silently, no 5xx.
func TestElasticWinlogbeatBadDocuments(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	k := createKey(t, e, admin, "winlogbeat")
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "datasets", "windows", "winlogbeat", "sysmon", "collection", "sysmon-12-processcreate.evtx.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ds []map[string]any
	if err := json.Unmarshal(b, &ds); err != nil || len(ds) == 0 {
		t.Fatalf("%v, %d documents", err, len(ds))
	}
	base, _ := json.Marshal(ds[0])
	variant := func(change func(w, data map[string]any)) map[string]any {
		var d map[string]any
		_ = json.Unmarshal(base, &d)
		w := d["winlog"].(map[string]any)
		data, _ := w["event_data"].(map[string]any)
		change(w, data)
		return d
	}
	docs := []map[string]any{
		variant(func(w, _ map[string]any) { delete(w, "event_id") }),
		variant(func(w, _ map[string]any) { w["event_data"] = "CommandLine=x" }),
		variant(func(w, data map[string]any) { w["event_id"] = 1; data["ProcessId"] = map[string]any{"a": 1} }),
		variant(func(_, data map[string]any) {
			for i := 0; i < 10000; i++ {
				data[fmt.Sprintf("Field%d", i)] = "x"
			}
		}),
		variant(func(_, data map[string]any) { data["CommandLine"] = strings.Repeat("A", 1<<20) }),
	}
	var body bytes.Buffer
	for _, d := range docs {
		body.WriteString(`{"create":{"_index":"winlogbeat-8.4.0"}}` + "\n")
		j, _ := json.Marshal(d)
		body.Write(j)
		body.WriteByte('\n')
	}
	r := bulk(t, e, "/_bulk?pipeline=winlogbeat-8.4.0-routing", "ApiKey "+k["encoded"].(string), body.Bytes())
	if r.Status >= 500 {
		t.Fatalf("status %d: %.300s", r.Status, r.Raw)
	}
	if r.Status != http.StatusOK {
		// The whole request refused: it must say why.
		if r.Status < 400 || len(r.Raw) == 0 {
			t.Fatalf("status %d without a reason", r.Status)
		}
		t.Logf("refused whole: %d %.200s", r.Status, r.Raw)
		return
	}
	items := bulkItems(t, r)
	if len(items) != len(docs) {
		t.Fatalf("%d items for %d documents", len(items), len(docs))
	}
	stored := 0
	for i, it := range items {
		status, _ := it["status"].(float64)
		switch {
		case status == http.StatusCreated:
			stored++
			a := must(t, call(t, e, "GET", "/v1/artifacts/"+it["_id"].(string), admin, nil), http.StatusOK).data()
			if a["source"] != "windows" {
				t.Errorf("item %d stored as %v", i, a["source"])
			}
			if raw, _ := a["raw"].(string); i == 4 && !strings.Contains(raw, strings.Repeat("A", 1<<20)) {
				t.Errorf("item %d: the 1 MiB command line is not kept whole in the raw (%d bytes)", i, len(raw))
			}
		case status >= 400 && status < 500:
			if it["error"] == nil {
				t.Errorf("item %d refused (%v) without a reason", i, status)
			}
		default:
			t.Errorf("item %d: status %v (%v)", i, status, it)
		}
	}
	if n := artifactTotal(t, e, "org-a", "windows"); n != stored {
		t.Errorf("%d windows artifacts, %d items answered stored", n, stored)
	}
}
