package parse

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDNS(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		time   string // RFC 3339 in UTC; "" skips the check
		fields map[string]any
	}{
		{
			name: "bind query log with category prefix",
			line: "14-Jun-2019 10:00:00.000 queries: info: client @0x7f1c3c0e1b30 192.0.2.1#53333 (www.example.com): query: www.Example.com IN A +E(0)K (192.0.2.53)",
			time: "2019-06-14T10:00:00Z",
			fields: map[string]any{
				"event.action": "query", "dns.type": "query",
				"source.ip": "192.0.2.1", "source.port": int64(53333), "destination.ip": "192.0.2.53",
				"dns.question.name": "www.example.com", "dns.question.class": "IN", "dns.question.type": "A",
				"dns.header_flags": []string{"RD"}, "network.transport": "udp", "event.outcome": nil,
			},
		},
		{
			name: "bind query log syslog-wrapped ipv6 tcp",
			line: "Jun 14 10:00:01 ns1 named[1234]: client @0x7f1c3c0e1b30 2001:db8::1#53 (Example.ORG): query: Example.ORG IN AAAA -ETDC (2001:db8::53)",
			time: "2025-06-14T10:00:01Z",
			fields: map[string]any{
				"event.action": "query", "source.ip": "2001:db8::1", "source.port": int64(53),
				"destination.ip": "2001:db8::53", "dns.question.name": "example.org", "dns.question.type": "AAAA",
				"network.transport": "tcp", "dns.header_flags": []string{"DO", "CD"},
				"host.name": "ns1", "process.name": "named", "process.pid": int64(1234),
			},
		},
		{
			name: "bind query log old format with view",
			line: "client 198.51.100.7#40000: view internal: query: mail.example.net IN MX + (192.0.2.53)",
			fields: map[string]any{
				"event.action": "query", "bind.view": "internal", "dns.question.name": "mail.example.net",
				"dns.question.type": "MX", "source.ip": "198.51.100.7",
			},
		},
		{
			name: "bind denied ANY bare",
			line: "19-Oct-2022 05:34:02.425 client @0x7f65100ee4d8 192.168.1.1#3076 (example.com): query (cache) 'example.com/ANY/IN' denied",
			time: "2022-10-19T05:34:02.425Z",
			fields: map[string]any{
				"event.action": "query_denied", "event.outcome": "failure", "event.type": "denied",
				"source.ip": "192.168.1.1", "source.port": int64(3076),
				"dns.question.name": "example.com", "dns.question.type": "ANY", "dns.question.class": "IN",
			},
		},
		{
			name: "bind denied AXFR bare without timestamp",
			line: "client @0x7f8ac00071e8 ::1#62524 (example.com): zone transfer 'example.com/AXFR/IN' denied",
			fields: map[string]any{
				"event.action": "zone_transfer_denied", "event.outcome": "failure",
				"source.ip": "::1", "dns.question.type": "AXFR", "dns.question.name": "example.com",
			},
		},
		{
			name: "bind denied AXFR security error prefix",
			line: "03-Nov-2022 13:34:52.235 security: error: client @0x7fb04c007328 2001:db8::1#53 (example.com): zone transfer 'example.com/AXFR/IN' denied",
			fields: map[string]any{
				"event.action": "zone_transfer_denied", "source.ip": "2001:db8::1", "source.port": int64(53),
				"dns.question.type": "AXFR",
			},
		},
		{
			name: "bind denied ANY syslog-wrapped",
			line: "Nov 13 10:59:46 keira named[2075772]: 19-Oct-2022 05:34:02.425 client @0x7f65100ee4d8 104.219.136.31#3076 (example.com): query (cache) 'example.com/ANY/IN' denied",
			time: "2022-10-19T05:34:02.425Z", // BIND's own time wins over the header's
			fields: map[string]any{
				"event.action": "query_denied", "host.name": "keira", "process.name": "named",
				"source.ip": "104.219.136.31", "dns.question.type": "ANY",
			},
		},
		{
			name: "bind denied AXFR syslog-wrapped security prefix",
			line: "Nov 13 10:59:46 keira named[2075772]: security: client @0x7f37ac012d98 2003:f8:733:b600:6018:bbe4:d0ed:22#62518 (example.com): zone transfer 'example.com/AXFR/IN' denied",
			time: "2025-11-13T10:59:46Z",
			fields: map[string]any{
				"event.action": "zone_transfer_denied", "source.ip": "2003:f8:733:b600:6018:bbe4:d0ed:22",
			},
		},
		{
			name: "bind header without program",
			line: "Oct 23 02:06:39 security: info: client @0x7f4e446fd6e8 192.0.2.8#53 (example.io): query (cache) 'example.io/A/IN' denied",
			fields: map[string]any{
				"event.action": "query_denied", "process.name": nil, "dns.question.name": "example.io",
			},
		},
		{
			name: "bind denied with reason and view",
			line: "Jul 24 14:23:36 ns2 named[3935]: client 198.51.100.9#9334: view external: query (cache) './NS/IN' denied (allow-query-cache did not match)",
			fields: map[string]any{
				"event.action": "query_denied", "dns.question.name": ".", "dns.question.type": "NS",
				"event.reason": "allow-query-cache did not match", "bind.view": "external",
			},
		},
		{
			name: "bind bad zone transfer",
			line: "Aug 27 16:58:31 vhost1 named[29206]: client 176.9.92.38#42592 (simmarket.com.ua): bad zone transfer request: 'simmarket.com.ua/IN': non-authoritative zone (NOTAUTH)",
			fields: map[string]any{
				"event.action": "zone_transfer_denied", "dns.response_code": "NOTAUTH",
				"dns.question.name": "simmarket.com.ua", "event.reason": "non-authoritative zone",
			},
		},
		{
			name: "bind query failed",
			line: "query-errors: info: client @0x7f0e5c0c1a40 192.0.2.5#51000 (broken.example.com): query failed (SERVFAIL) for broken.example.com/IN/A at ../../../lib/ns/query.c:7375",
			fields: map[string]any{
				"event.action": "query_failed", "dns.response_code": "SERVFAIL", "event.outcome": "failure",
				"dns.question.name": "broken.example.com", "dns.question.class": "IN", "dns.question.type": "A",
			},
		},
		{
			name: "bind client line of another kind",
			line: "client @0x7f0e 192.0.2.5#51000 (example.com): rate limit drop response to 192.0.2.0/24 for example.com IN A",
			fields: map[string]any{
				"event.action": nil, "source.ip": "192.0.2.5", "dns.question.name": "example.com",
			},
		},
		{
			name: "dnsmasq query",
			line: "Jun 19 22:26:08 dnsmasq[830]: query[A] WWW.Example.com from 192.0.2.103",
			time: "2025-06-19T22:26:08Z",
			fields: map[string]any{
				"event.action": "query", "dns.question.name": "www.example.com", "dns.question.type": "A",
				"source.ip": "192.0.2.103", "process.name": "dnsmasq", "host.name": nil,
			},
		},
		{
			name: "dnsmasq query with extra logging",
			line: "Jun 19 22:26:13 dnsmasq[830]: 42 192.0.2.103/52344 query[AAAA] ipv6.example.org from 192.0.2.103",
			fields: map[string]any{
				"event.action": "query", "source.ip": "192.0.2.103", "source.port": int64(52344),
				"dns.question.type": "AAAA",
			},
		},
		{
			name: "dnsmasq forwarded",
			line: "Jun 19 22:26:08 dnsmasq[830]: forwarded www.example.com to 2001:db8::53",
			fields: map[string]any{
				"event.action": "forwarded", "dns.question.name": "www.example.com", "destination.ip": "2001:db8::53",
			},
		},
		{
			name: "dnsmasq reply address",
			line: "Jun 19 22:26:08 dnsmasq[830]: reply edge.example.net is 203.0.113.80",
			fields: map[string]any{
				"event.action": "reply", "dns.type": "answer", "dns.question.name": "edge.example.net",
				"dns.answers.data": []string{"203.0.113.80"}, "dns.resolved_ip": []string{"203.0.113.80"},
			},
		},
		{
			name: "dnsmasq reply cname",
			line: "Jun 19 22:26:08 dnsmasq[830]: reply www.example.com is <CNAME>",
			fields: map[string]any{
				"event.action": "reply", "dns.answers.type": []string{"CNAME"}, "dns.answers.data": nil,
			},
		},
		{
			name: "dnsmasq reply nxdomain",
			line: "Jun 19 22:26:09 dnsmasq[830]: reply nonexistent.example.com is NXDOMAIN",
			fields: map[string]any{
				"event.action": "reply", "dns.response_code": "NXDOMAIN", "event.outcome": nil,
			},
		},
		{
			name: "dnsmasq dhcp ack",
			line: "Jun 19 22:26:07 dnsmasq-dhcp[830]: DHCPACK(wlan0) 192.0.2.103 00:00:5e:00:53:01 laptop-01",
			fields: map[string]any{
				"event.action": "dhcp_ack", "event.category": "network", "network.protocol": "dhcp",
				"client.ip": "192.0.2.103", "client.mac": "00-00-5E-00-53-01", "client.domain": "laptop-01",
				"observer.ingress.interface.name": "wlan0",
			},
		},
		{
			name: "dnsmasq dhcp nak",
			line: "Jun 19 22:26:09 dnsmasq-dhcp[830]: DHCPNAK(wlan0) 192.0.2.104 00:00:5e:00:53:02 wrong network",
			fields: map[string]any{
				"event.action": "dhcp_nak", "event.outcome": "failure", "event.reason": "wrong network",
				"client.domain": nil,
			},
		},
		{
			name:   "dnsmasq started",
			line:   "Jun 19 21:30:43 dnsmasq[830]: started, version 2.90 cachesize 150",
			fields: map[string]any{"event.action": "started", "service.version": "2.90"},
		},
		{
			name:   "dnsmasq warning keeps its program",
			line:   "Jun 19 21:30:43 dnsmasq[830]: warning: interface wlan0 does not currently exist",
			fields: map[string]any{"event.action": "warning", "process.name": "dnsmasq"},
		},
		{
			name: "zeek json",
			line: `{"ts":1521912301.123456,"uid":"CAbcd12345efgh6789","id.orig_h":"192.0.2.10","id.orig_p":53122,"id.resp_h":"198.51.100.53","id.resp_p":53,"proto":"udp","trans_id":4242,"rtt":0.0123,"query":"WWW.EXAMPLE.COM","qclass":1,"qclass_name":"C_INTERNET","qtype":1,"qtype_name":"A","rcode":0,"rcode_name":"NOERROR","AA":false,"TC":false,"RD":true,"RA":true,"Z":0,"answers":["edge.example.net","203.0.113.80"],"TTLs":[300.0,60.0],"rejected":false}`,
			time: "2018-03-24T17:25:01.123456Z",
			fields: map[string]any{
				"zeek.uid": "CAbcd12345efgh6789", "source.ip": "192.0.2.10", "source.port": int64(53122),
				"destination.ip": "198.51.100.53", "destination.port": int64(53), "network.transport": "udp",
				"dns.id": "4242", "zeek.dns.rtt": 0.0123, "dns.question.name": "www.example.com",
				"dns.question.class": "IN", "dns.question.type": "A", "dns.response_code": "NOERROR",
				"dns.answers.data": []string{"edge.example.net", "203.0.113.80"},
				"dns.resolved_ip":  []string{"203.0.113.80"}, "dns.header_flags": []string{"RD", "RA"},
				"zeek.dns.rejected": false, "event.action": "query", "dns.type": "answer",
			},
		},
		{
			name: "zeek json iso time refused",
			line: `{"ts":"2018-03-24T17:26:01.654321Z","uid":"CRef1xyz","id.orig_h":"192.0.2.66","query":"example.com","qtype_name":"AXFR","rcode_name":"REFUSED","rejected":true}`,
			time: "2018-03-24T17:26:01.654321Z",
			fields: map[string]any{
				"dns.response_code": "REFUSED", "event.outcome": "failure", "zeek.dns.rejected": true,
			},
		},
		{
			name: "zeek tsv",
			line: "1521911720.865716\tCqKst53mF3det3eDV9\t10.47.1.100\t41772\t10.0.0.100\t53\tudp\t36329\t0.000870\tise.wrccdc.org\t1\tC_INTERNET\t1\tA\t0\tNOERROR\tF\tF\tT\tT\t0\tise.wrccdc.cpp.edu,134.71.3.16\t2230.000000,41830.000000\tF",
			time: "2018-03-24T17:15:20.865716Z",
			fields: map[string]any{
				"zeek.uid": "CqKst53mF3det3eDV9", "source.ip": "10.47.1.100", "source.port": int64(41772),
				"destination.ip": "10.0.0.100", "destination.port": int64(53), "dns.id": "36329",
				"dns.question.name": "ise.wrccdc.org", "dns.question.class": "IN", "dns.question.type": "A",
				"dns.response_code": "NOERROR", "zeek.dns.rtt": 0.00087,
				"dns.answers.data": []string{"ise.wrccdc.cpp.edu", "134.71.3.16"},
				"dns.resolved_ip":  []string{"134.71.3.16"},
			},
		},
		{
			name: "zeek tsv unset fields",
			line: "1521911738.523165\tCD4j6z3kPg6MQyNiec\t10.47.3.142\t137\t10.164.94.120\t137\tudp\t32827\t-\t(empty)\t1\tC_INTERNET\t33\tNBSTAT\t-\t-\tF\tF\tF\tF\t0\t-\t-\tF",
			fields: map[string]any{
				"dns.question.name": nil, "dns.response_code": nil, "zeek.dns.rtt": nil,
				"dns.answers.data": nil, "dns.type": "query", "dns.header_flags": nil,
			},
		},
		{
			name:   "zeek header",
			line:   "#fields\tts\tuid\tid.orig_h",
			fields: map[string]any{"event.action": "zeek_header"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, ts, ok := parseDNS([]byte(tt.line), goldenRef)
			if !ok {
				t.Fatalf("not parsed: %s", tt.line)
			}
			checkEventValues(t, ev)
			if tt.time != "" {
				if want := mustTime(t, tt.time); !ts.Equal(want) {
					t.Errorf("time = %v, want %v", ts, want)
				}
			}
			checkFields(t, ev, tt.fields)
		})
	}
}

