package api_test

import (
	"strings"
	"testing"
)

// TestSigmaLocalSourcesPerHost: a Sigma rule's matches from 127.0.0.1
// on two hosts are two actors, as the built-in detectors' are
// (docs/detections.md, Local sources): two observations, "from 127.0.0.1
// on HOST", in two incidents, not one observation of 2 matches from
// 127.0.0.1. The line is fail2ban's real sshd test line; the second
// host's is the same line with only its host field changed.
func TestSigmaLocalSourcesPerHost(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-local", "signals:manage", "incidents:read", "observations:read")
	postRule(t, e, tok, "title: SSH failed password\nlogsource:\n    product: linux\n    service: sshd\n"+
		"detection:\n    k:\n        - 'Failed password'\n    condition: k\n")
	var loop map[string]any
	for _, l := range datasetLines(t, "auth/fail2ban-sshd.log", "auth", "") {
		if strings.Contains(l["raw"].(string), "Failed password for dan from 127.0.0.1 port 45416") {
			loop = l
		}
	}
	if loop == nil {
		t.Fatal("fail2ban-sshd.log: the 127.0.0.1 line is missing")
	}
	delete(loop, "timestamp") // the line's own time
	raw := loop["raw"].(string)
	host := strings.Fields(raw)[3] // "spaceman"
	other := map[string]any{"source": "auth", "raw": strings.Replace(raw, " "+host+" ", " db-02 ", 1)}
	postArtifacts(t, e, tok, loop, other)

	obs := sigmaObservations(t, e, tok)
	if len(obs) != 2 {
		t.Fatalf("%d Sigma observations, want one per host: %v", len(obs), obs)
	}
	froms, incidents := map[string]bool{}, map[any]bool{}
	for _, o := range obs {
		desc := o["description"].(string)
		for _, h := range []string{host, "db-02"} {
			if strings.Contains(desc, "1 match from 127.0.0.1 on "+h+",") {
				froms[h] = true
			}
		}
		incidents[o["incident_id"]] = true
	}
	if len(froms) != 2 || len(incidents) != 2 || incidents[nil] {
		t.Errorf("observations %v: want one from 127.0.0.1 on each host, in two incidents", obs)
	}
}
