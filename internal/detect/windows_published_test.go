package detect_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/detect"
)

// recordFields is what the tests of this file read of a recording's
// document: its id, time and event data.
type recordFields struct {
	Time   time.Time `json:"@timestamp"`
	Winlog struct {
		Channel  string            `json:"channel"`
		EventID  string            `json:"event_id"`
		RecordID int               `json:"record_id"`
		Computer string            `json:"computer_name"`
		Data     map[string]string `json:"event_data"`
	} `json:"winlog"`
}

func readFields(tb testing.TB, docs [][]byte) []recordFields {
	tb.Helper()
	out := make([]recordFields, len(docs))
	for i, d := range docs {
		if err := json.Unmarshal(d, &out[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// TestWindowsDefenderDetections: Chainsaw's README shows its hunt over
// EVTX-ATTACK-SAMPLES reporting two records of this recording (1116
// record 37, 1117 record 106) as "Windows Defender" detections; Vigil
// read the file and found nothing. Every malware detection of the file
// (its 1116 records: 1117 logs the action taken on one of them) is now
// one observation on the host that says how many, which threats, by
// whom and when — counted here from the records themselves.
func TestWindowsDefenderDetections(t *testing.T) {
	docs := evtxRecords(t, "AutomatedTestingTools/WinDefender_Events_1117_1116_AtomicRedTeam.evtx")
	detections, threats := 0, map[string]bool{}
	var first, last time.Time
	var user, host string
	for _, r := range readFields(t, docs) {
		if r.Winlog.EventID != "1116" {
			continue
		}
		detections++
		threats[r.Winlog.Data["Threat Name"]] = true
		if first.IsZero() || r.Time.Before(first) {
			first = r.Time
		}
		if r.Time.After(last) {
			last = r.Time
		}
		user, host = strings.ToLower(r.Winlog.Data["Detection User"]), strings.ToLower(r.Winlog.Computer)
	}
	if detections == 0 {
		t.Fatal("no 1116 in the recording")
	}
	e := newEnv(t, detect.Config{})
	e.process(t, "acme", 50, windowsArtifacts(docs))
	incs := e.incidents(t, "acme")
	found := titled(incs, "Malware detected by Microsoft Defender: "+host)
	if len(found) != 1 || len(incs) != 1 {
		t.Fatalf("incidents %v, want one Defender incident on %s", incidentTitles(incs), host)
	}
	if !found[0].has(user) || !found[0].has(host) {
		t.Errorf("incident nodes %v, want the user %s and the host %s", found[0].nodes, user, host)
	}
	desc := found[0].Observations[0].Description
	want := fmt.Sprintf("Malware detected by Microsoft Defender: %d events (", detections)
	if !strings.HasPrefix(desc, want) {
		t.Errorf("observation %q, want it to start %q", desc, want)
	}
	for th := range threats {
		if !strings.Contains(desc, th) {
			t.Errorf("observation %q does not name %s", desc, th)
		}
	}
	when := first.UTC().Format(time.RFC3339) + " – " + last.UTC().Format(time.RFC3339)
	if !strings.Contains(desc, " by "+user) || !strings.HasSuffix(desc, when) {
		t.Errorf("observation %q, want by %s, %s", desc, user, when)
	}
}
