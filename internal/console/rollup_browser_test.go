package console_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestBrowserRollup: a roll-up and an incident raised from it, in the
// console (browser/rollup.mjs). Sixty scanners trip one Emerging Threats
// scan signature, some more than once, and roll up under the org's
// default settings (20 sources within the day); one of them then
// brute-forces SSH and stands apart. The roll-up's page shows its
// window and its sources, heaviest first with their counts, a page at a
// time; the raised incident's page says why it was raised and links to
// the roll-up it left; the queue marks both.
//
// The lines are generated in the shapes of real sensors' logs
// (Suricata's EVE alert with a real signature, sid and classtype;
// OpenSSH's failed password through rsyslog) with documentation
// addresses: they are not captured lines, as in internal/api's roll-up
// tests.
func TestBrowserRollup(t *testing.T) {
	srv := serveForBrowser(t)
	base := srv.base
	admin := srv.token(time.Hour, "acme", "admin")

	const scanners = 60
	scanner := func(i int) string { return fmt.Sprintf("198.51.%d.%d", 100+i/200, 1+i%200) }
	// alerts of scanner i: a few heavy ones, the rest one to three each.
	alerts := func(i int) int {
		if i < 3 {
			return 9 - 2*i // 9, 7, 5
		}
		return 1 + i%3
	}
	raisedIP := scanner(10)
	now := time.Now().UTC().Truncate(time.Second)
	var arts []map[string]string
	total := 0
	for i := range scanners {
		for k := range alerts(i) {
			at := now.Add(-time.Hour + time.Duration(i*10+k)*time.Second)
			arts = append(arts, eveScanAlert(at, scanner(i)))
			total++
		}
	}
	post(t, base, admin, arts)
	// The raised scanner brute-forces SSH after its scans.
	var bf []map[string]string
	for k := range 6 {
		at := now.Add(-30*time.Minute + time.Duration(k)*time.Second)
		bf = append(bf, map[string]string{"source": "auth", "timestamp": at.Format(time.RFC3339),
			"raw": fmt.Sprintf("%s edge-01 sshd[%d]: Failed password for root from %s port %d ssh2", at.Format(time.Stamp), 30500+k, raisedIP, 45770+k)})
	}
	post(t, base, admin, bf)
	total += len(bf)

	rollup, raised := settleRollup(t, base, admin, total, scanners-1)
	// The heaviest source and its count, as the API pages them.
	var srcs struct {
		Sources []struct {
			Node  struct{ Value string } `json:"node"`
			Count int                    `json:"count"`
		} `json:"sources"`
		Total int `json:"total"`
	}
	apiDo(t, "GET", base+"/v1/incidents/"+rollup+"/sources?limit=1", admin, nil, &srcs)
	if srcs.Total != scanners-1 || len(srcs.Sources) != 1 || srcs.Sources[0].Node.Value != scanner(0) || srcs.Sources[0].Count != alerts(0) {
		t.Fatalf("setup: the roll-up's sources %+v: want %d, %s first with %d", srcs, scanners-1, scanner(0), alerts(0))
	}
	srv.browse("rollup.mjs", 2*time.Minute, "TOKEN_ADMIN="+admin,
		"ROLLUP="+rollup, "RAISED="+raised, "RAISED_IP="+raisedIP, "SOURCES="+strconv.Itoa(scanners-1),
		"HEAVIEST="+scanner(0), "HEAVIEST_COUNT="+strconv.Itoa(alerts(0)))
}

// eveScanAlert is an EVE alert of ET SCAN Potential SSH Scan (sid
// 2001219, classtype attempted-recon: EVE severity 2) from src to
// 203.0.113.10:22 at at.
func eveScanAlert(at time.Time, src string) map[string]string {
	stamp := at.UTC().Format("2006-01-02T15:04:05.000000+0000")
	return map[string]string{"source": "suricata", "timestamp": at.Format(time.RFC3339Nano), "raw": fmt.Sprintf(`{"timestamp":"%s","flow_id":%d,"in_iface":"eth0","event_type":"alert",`+
		`"src_ip":"%s","src_port":%d,"dest_ip":"203.0.113.10","dest_port":22,"proto":"TCP","pkt_src":"wire/pcap",`+
		`"alert":{"action":"allowed","gid":1,"signature_id":2001219,"rev":20,"signature":"ET SCAN Potential SSH Scan","category":"Attempted Information Leak","severity":2},`+
		`"direction":"to_server","flow":{"pkts_toserver":1,"pkts_toclient":0,"bytes_toserver":74,"bytes_toclient":0,"start":"%s"}}`,
		stamp, at.UnixNano()%1e15, src, 40000+at.Second()*300, stamp)}
}

// settleRollup waits until every artifact is stored and the org's queue
// holds a roll-up of sources sources and one incident raised apart from
// it, and returns their ids.
func settleRollup(t *testing.T, base, token string, artifacts, sources int) (rollup, raised string) {
	t.Helper()
	settle(t, 200*time.Millisecond, "the roll-up", func() (string, bool) {
		var incs struct {
			Incidents []struct {
				ID       string                   `json:"id"`
				Rollup   *struct{ Sources int }   `json:"rollup"`
				RaisedBy *struct{ Reason string } `json:"raised_by"`
			} `json:"incidents"`
		}
		stored := storedArtifacts(t, base, token)
		apiDo(t, "GET", base+"/v1/incidents?limit=1000", token, nil, &incs)
		rollup, raised = "", ""
		for _, i := range incs.Incidents {
			switch {
			case i.Rollup != nil && i.Rollup.Sources == sources:
				rollup = i.ID
			case i.RaisedBy != nil:
				raised = i.ID
			}
		}
		return fmt.Sprintf("%d of %d artifacts stored, incidents %+v", stored, artifacts, incs.Incidents),
			stored == artifacts && rollup != "" && raised != "" && len(incs.Incidents) == 2
	})
	return rollup, raised
}
