package parse

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/evtx"
)

// TestKerberosGuessCountedOnce: a domain controller that audits both logs
// a wrong password twice, as a 4771 and as a 4768 with status 0x18; the
// guess is counted once, on the 4771. An unknown account (0x6) logs a
// 4768 only and counts there; a refused service ticket (4769) is no guess.
// The recordings hold no 4768 with 0x18, so each case is the real spray
// recording's 4768 (or 4771) with its Status set to the code under test;
// nothing else of the record is changed.
func TestKerberosGuessCountedOnce(t *testing.T) {
	docs, err := evtx.Documents(filepath.Join(datasetDir, "windows", "evtx", "Credential Access", "kerberos_pwd_spray_4771.evtx"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	for _, d := range docs {
		var doc map[string]any
		if err := json.Unmarshal(d, &doc); err != nil {
			t.Fatal(err)
		}
		id := doc["winlog"].(map[string]any)["event_id"].(string)
		if byID[id] == nil {
			byID[id] = doc
		}
	}
	tests := []struct {
		id, status string
		attempt    bool
	}{
		{"4771", "0x18", true},  // bad password: the guess
		{"4768", "0x18", false}, // the same guess's ticket request
		{"4768", "0x6", true},   // unknown account: no 4771
		{"4768", "0x12", true},  // account disabled or locked out
		{"4768", "0x0", false},  // a ticket granted
		{"4769", "0x6", false},  // a service ticket refused
	}
	for _, tc := range tests {
		t.Run(tc.id+"/"+tc.status, func(t *testing.T) {
			base := byID[tc.id]
			if base == nil {
				base = byID["4768"] // 4769: the 4768 record as a service ticket request
			}
			var doc map[string]any
			b, _ := json.Marshal(base)
			_ = json.Unmarshal(b, &doc)
			w := doc["winlog"].(map[string]any)
			w["event_id"] = tc.id
			w["event_data"].(map[string]any)["Status"] = tc.status
			b, _ = json.Marshal(doc)
			res := Parse("windows", b, time.Now())
			if got := res.Event["vigil.attempt.role"] == "attempt"; got != tc.attempt {
				t.Errorf("attempt %v, want %v (%v)", got, tc.attempt, res.Event["event.reason"])
			}
		})
	}
}
