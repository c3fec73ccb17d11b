package detect

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func alertFields(sid, sig, category string, severity int64, src, dst string) parse.Event {
	return parse.Event{"event.kind": "alert", "suricata.eve.event_type": "alert", "rule.id": sid, "rule.name": sig,
		"rule.category": category, "event.severity": severity, "source.ip": src, "destination.ip": dst}
}

func TestSuricataAlertSignals(t *testing.T) {
	withDomain := alertFields("2024897", "ET MALWARE Win32/Emotet CnC Beacon", "A Network Trojan was detected", 1, "10.0.0.8", "203.0.113.80")
	withDomain["url.domain"] = "Beacon.Example.NET"
	runSignalCases(t, SuricataAlert{}, []signalCase{
		{name: "policy alert", fields: alertFields("2013504", "ET POLICY GNU/Linux APT User-Agent Outbound", "Not Suspicious Traffic", 3, "172.17.0.2", "54.230.202.37"),
			key: "2013504|172.17.0.2", member: "54.230.202.37", nodes: []string{"IP:172.17.0.2*", "IP:54.230.202.37"}},
		{name: "malware: destination is a key", fields: withDomain,
			key: "2024897|10.0.0.8", member: "203.0.113.80", nodes: []string{"IP:10.0.0.8*", "IP:203.0.113.80*", "Domain:beacon.example.net*"}},
		{name: "scan: destination is context", fields: alertFields("2001219", "ET SCAN Potential SSH Scan", "Attempted Information Leak", 2, "192.0.2.44", "10.0.0.5"),
			key: "2001219|192.0.2.44", member: "10.0.0.5", nodes: []string{"IP:192.0.2.44*", "IP:10.0.0.5"}},
		{name: "ipv6 canonical", fields: alertFields("1", "GPL ATTACK_RESPONSE id check returned root", "Potentially Bad Traffic", 2, "2001:DB8::1", "::ffff:10.0.0.1"),
			key: "1|2001:db8::1", member: "10.0.0.1", nodes: []string{"IP:2001:db8::1*", "IP:10.0.0.1"}},
		{name: "no signature id: keyed by name", fields: alertFields("", "LOCAL rule", "", 2, "192.0.2.1", ""),
			key: "LOCAL rule|192.0.2.1", nodes: []string{"IP:192.0.2.1*"}},
		{name: "not an alert", fields: parse.Event{"suricata.eve.event_type": "dns", "event.kind": "event", "source.ip": "192.0.2.1"}},
		{name: "alert without source", fields: alertFields("1", "x", "", 1, "", "10.0.0.1")},
	})
}

func TestAlertTypeAndSeverity(t *testing.T) {
	for _, c := range []struct{ sig, cat, want string }{
		{"ET MALWARE Win32/Emotet CnC Beacon", "A Network Trojan was detected", "malware"},
		{"ET TROJAN Possible Zeus GameOver Connectivity Check", "A Network Trojan was detected", "malware"},
		{"ETPRO TROJAN Win32/Dridex", "", "malware"},
		{"ET CNC Feodo Tracker Reported CnC Server group 1", "", "malware"},
		{"ET INFO Observed DNS Query to .cloud TLD", "Malware Command and Control Activity Detected", "malware"},
		{"ET POLICY Suspicious C2 domain", "Misc activity", "malware"},
		{"ET SCAN Potential SSH Scan", "Attempted Information Leak", "recon"},
		{"ET SCAN NMAP OS Detection Probe", "Detection of a Network Scan", "recon"},
		{"GPL SCAN nmap XMAS", "Attempted Information Leak", "recon"},
		{"ET WEB_SERVER Possible SQL Injection", "Web Application Attack", "network"},
		{"GPL ATTACK_RESPONSE id check returned root", "Potentially Bad Traffic", "network"},
		{"SURICATA HTTP response header invalid", "Generic Protocol Command Decode", "network"},
		{"ET POLICY Outbound connection to a SCANNER service", "Misc activity", "network"},
	} {
		if got := alertType(c.sig, c.cat); got != c.want {
			t.Errorf("alertType(%q, %q) = %s, want %s", c.sig, c.cat, got, c.want)
		}
	}
	for sev, want := range map[int64]string{1: "high", 2: "medium", 3: "low", 4: "low", 255: "low"} {
		if got := alertSeverity(sev); got != want {
			t.Errorf("alertSeverity(%d) = %s, want %s", sev, got, want)
		}
	}
}

