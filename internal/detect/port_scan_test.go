package detect

import (
	"slices"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func fwFields(action, outcome, src, dst string, port int64) parse.Event {
	f := parse.Event{"event.action": action, "event.category": "network", "source.ip": src, "destination.ip": dst,
		"network.transport": "tcp", "host.name": "fw-01"}
	if outcome != "" {
		f["event.outcome"] = outcome
	}
	if port > 0 {
		f["destination.port"] = port
	}
	return f
}

func TestPortScanSignals(t *testing.T) {
	syn := fwFields("log", "", "62.34.17.168", "10.73.140.49", 8080)
	syn["tcp.flags"] = []string{"SYN"}
	syn["observer.ingress.interface.name"] = "ens2"
	synAck := fwFields("log", "", "62.34.17.168", "10.73.140.49", 8080)
	synAck["tcp.flags"] = []string{"SYN", "ACK"}
	synAck["observer.ingress.interface.name"] = "ens2"
	outbound := fwFields("log", "", "192.168.122.235", "91.198.174.192", 443)
	outbound["tcp.flags"] = []string{"SYN"}
	outbound["observer.egress.interface.name"] = "ens3"
	runSignalCases(t, PortScan{}, []signalCase{
		{name: "block", fields: fwFields("block", "failure", "10.0.2.2", "10.0.2.15", 22),
			key: "10.0.2.2", member: "22", nodes: []string{"IP:10.0.2.2*", "IP:10.0.2.15", "Host:fw-01"}},
		{name: "drop", fields: fwFields("drop", "failure", "203.0.113.9", "10.0.0.5", 445), key: "203.0.113.9", member: "445",
			nodes: []string{"IP:203.0.113.9*", "IP:10.0.0.5", "Host:fw-01"}},
		{name: "reject", fields: fwFields("reject", "", "203.0.113.9", "10.0.0.5", 23), key: "203.0.113.9", member: "23",
			nodes: []string{"IP:203.0.113.9*", "IP:10.0.0.5", "Host:fw-01"}},
		{name: "logged inbound SYN", fields: syn, key: "62.34.17.168", member: "8080",
			nodes: []string{"IP:62.34.17.168*", "IP:10.73.140.49", "Host:fw-01"}},
		{name: "logged SYN-ACK", fields: synAck},
		{name: "logged outbound SYN", fields: outbound},
		{name: "accept", fields: fwFields("accept", "success", "203.0.113.9", "10.0.0.5", 22)},
		{name: "pass", fields: fwFields("pass", "success", "203.0.113.9", "10.0.0.5", 22)},
		{name: "loopback: the host is the key", fields: fwFields("block", "failure", "127.0.0.1", "127.0.0.53", 53),
			key: "127.0.0.1 on fw-01", member: "53", nodes: []string{"Host:fw-01*", "IP:127.0.0.1", "IP:127.0.0.53"}},
		{name: "the host's own address", fields: fwFields("drop", "failure", "10.0.0.5", "10.0.0.5", 8080),
			key: "10.0.0.5 on fw-01", member: "8080", nodes: []string{"Host:fw-01*", "IP:10.0.0.5"}},
		{name: "no port", fields: fwFields("drop", "failure", "203.0.113.9", "10.0.0.5", 0)},
		{name: "refused DNS query is no firewall event", fields: parse.Event{"event.action": "query_denied", "event.outcome": "failure",
			"source.ip": "203.0.113.9", "destination.port": int64(53)}},
	})
}

func TestHostSweepSignals(t *testing.T) {
	icmp := fwFields("drop", "failure", "203.0.113.9", "10.0.0.7", 0)
	icmp["network.transport"] = "icmp"
	runSignalCases(t, HostSweep{}, []signalCase{
		{name: "smb", fields: fwFields("drop", "failure", "203.0.113.9", "10.0.0.5", 445), key: "203.0.113.9|445", member: "10.0.0.5",
			nodes: []string{"IP:203.0.113.9*", "IP:10.0.0.5", "Host:fw-01"}},
		{name: "icmp", fields: icmp, key: "203.0.113.9|icmp", member: "10.0.0.7", nodes: []string{"IP:203.0.113.9*", "IP:10.0.0.7", "Host:fw-01"}},
		{name: "allowed", fields: fwFields("accept", "success", "203.0.113.9", "10.0.0.5", 445)},
		{name: "no destination", fields: fwFields("drop", "failure", "203.0.113.9", "", 445)},
	})
}

func TestPortScanDescribe(t *testing.T) {
	src := vigil.NodeRef{Type: vigil.NodeIP, Value: "62.34.17.168", Key: true}
	dst := vigil.NodeRef{Type: vigil.NodeIP, Value: "10.73.140.49"}
	w := window(23, []string{"21", "22", "8080", "80"}, src, dst)
	w.Distinct = 20
	f := PortScan{}.Describe("62.34.17.168", w)
	if f.Type != "recon" || f.Severity != vigil.SeverityLow || f.Title != "Port scan from 62.34.17.168 against 10.73.140.49" ||
		!strings.Contains(f.Description, "23 packets from 62.34.17.168 denied on 20 ports (21, 22, 80, 8080, …) of 10.73.140.49") {
		t.Errorf("finding %+v", f)
	}
	w.Distinct = 100
	if f := (PortScan{}).Describe("62.34.17.168", w); f.Severity != vigil.SeverityMedium {
		t.Errorf("100 ports: severity %s, want medium", f.Severity)
	}
	f = HostSweep{}.Describe("203.0.113.9|445", window(20, []string{"10.0.0.1", "10.0.0.2"}))
	if f.Type != "recon" || f.Severity != vigil.SeverityLow || f.Title != "Host sweep from 203.0.113.9 on port 445" ||
		!strings.Contains(f.Description, "2 addresses (10.0.0.1, 10.0.0.2)") {
		t.Errorf("sweep finding %+v", f)
	}
}

// TestPortScanDatasets: the scans of crowdsec's fixtures give signals on
// 17 and 16 ports; the benign iptables log gives none.
func TestPortScanDatasets(t *testing.T) {
	for _, c := range []struct {
		file    string
		scanner string
		ports   int
	}{
		{"firewall/crowdsec-hub-iptables-tests.log", "62.34.17.168", 17},
		{"firewall/crowdsec-hub-pf-filterlog-tests.log", "10.0.2.2", 16},
		{"firewall/iptablogs-netfilter.log", "", 0},
	} {
		local := map[string]int{} // the local sources and their ports, ignored here
		ports := map[string]map[string]bool{}
		for _, ev := range parseFile(t, "firewall", c.file) {
			for _, k := range (PortScan{}).Signals(ev) {
				if ports[k.Key] == nil {
					ports[k.Key] = map[string]bool{}
				}
				ports[k.Key][k.Member] = true
				if strings.Contains(k.Key, " on ") {
					local[k.Key]++
				}
			}
		}
		if c.scanner == "" {
			for src, ps := range ports {
				if !strings.Contains(src, " on ") || len(ps) >= 15 {
					t.Errorf("%s: %s denied on %d ports, want only local sources on a few", c.file, src, len(ps))
				}
			}
			t.Logf("%s: local sources %v", c.file, local)
			continue
		}
		if got := len(ports[c.scanner]); got != c.ports {
			t.Errorf("%s: %s denied on %d ports, want %d", c.file, c.scanner, got, c.ports)
		}
		for src, ps := range ports {
			if src != c.scanner && len(ps) >= 15 && !strings.Contains(src, " on ") {
				t.Errorf("%s: %s on %d ports too", c.file, src, len(ps))
			}
		}
		t.Logf("%s: local sources %v", c.file, local)
	}
}

// TestLocalSources: one policy for every detector. Reported, a local
// source is keyed by the host that logged it; ignored, no detector
// counts it.
func TestLocalSources(t *testing.T) {
	ssh := parse.Event{"event.action": "ssh_login", "event.outcome": "failure", "process.name": "sshd", "source.ip": "127.0.0.1",
		"user.name": "root", "host.name": "deb", "vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)}
	success := parse.Event{"event.action": "ssh_login", "event.outcome": "success", "process.name": "sshd", "source.ip": "::1",
		"user.name": "root", "host.name": "deb"}
	scan := fwFields("drop", "failure", "127.0.0.1", "127.0.0.1", 8080)
	scan["host.name"] = "deb"
	dns := parse.Event{"event.action": "query", "dns.question.name": "xjwqpvkzrmdl.com", "source.ip": "127.0.0.1", "host.name": "deb"}
	tunnel := parse.Event{"event.action": "query", "dns.question.name": "6b8f2a1c9d4e7f0a3b5c8d1e2f4a6b9c.t.exfil-example.org",
		"source.ip": "127.0.0.1", "host.name": "deb"}
	alert := alertFields("2013504", "ET POLICY x", "Not Suspicious Traffic", 3, "127.0.0.1", "127.0.0.1")
	alert["host.name"] = "deb"
	cases := []struct {
		d      Detector
		fields parse.Event
		key    string
	}{
		{SSHBruteForce{}, ssh, "127.0.0.1 on deb"},
		{SSHSuccess{}, success, "::1 on deb"},
		{PortScan{}, scan, "127.0.0.1 on deb"},
		{HostSweep{}, scan, "127.0.0.1 on deb|8080"},
		{DGA{}, dns, "127.0.0.1 on deb"},
		{DNSTunnel{}, tunnel, "127.0.0.1 on deb|exfil-example.org"},
		{SuricataAlert{}, alert, "2013504|127.0.0.1 on deb"},
	}
	for _, c := range cases {
		t.Run(c.d.Name(), func(t *testing.T) {
			sigs := c.d.Signals(event(c.fields))
			if len(sigs) != 1 || sigs[0].Key != c.key || !slices.Contains(nodeStrings(sigs[0].Nodes), "Host:deb*") {
				t.Fatalf("reported: signals %+v, want one keyed %q with the host as the key node", sigs, c.key)
			}
			cfg := Config{LocalSources: LocalIgnore}
			for _, d := range Default(cfg) {
				if d.Name() == c.d.Name() {
					if sigs := d.Signals(event(c.fields)); len(sigs) != 0 {
						t.Fatalf("ignored: signals %+v, want none", sigs)
					}
				}
			}
		})
	}
	// A local line without a host keeps its address as the key.
	noHost := fwFields("drop", "failure", "127.0.0.1", "127.0.0.53", 53)
	delete(noHost, "host.name")
	if sigs := (PortScan{}).Signals(event(noHost)); len(sigs) != 1 || sigs[0].Key != "127.0.0.1" ||
		strings.Join(nodeStrings(sigs[0].Nodes), " ") != "IP:127.0.0.1* IP:127.0.0.53" {
		t.Errorf("no host: %+v", sigs)
	}
}
