package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The lines these tests post are generated in the shapes of the real
// sensors' logs of testdata/realsensors (Suricata 6.0.10's EVE alerts,
// OpenSSH 9.2's auth.log through rsyslog), with documentation addresses
// and real Emerging Threats signatures (names, sids, EVE severities from
// their classtypes): they are not captured lines.

// eveAlert returns an EVE alert of sid/sig (EVE severity sev) from src to
// 203.0.113.10, at at.
func eveAlert(at time.Time, src string, sid int, sig, category string, sev int) map[string]any {
	stamp := at.UTC().Format("2006-01-02T15:04:05.000000+0000")
	return map[string]any{"source": "suricata", "timestamp": ts(at), "raw": fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"event_type":"alert",`+
		`"src_ip":"%s","src_port":%d,"dest_ip":"203.0.113.10","dest_port":22,"proto":"TCP","pkt_src":"wire/pcap",`+
		`"alert":{"action":"allowed","gid":1,"signature_id":%d,"rev":20,"signature":"%s","category":"%s","severity":%d},`+
		`"direction":"to_server","flow":{"pkts_toserver":1,"pkts_toclient":0,"bytes_toserver":74,"bytes_toclient":0,"start":"%s"}}`,
		stamp, at.UnixNano()%1e15, src, 40000+at.Nanosecond()%20000, sid, sig, category, sev, stamp)}
}

// failedPassword returns sshd's line of a failed password for root from
// src, at at.
func failedPassword(at time.Time, src string, pid int) map[string]any {
	return map[string]any{"source": "auth", "timestamp": ts(at),
		"raw": fmt.Sprintf("%s bookworm-lab sshd[%d]: Failed password for root from %s port 45776 ssh2", at.UTC().Format(time.Stamp), pid, src)}
}

const (
	sshScanSID = 2001219
	sshScanSig = "ET SCAN Potential SSH Scan"
	reconCat   = "Attempted Information Leak"
)

func TestRollupSettingsValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:manage")
	d := must(t, call(t, e, "GET", "/v1/enrichment-settings", tok, nil), http.StatusOK).data()
	if d["rollup_threshold"] != 20.0 || d["rollup_window_minutes"] != 1440.0 || d["risk_threshold"] != 100.0 || d["risk_detections"] != 3.0 ||
		!eqStrings(strs(d["rollup_severities"]), []string{"low", "medium"}) {
		t.Errorf("defaults %v: want threshold 20, 1440 minutes, low and medium, risk 100, 3 detections", d)
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"rollup_threshold": 1}, "rollup_threshold"},
		{map[string]any{"rollup_threshold": -1}, "rollup_threshold"},
		{map[string]any{"rollup_threshold": 1_000_001}, "rollup_threshold"},
		{map[string]any{"rollup_window_minutes": 0}, "rollup_window_minutes"},
		{map[string]any{"rollup_window_minutes": 10081}, "rollup_window_minutes"},
		{map[string]any{"rollup_severities": []string{"low", "severe"}}, "rollup_severities[1]"},
		{map[string]any{"rollup_severities": []string{"low", "low"}}, "rollup_severities[1]"},
		{map[string]any{"rollup_severities": []string{"low", "medium", "high", "critical", "low"}}, "rollup_severities"},
		{map[string]any{"risk_threshold": 0}, "risk_threshold"},
		{map[string]any{"risk_detections": 1}, "risk_detections"},
		{map[string]any{"risk_detections": 101}, "risk_detections"},
		{map[string]any{"rollup_threshold": "20"}, "rollup_threshold"},
		{map[string]any{"rollup_threshold": 2.5}, "rollup_threshold"},
		{map[string]any{"rollup_window_minutes": -60}, "rollup_window_minutes"},
		{map[string]any{"risk_threshold": 1_000_001}, "risk_threshold"},
		{map[string]any{"risk_threshold": -1}, "risk_threshold"},
		{map[string]any{"risk_detections": 0}, "risk_detections"},
		{map[string]any{"rollup_severities": "low"}, "rollup_severities"},
		{map[string]any{"rollup_severities": []any{"low", 2}}, "rollup_severities"},
		{map[string]any{"rollup_severities": []string{"LOW"}}, "rollup_severities[0]"},
	} {
		wantError(t, call(t, e, "PUT", "/v1/enrichment-settings", tok, c.body), http.StatusBadRequest, c.field)
	}
	d = must(t, call(t, e, "PUT", "/v1/enrichment-settings", tok, map[string]any{"rollup_threshold": 0, "rollup_window_minutes": 60,
		"rollup_severities": []string{"low"}, "risk_threshold": 250, "risk_detections": 2}), http.StatusOK).data()
	if d["rollup_threshold"] != 0.0 || d["rollup_window_minutes"] != 60.0 || !eqStrings(strs(d["rollup_severities"]), []string{"low"}) ||
		d["risk_threshold"] != 250.0 || d["risk_detections"] != 2.0 || d["rate_limit"] != 60.0 {
		t.Errorf("after PUT: %v", d)
	}
}

// TestRollupsThroughAPI: scanners tripping one signature make one
// incident past the org's threshold, its sources listed heaviest first
// by pages; the scanner that also brute-forces SSH, and the one that
// trips a severity-1 alert, have incidents of their own that say why.
func TestRollupsThroughAPI(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "artifacts:write", "incidents:read")
	must(t, call(t, e, "PUT", "/v1/enrichment-settings", tok, map[string]any{"rollup_threshold": 3}), http.StatusOK)
	now := time.Now().UTC().Truncate(time.Second)
	scanner := func(i int) string { return fmt.Sprint("198.51.100.", i) }
	// Scanner 1 sends three alerts, the others one each.
	var lines []map[string]any
	for i := 1; i <= 6; i++ {
		n := 1
		if i == 1 {
			n = 3
		}
		for k := range n {
			lines = append(lines, eveAlert(now.Add(time.Duration(10*i+k)*time.Second), scanner(i), sshScanSID, sshScanSig, reconCat, 2))
		}
	}
	for _, l := range lines {
		postArtifacts(t, e, tok, l) // one at a time: the roll-up forms at the third scanner
	}
	live := openIncidents(t, e, tok)
	if len(live) != 1 {
		t.Fatalf("incidents not merged away: %v, want the roll-up alone", live)
	}
	var id string
	for k, title := range live {
		id = k
		if title != "Suricata: "+sshScanSig+" from 6 sources" {
			t.Errorf("roll-up titled %q", title)
		}
	}
	inc := must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
	r, _ := inc["rollup"].(map[string]any)
	if r["sources"] != 6.0 || r["count"] != 8.0 || r["detector"] != "suricata_alert" || inc["artifact_count"] != 8.0 || inc["severity"] != "medium" {
		t.Errorf("roll-up %v, %v artifacts, %v: want 6 sources counting 8 alerts, medium", r, inc["artifact_count"], inc["severity"])
	}
	nodes := inc["nodes"].([]any)
	if n := nodes[0].(map[string]any); n["value"] != scanner(1) || n["count"] != 3.0 || n["key"] != false {
		t.Errorf("first node %v: want the heaviest source, %s with 3, context", n, scanner(1))
	}
	page := must(t, call(t, e, "GET", "/v1/incidents/"+id+"/sources?limit=2&offset=1", tok, nil), http.StatusOK)
	srcs := items(t, page, "sources")
	if total(t, page) != 6 || len(srcs) != 2 || srcs[0]["count"] != 1.0 || srcs[0]["node"].(map[string]any)["type"] != "IP" {
		t.Errorf("sources page %s: want 2 of 6, after the heaviest", page.Raw)
	}
	wantError(t, call(t, e, "GET", "/v1/incidents/"+id+"/sources?limit=0", tok, nil), http.StatusBadRequest, "limit")
	wantError(t, call(t, e, "GET", "/v1/incidents/not-a-uuid/sources", tok, nil), http.StatusBadRequest, "id")
	wantError(t, call(t, e, "GET", "/v1/incidents/"+id+"/sources", e.token("org-b", "incidents:read"), nil), http.StatusNotFound, "")

	// Scanner 2 brute-forces SSH: an incident of its own, with its scan.
	var bf []map[string]any
	for k := range 6 {
		bf = append(bf, failedPassword(now.Add(time.Duration(100+k)*time.Second), scanner(2), 30531))
	}
	postArtifacts(t, e, tok, bf...)
	// Scanner 3 trips a severity-1 signature.
	postArtifacts(t, e, tok, eveAlert(now.Add(200*time.Second), scanner(3), 2034649, "ET EXPLOIT Apache log4j RCE Attempt (tcp ldap) (CVE-2021-44228)",
		"Attempted Administrator Privilege Gain", 1))
	live = openIncidents(t, e, tok)
	if len(live) != 3 || live[id] != "Suricata: "+sshScanSig+" from 4 sources" {
		t.Fatalf("incidents %v: want the roll-up of 4 sources and one incident each for the brute force and the exploit", live)
	}
	for k := range live {
		if k == id {
			continue
		}
		inc := must(t, call(t, e, "GET", "/v1/incidents/"+k, tok, nil), http.StatusOK).data()
		why, _ := inc["raised_by"].(map[string]any)
		entity, _ := why["entity"].(map[string]any)
		if why["reason"] != "risk" || entity["type"] != "IP" || !eqStrings(strs(why["rollups"]), []string{id}) || len(inc["observations"].([]any)) != 2 {
			t.Errorf("incident %q raised_by %v, %d observations: want risk of its source, leaving the roll-up, its scan with it",
				inc["title"], why, len(inc["observations"].([]any)))
		}
		if v := entity["value"]; v != scanner(2) && v != scanner(3) {
			t.Errorf("raised for %v", v)
		}
	}
	page = must(t, call(t, e, "GET", "/v1/incidents/"+id+"/sources?limit=10", tok, nil), http.StatusOK)
	if total(t, page) != 4 || len(items(t, page, "sources")) != 4 {
		t.Errorf("sources after two left: %s", page.Raw)
	}
}

// openIncidents returns the titles of the org's incidents that were not
// merged into another, by id.
func openIncidents(t testing.TB, e *env, tok string) map[string]string {
	t.Helper()
	d := must(t, call(t, e, "GET", "/v1/incidents?limit=1000", tok, nil), http.StatusOK).data()
	out := map[string]string{}
	for _, x := range d["incidents"].([]any) {
		i := x.(map[string]any)
		if i["merged_into"] == nil {
			out[i["id"].(string)] = i["title"].(string)
		}
	}
	return out
}

// TestRollupsOnByDefault: with the settings an org starts with, the 21st
// scanner of one signature within the day rolls the detection up: the
// queue holds one incident, not 25.
func TestRollupsOnByDefault(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:write", "incidents:read")
	now := time.Now().UTC().Truncate(time.Second)
	for i := 1; i <= 25; i++ {
		postArtifacts(t, e, tok, eveAlert(now.Add(time.Duration(i)*time.Second), fmt.Sprint("198.51.100.", i), sshScanSID, sshScanSig, reconCat, 2))
	}
	live := openIncidents(t, e, tok)
	if len(live) != 1 {
		t.Fatalf("incidents %v: want one roll-up of the 25 scanners", live)
	}
	for _, title := range live {
		if title != "Suricata: "+sshScanSig+" from 25 sources" {
			t.Errorf("roll-up titled %q", title)
		}
	}
}
