package evtx

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// winlogbeatDir holds real Winlogbeat documents (the beats module tests'
// golden files) for real Security, Sysmon and PowerShell events.
const winlogbeatDir = "../../../shared/datasets/windows/winlogbeat"

// TestWinlogbeatShape renders every record of the recordings and, for each
// channel and event ID that real Winlogbeat output also holds, checks that
// the document uses Winlogbeat's names: every key this reader writes is one
// Winlogbeat writes for that event, and event_data values are strings. So a search or a parser finds an event read
// from a file as it finds the same event sent by Winlogbeat.
func TestWinlogbeatShape(t *testing.T) {
	golden := map[string][]map[string]any{} // "channel id" → documents
	files, _ := filepath.Glob(filepath.Join(winlogbeatDir, "*", "collection", "*.json"))
	if len(files) == 0 {
		t.Fatal("no Winlogbeat documents under " + winlogbeatDir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var docs []map[string]any
		if err := json.Unmarshal(b, &docs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range docs {
			w := d["winlog"].(map[string]any)
			k := w["channel"].(string) + " " + w["event_id"].(string)
			golden[k] = append(golden[k], d)
		}
	}
	compared := 0
	for _, e := range readIndex(t) {
		eachRecord(t, filepath.Join(datasetDir, e.path), func(rec *Record) {
			b, err := rec.Winlogbeat()
			if err != nil {
				t.Fatalf("%s record %d: %v", e.path, rec.ID, err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			w := doc["winlog"].(map[string]any)
			refs := golden[w["channel"].(string)+" "+w["event_id"].(string)]
			if len(refs) == 0 {
				return
			}
			compared++
			ref := refs[0]
			for _, r := range refs {
				if r["winlog"].(map[string]any)["version"] == w["version"] {
					ref = r
				}
			}
			rw := ref["winlog"].(map[string]any)
			for _, k := range keys(doc) {
				if _, ok := ref[k]; !ok {
					t.Errorf("%s record %d: top-level %q, which Winlogbeat does not write", e.path, rec.ID, k)
				}
			}
			for _, k := range keys(w) {
				if _, ok := rw[k]; !ok && k != "user" && k != "activity_id" && k != "keywords" {
					t.Errorf("%s record %d: winlog.%s, which Winlogbeat does not write for %v", e.path, rec.ID, k, rw["event_id"])
				}
			}
			// Winlogbeat copies every Data item as a string, whatever the
			// event's version holds.
			if ed, ok := w["event_data"].(map[string]any); ok {
				for k, v := range ed {
					if _, ok := v.(string); !ok {
						t.Errorf("%s record %d: event_data.%s = %v, not a string", e.path, rec.ID, k, v)
					}
				}
			}
		})
	}
	if compared < 100 {
		t.Errorf("compared only %d records with Winlogbeat's documents", compared)
	}
}

// TestWinlogbeatValues checks the values of one real record of each kind
// against what the file holds: a Security event with EventData, one with
// UserData, and a Sysmon process creation.
func TestWinlogbeatValues(t *testing.T) {
	var docs []map[string]any
	eachRecord(t, filepath.Join(datasetDir, "Credential Access/kerberos_pwd_spray_4771.evtx"), func(rec *Record) {
		b, err := rec.Winlogbeat()
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	})
	byID := map[string][]map[string]any{}
	for _, d := range docs {
		id := d["event"].(map[string]any)["code"].(string)
		byID[id] = append(byID[id], d)
	}
	if len(byID["4771"]) != 2 || len(byID["1102"]) != 1 || len(byID["4768"]) != 9 {
		t.Fatalf("events by id: 4771×%d 1102×%d 4768×%d", len(byID["4771"]), len(byID["1102"]), len(byID["4768"]))
	}
	for _, d := range byID["4771"] {
		w := d["winlog"].(map[string]any)
		ed := w["event_data"].(map[string]any)
		if d["event"].(map[string]any)["outcome"] != "failure" || w["channel"] != "Security" ||
			ed["IpAddress"] == nil || ed["TargetUserName"] == nil || ed["Status"] == nil {
			t.Errorf("4771 rendered as %v", d)
		}
		// The provider's GUID, a fixed value of Windows, read from a GUID
		// value: its first three groups are stored little-endian.
		if w["provider_guid"] != "{54849625-5478-4994-A5BA-3E3B0328C30D}" {
			t.Errorf("4771 provider_guid = %v", w["provider_guid"])
		}
		if !strings.HasSuffix(d["@timestamp"].(string), "Z") || d["host"].(map[string]any)["name"] != w["computer_name"] {
			t.Errorf("4771 time or host: %v", d)
		}
	}
	ud := byID["1102"][0]["winlog"].(map[string]any)["user_data"].(map[string]any)
	if ud["xml_name"] != "LogFileCleared" || ud["SubjectUserName"] == "" {
		t.Errorf("1102 user_data = %v", ud)
	}
}

func eachRecord(t *testing.T, path string, fn func(*Record)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := r.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("%s: %v", path, err)
			}
			return
		}
		fn(rec)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