func TestSuricataAlertDescribe(t *testing.T) {
	d := SuricataAlert{}
	info := alertInfo{sid: "2013504", signature: "ET POLICY APT User-Agent", category: "Not Suspicious Traffic", severity: 3, typ: "network"}
	w := window(3, []string{"151.101.12.204", "54.230.202.37"},
		vigil.NodeRef{Type: vigil.NodeIP, Value: "172.17.0.2", Key: true}, vigil.NodeRef{Type: vigil.NodeIP, Value: "54.230.202.37"})
	f := d.DescribeContext("2013504|172.17.0.2", info, w)
	if f.Type != "network" || f.Severity != vigil.SeverityLow ||
		f.Title != "Suricata: ET POLICY APT User-Agent from 172.17.0.2 to 54.230.202.37" ||
		!strings.Contains(f.Description, `"ET POLICY APT User-Agent" (sid 2013504, Not Suspicious Traffic, severity 3): 3 alerts from 172.17.0.2 to 2 destinations (151.101.12.204, 54.230.202.37)`) {
		t.Errorf("finding %+v", f)
	}
	f = d.DescribeContext("2024897|10.0.0.8", alertInfo{sid: "2024897", signature: "ET MALWARE x CnC", severity: 1, typ: "malware"}, window(1, []string{"203.0.113.80"}))
	if f.Type != "malware" || f.Severity != vigil.SeverityHigh || f.Title != "Suricata: ET MALWARE x CnC from 10.0.0.8 to 203.0.113.80" {
		t.Errorf("malware finding %+v", f)
	}
	if f := d.Describe("2024897|10.0.0.8", window(1, nil)); f.Severity != vigil.SeverityLow || !strings.Contains(f.Title, "signature 2024897") {
		t.Errorf("finding without context %+v", f)
	}
}

// TestSuricataAlertDatasets runs the detector over the real EVE files: one
// signal per alert, keyed by signature and source.
func TestSuricataAlertDatasets(t *testing.T) {
	for _, c := range []struct {
		file         string
		alerts, keys int
		typ, sev     string
	}{
		{"suricata/surevego-eve.json", 68, 1, "network", "low"},
		{"suricata/maccdc2012-eve_small.json", 47, 0, "network", "low"},
		{"suricata/beats-eve-metadata.log", 1, 1, "network", "medium"},
	} {
		evs := parseFile(t, "suricata", c.file)
		keys := map[string]alertInfo{}
		n := 0
		for _, ev := range evs {
			for _, k := range (SuricataAlert{}).Signals(ev) {
				n++
				keys[k.Key] = (SuricataAlert{}).Context(ev).(alertInfo)
			}
		}
		if n != c.alerts || (c.keys > 0 && len(keys) != c.keys) {
			t.Errorf("%s: %d alert signals under %d keys, want %d under %d", c.file, n, len(keys), c.alerts, c.keys)
		}
		for key, info := range keys {
			if info.typ != c.typ || alertSeverity(info.severity) != c.sev {
				t.Errorf("%s: %s is %s %s, want %s %s", c.file, key, info.typ, alertSeverity(info.severity), c.typ, c.sev)
			}
		}
		t.Logf("%s: %d alerts, %d (signature, source) keys", c.file, n, len(keys))
	}
}

// TestSuricataEngineEvents: Suricata's own decoder, stream and app-layer
// events are marked, by name or by their sid range, and rank below a
// signature when described; Emerging Threats signatures are not marked.
func TestSuricataEngineEvents(t *testing.T) {
	for _, c := range []struct {
		sid, sig string
		engine   bool
	}{
		{"2200074", "SURICATA TCPv4 invalid checksum", true},
		{"2210020", "SURICATA STREAM ESTABLISHED packet out of window", true},
		{"2221021", "SURICATA HTTP response header invalid", true},
		{"", "SURICATA Applayer Detect protocol only one direction", true},
		{"2260002", "renamed locally", true},
		{"2013504", "ET POLICY GNU/Linux APT User-Agent Outbound", false},
		{"2019876", "ET EXPLOIT Possible OpenSSH Exploit Attempt", false},
		{"1", "GPL ATTACK_RESPONSE id check returned root", false},
		{"9000001", "LOCAL Suricata-like rule", false},
	} {
		f := alertFields(c.sid, c.sig, "Generic Protocol Command Decode", 3, "10.0.0.1", "10.0.0.2")
		sigs := SuricataAlert{}.Signals(event(f))
		if len(sigs) != 1 || sigs[0].EngineEvent != c.engine {
			t.Errorf("%s %q: signals %+v, want one with EngineEvent %v", c.sid, c.sig, sigs, c.engine)
			continue
		}
		want := vigil.SpecificitySignature
		if c.engine {
			want = vigil.SpecificityEngineEvent
		}
		if got := (SuricataAlert{}).DescribeContext(sigs[0].Key, SuricataAlert{}.Context(event(f)), window(1, []string{"10.0.0.2"})); got.Specificity != want {
			t.Errorf("%s %q: specificity %d, want %d", c.sid, c.sig, got.Specificity, want)
		}
	}
	// The MACCDC sample's alerts are all engine events; the APT sample's
	// policy alerts none.
	for file, want := range map[string]int{"suricata/maccdc2012-eve_small.json": 47, "suricata/surevego-eve.json": 0} {
		n := 0
		for _, ev := range parseFile(t, "suricata", file) {
			for _, sg := range (SuricataAlert{}).Signals(ev) {
				if sg.EngineEvent {
					n++
				}
			}
		}
		if n != want {
			t.Errorf("%s: %d engine events, want %d", file, n, want)
		}
	}
}