func TestParseDNSRejects(t *testing.T) {
	tests := []struct{ name, line string }{
		{"empty", "  "},
		{"other program", "Jun 14 10:00:01 host sshd[1]: Accepted password for root"},
		{"bind other line", "14-Jun-2019 10:00:00.000 general: info: zone example.com/IN: loaded serial 1"},
		{"client without port", "client 192.0.2.1: query: x IN A"},
		{"comment", "# just a comment"},
		{"short tsv", "1521911720.865716\tCqKst53mF3det3eDV9\t10.47.1.100"},
		{"tsv bad port", "1521911720.8\tC1\t10.47.1.100\tx\t10.0.0.100\t53\tudp\t1\t-\tq\t1\tC_INTERNET\t1\tA\t0\tNOERROR\tF\tF\tT\tT\t0\t-\t-\tF"},
		{"json not zeek", `{"hello":"world"}`},
		{"dnsmasq unknown", "Jun 19 21:30:43 dnsmasq[830]: something new happened"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ev, _, ok := parseDNS([]byte(tt.line), goldenRef); ok {
				t.Errorf("parsed %q: %v", tt.line, ev)
			}
		})
	}
}

func TestParseDNSSuricataJSON(t *testing.T) {
	ev, _, ok := parseDNS([]byte(`{"event_type":"dns","src_ip":"192.0.2.1","dns":{"type":"query","rrname":"example.com"}}`), goldenRef)
	if !ok {
		t.Fatal("not parsed")
	}
	checkFields(t, ev, map[string]any{"suricata.eve.event_type": "dns", "dns.question.name": "example.com"})
}

