package detect_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
)

// TestScenarioEngineEventsAndTitle is an incident seen on a real sensor:
// a web scanner's 7 severity-1 alerts among 311 "SURICATA TCPv4 invalid
// checksum" events (checksum offload on the capture host), which had
// named it. By default the
// engine events count for nothing, and stay searchable; an org that
// promotes them gets them in the incident, which is still named and rated
// after the attack.
func TestScenarioEngineEventsAndTitle(t *testing.T) {
	src, dst := "198.51.100.77", "10.0.0.80"
	var lines []string
	for i := range 311 {
		lines = append(lines, eveAlert(t0.Add(time.Duration(i)*100*time.Millisecond), src, dst, 2200074,
			"SURICATA TCPv4 invalid checksum", "Generic Protocol Command Decode", 3))
	}
	attacks := []string{"ET SCAN Nikto Web App Scan in Progress", "ET WEB_SERVER /etc/passwd Detected in URI"}
	for i := range 7 {
		sid := 2002677 + i%2
		lines = append(lines, eveAlert(t0.Add(40*time.Second+time.Duration(i)*time.Second), src, dst, sid,
			attacks[i%2], "Web Application Attack", 1))
	}
	for _, tc := range []struct {
		name      string
		promote   bool
		artifacts int
		types     []string
	}{
		{"default", false, 7, []string{"network", "network"}},
		{"promoted", true, 318, []string{"network", "network", "network"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, detect.Config{})
			org := "org-" + tc.name
			if tc.promote {
				set, err := e.store.EnrichmentSettings(t.Context(), org)
				if err != nil {
					t.Fatal(err)
				}
				set.SuricataEngineEvents = true
				if err := e.store.PutEnrichmentSettings(t.Context(), org, set); err != nil {
					t.Fatal(err)
				}
			}
			// Checksum noise first: promoted, it opens the incident.
			e.process(t, org, 100, artifacts("suricata", lines...))
			incs := e.incidents(t, org)
			if len(incs) != 1 {
				t.Fatalf("%d incidents, want 1", len(incs))
			}
			inc := incs[0]
			if !strings.HasPrefix(inc.Title, "Suricata: ET ") || !strings.HasSuffix(inc.Title, " from "+src+" to "+dst) ||
				inc.Severity != vigil.SeverityHigh {
				t.Errorf("incident %q %s, want named after a web attack, high", inc.Title, inc.Severity)
			}
			if inc.ArtifactCount != tc.artifacts || len(inc.types) != len(tc.types) {
				t.Errorf("incident: %d artifacts, observations %v; want %d and %v", inc.ArtifactCount, inc.types, tc.artifacts, tc.types)
			}
			// The engine events are stored and searchable either way.
			_, n, err := e.store.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: `"invalid checksum"`, Page: vigil.Page{Limit: 1}})
			if err != nil || n != 311 {
				t.Errorf("search for the checksum events: %d, %v; want 311", n, err)
			}
		})
	}
}

// TestRealSensorsSuricataTitle: on the real capture of the corpus (a
// scanner's 7 severity-1 alerts among 120 checksum events), the attacker's
// incident is named after the attack, high, whether or not the org
// promotes engine events; promoted, the checksum events join it (and
// open incidents of their own for the other hosts, named after them).
func TestRealSensorsSuricataTitle(t *testing.T) {
	lines := readCorpus(t, filepath.Join("..", "..", "testdata", "realsensors", "cases", "suricata_net", "eve.json"))
	for _, promote := range []bool{false, true} {
		e := newEnv(t, detect.Config{})
		if promote {
			set, err := e.store.EnrichmentSettings(t.Context(), "org")
			if err != nil {
				t.Fatal(err)
			}
			set.SuricataEngineEvents = true
			if err := e.store.PutEnrichmentSettings(t.Context(), "org", set); err != nil {
				t.Fatal(err)
			}
		}
		e.process(t, "org", 100, artifacts("suricata", lines...))
		incs := e.incidents(t, "org")
		// The attacker's incident: the one its address is a key of (it
		// is also context of the server's replies, promoted).
		var attacker []incident
		for _, i := range incs {
			if i.has("203.0.113.66") && !strings.Contains(i.Title, "from 203.0.113.10") {
				attacker = append(attacker, i)
			}
		}
		if len(attacker) != 1 || !strings.HasPrefix(attacker[0].Title, "Suricata: LAB ") || attacker[0].Severity != vigil.SeverityHigh {
			for _, i := range incs {
				t.Logf("incident %q %s %d artifacts", i.Title, i.Severity, i.ArtifactCount)
			}
			t.Fatalf("promote=%v: the attacker's incidents %d, want one named after a LAB signature, high", promote, len(attacker))
		}
		if !promote && (len(incs) != 1 || attacker[0].ArtifactCount != 7) {
			t.Errorf("by default: %d incidents, the attacker's with %d artifacts; want 1 with the 7 alerts", len(incs), attacker[0].ArtifactCount)
		}
		if promote && attacker[0].ArtifactCount <= 7 {
			t.Errorf("promoted: the attacker's incident has %d artifacts, want its checksum events too", attacker[0].ArtifactCount)
		}
	}
}