func TestGolden_DNS(t *testing.T) { checkGolden(t, "dns", "dns") }

// dnsNoQuestion are the actions whose lines name no query.
var dnsNoQuestion = map[string]bool{
	"started": true, "stopped": true, "compile_options": true, "nameserver": true, "read_file": true,
	"no_servers": true, "warning": true, "dhcp_range": true, "dhcp_no_range": true,
	"dhcp_no_address": true, "zeek_header": true,
}

// TestDatasetCoverage_DNS parses every line of the shared DNS datasets:
// at least 95 % must parse and carry dns.question.name, or an event.action
// for the DHCP, start-up and configuration lines that name no query.
func TestDatasetCoverage_DNS(t *testing.T) {
	datasetCoverage(t, "dns", func(ev Event) bool {
		if _, ok := ev["dns.question.name"].(string); ok {
			return true
		}
		a, _ := ev["event.action"].(string)
		return dnsNoQuestion[a] || strings.HasPrefix(a, "dhcp_")
	})
}

func FuzzParseDNS(f *testing.F) {
	for _, l := range readLines(f, filepath.Join("testdata", "dns.input")) {
		f.Add(l)
	}
	f.Add([]byte("client (x): query: "))
	f.Add([]byte("client 1.2.3.4#"))
	f.Add([]byte("dnsmasq-dhcp[1]: DHCP(x"))
	f.Add([]byte("1.5\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, _, ok := parseDNS(data, goldenRef)
		if ok {
			checkEventValues(t, ev)
		}
	})
}

func BenchmarkParseDNS(b *testing.B) {
	benchmarkParser(b, parseDNS, filepath.Join("testdata", "dns.input"))
}
