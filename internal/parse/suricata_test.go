package parse

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// checkFields compares the fields of ev named in want; a nil want value
// means the field must be absent.
func checkFields(tb testing.TB, ev Event, want map[string]any) {
	tb.Helper()
	for k, w := range want {
		got, ok := ev[k]
		switch {
		case w == nil && ok:
			tb.Errorf("%s = %#v, want absent", k, got)
		case w != nil && !reflect.DeepEqual(got, w):
			tb.Errorf("%s = %#v, want %#v", k, got, w)
		}
	}
}

// datasetLine returns line n (1-based) of a shared dataset file, skipping
// the test when the datasets are absent.
func datasetLine(tb testing.TB, file string, n int) []byte {
	tb.Helper()
	path := filepath.Join(datasetDir, file)
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("%s absent", path)
	}
	lines := readLines(tb, path)
	if n < 1 || n > len(lines) {
		tb.Fatalf("%s has %d lines, want line %d", path, len(lines), n)
	}
	return lines[n-1]
}

func TestParseSuricata(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		file   string // a shared dataset file whose first line is the input
		time   string // RFC 3339 in UTC; "" skips the check
		fields map[string]any
	}{
		{
			name: "alert with escaped slashes and +0100",
			line: `{"timestamp":"2017-01-30T16:12:36.066011+0100","flow_id":1501577875823823,"pcap_cnt":10319,"event_type":"alert","src_ip":"172.17.0.2","src_port":41402,"dest_ip":"54.230.202.37","dest_port":80,"proto":"TCP","tx_id":0,"alert":{"action":"allowed","gid":1,"signature_id":2013504,"rev":5,"signature":"ET POLICY GNU\/Linux APT User-Agent Outbound likely related to package management","category":"Not Suspicious Traffic","severity":3},"http":{"hostname":"deb.debian.org","url":"\/debian\/pool\/main\/p\/perl\/perl-base_5.24.1-1_amd64.deb","http_user_agent":"Debian APT-HTTP\/1.3 (1.4~beta3)","http_content_type":"application\/x-debian-package","http_method":"GET","protocol":"HTTP\/1.1","status":200,"length":919}}`,
			time: "2017-01-30T15:12:36.066011Z",
			fields: map[string]any{
				"event.kind": "alert", "event.category": "intrusion_detection", "event.type": "allowed",
				"event.action": "allowed", "event.severity": int64(3),
				"rule.name":              "ET POLICY GNU/Linux APT User-Agent Outbound likely related to package management",
				"rule.id":                "2013504",
				"rule.category":          "Not Suspicious Traffic",
				"suricata.eve.alert.gid": int64(1),
				"suricata.eve.flow_id":   "1501577875823823",
				"source.ip":              "172.17.0.2", "source.port": int64(41402),
				"destination.ip": "54.230.202.37", "destination.port": int64(80),
				"network.transport":   "tcp",
				"url.original":        "/debian/pool/main/p/perl/perl-base_5.24.1-1_amd64.deb",
				"user_agent.original": "Debian APT-HTTP/1.3 (1.4~beta3)",
			},
		},
		{
			name: "alert blocked with metadata and vlan list",
			line: `{"timestamp":"2024-05-02T09:19:00.000000+0000","flow_id":7,"event_type":"alert","vlan":[100,20],"src_ip":"203.0.113.5","dest_ip":"192.0.2.10","proto":"TCP","alert":{"action":"blocked","signature_id":9000001,"signature":"x","severity":1,"metadata":{"attack_target":["SMB_Server"],"deployment":["Internal","Perimeter"],"nested":{"a":"b"}}}}`,
			time: "2024-05-02T09:19:00Z",
			fields: map[string]any{
				"event.action": "blocked", "event.type": "denied", "event.severity": int64(1),
				"rule.metadata.attack_target": []string{"SMB_Server"},
				"rule.metadata.deployment":    []string{"Internal", "Perimeter"},
				"rule.metadata.nested":        nil,
				"network.vlan.id":             "100", "network.inner.vlan.id": "20",
			},
		},
		{
			name: "dns v1 query",
			line: `{"timestamp":"2017-01-30T16:12:26.985026+0100","flow_id":955054024165314,"event_type":"dns","src_ip":"172.17.0.2","src_port":55645,"dest_ip":"172.21.3.254","dest_port":53,"proto":"UDP","dns":{"type":"query","id":13786,"rrname":"_http._tcp.Security.Debian.org","rrtype":"SRV","tx_id":0}}`,
			fields: map[string]any{
				"dns.type": "query", "dns.id": "13786", "dns.question.name": "_http._tcp.security.debian.org",
				"dns.question.type": "SRV", "network.transport": "udp",
			},
		},
		{
			name: "dns v1 answer record",
			line: `{"timestamp":"2017-01-30T16:12:27.027213+0100","event_type":"dns","src_ip":"172.21.3.254","src_port":53,"dest_ip":"172.17.0.2","dest_port":47719,"proto":"UDP","dns":{"type":"answer","id":22800,"rcode":"NOERROR","rrname":"prod.debian.map.fastly.net","rrtype":"A","ttl":30,"rdata":"151.101.12.204"}}`,
			fields: map[string]any{
				"dns.type": "answer", "dns.response_code": "NOERROR",
				"dns.answers.name": []string{"prod.debian.map.fastly.net"},
				"dns.answers.type": []string{"A"},
				"dns.answers.data": []string{"151.101.12.204"},
				"dns.resolved_ip":  []string{"151.101.12.204"},
				// A v1 answer line names a record's owner, not the question.
				"dns.question.name": nil,
			},
		},
		{
			name: "dns v1 NXDOMAIN names the question",
			line: `{"timestamp":"2017-01-30T16:12:27.057835+0100","event_type":"dns","src_ip":"172.21.3.254","dest_ip":"172.17.0.2","proto":"UDP","dns":{"type":"answer","id":13786,"rcode":"NXDOMAIN","rrname":"_http._tcp.security.debian.org"}}`,
			fields: map[string]any{
				"dns.response_code": "NXDOMAIN", "dns.question.name": "_http._tcp.security.debian.org",
				"dns.answers.data": nil,
			},
		},
		{
			name: "dns v2 answers and grouped",
			line: `{"timestamp":"2024-05-02T09:14:07.412345+0000","event_type":"dns","src_ip":"198.51.100.53","dest_ip":"192.0.2.10","proto":"UDP","dns":{"version":2,"type":"answer","id":40512,"flags":"8180","qr":true,"rd":true,"ra":true,"rrname":"WWW.Example.COM.","rrtype":"A","rcode":"NOERROR","answers":[{"rrname":"www.example.com","rrtype":"CNAME","ttl":300,"rdata":"edge.example.net"},{"rrname":"edge.example.net","rrtype":"A","ttl":60,"rdata":"203.0.113.80"}],"grouped":{"CNAME":["edge.example.net"],"A":["203.0.113.80"]}}}`,
			fields: map[string]any{
				"dns.question.name": "www.example.com", "dns.question.type": "A",
				"dns.answers.data": []string{"edge.example.net", "203.0.113.80"},
				"dns.answers.type": []string{"CNAME", "A"},
				"dns.resolved_ip":  []string{"203.0.113.80"},
				"dns.header_flags": []string{"RD", "RA"},
			},
		},
		{
			name: "dns v2 grouped only",
			line: `{"timestamp":"2024-05-02T09:14:08.000001+00:00","event_type":"dns","src_ip":"2001:db8::53","dest_ip":"2001:db8::10","proto":"UDP","dns":{"version":2,"type":"answer","id":7,"rrname":"ipv6.example.org","rrtype":"AAAA","rcode":"NOERROR","grouped":{"AAAA":["2001:db8:0:0::80"],"SOA":[{"mname":"ns.example.org"}]}}}`,
			time: "2024-05-02T09:14:08.000001Z",
			fields: map[string]any{
				"dns.question.name": "ipv6.example.org",
				"dns.answers.data":  []string{"2001:db8:0:0::80"},
				"dns.resolved_ip":   []string{"2001:db8::80"},
			},
		},
		{
			name: "dns v3 queries list",
			line: `{"timestamp":"2025-03-10T12:00:00Z","event_type":"dns","src_ip":"198.51.100.53","dest_ip":"192.0.2.11","proto":"UDP","dns":{"version":3,"type":"response","id":1234,"rcode":"NOERROR","queries":[{"rrname":"mail.example.com","rrtype":"MX"}],"answers":[{"rrname":"mail.example.com","rrtype":"MX","ttl":3600,"rdata":"mx1.example.com"}]}}`,
			fields: map[string]any{
				"dns.type": "answer", "dns.question.name": "mail.example.com", "dns.question.type": "MX",
				"dns.answers.data": []string{"mx1.example.com"}, "dns.resolved_ip": nil,
			},
		},
		{
			name: "http absolute-form url",
			line: `{"timestamp":"2024-01-30T10:29:41.123456+0000","event_type":"http","src_ip":"192.0.2.10","src_port":51111,"dest_ip":"203.0.113.80","dest_port":8080,"proto":"TCP","http":{"hostname":"intranet.example.com","http_port":8080,"url":"http://intranet.example.com:8080/login?next=%2F","http_user_agent":"curl/8.5.0","http_refer":"http://intranet.example.com/","http_method":"POST","protocol":"HTTP/1.1","status":302,"length":0}}`,
			fields: map[string]any{
				"url.domain": "intranet.example.com", "url.original": "http://intranet.example.com:8080/login?next=%2F",
				"url.path": "/login", "url.query": "next=%2F", "url.port": int64(8080),
				"http.request.method": "POST", "http.response.status_code": int64(302),
				"http.request.referrer": "http://intranet.example.com/", "user_agent.original": "curl/8.5.0",
				"http.response.body.bytes": int64(0), "http.version": "1.1",
				"event.type": "protocol",
			},
		},
		{
			name: "tls empty issuerdn",
			file: "suricata/integrations-test-eve-tls-empty-issuerdn.log",
			time: "2026-06-27T12:13:26.024477Z",
			fields: map[string]any{
				"tls.server.subject":    "CN=example.com, O=Example Corp, C=US",
				"tls.server.issuer":     nil,
				"tls.version":           "1.2",
				"tls.version_protocol":  "tls",
				"tls.server.hash.sha1":  "B9C8DC0DE58B78C3CFE344BED1553B380592DE1D",
				"tls.server.not_before": "2025-09-11T04:59:57Z",
				"tls.server.not_after":  "2026-09-11T04:59:57Z",
				"destination.port":      int64(636),
			},
		},
		{
			name: "tls empty subject with ja3s",
			file: "suricata/integrations-test-eve-tls-empty-subject.log",
			fields: map[string]any{
				"tls.server.subject": nil,
				"tls.server.issuer":  "C=US, DC=com, DC=example, DC=internal, DC=example, O=Example Corp, OU=EXAMPLE, CN=EX-SHA2 L3 Low Iss E2S CA",
				"tls.server.ja3s":    "ae4edc6faf64d08308082ad26be60767",
			},
		},
		{
			name: "tls sni ja3 and unicode escape",
			line: `{"timestamp":"2024-05-02T09:15:00.1+0200","event_type":"tls","src_ip":"192.0.2.10","dest_ip":"203.0.113.44","proto":"TCP","tls":{"subject":"CN=caf\u00e9.example.com \ud83d\ude00","sni":"www.example.com","version":"TLSv1.3","ja3":{"hash":"e7d705a3286e19ea42f587b344ee6865","string":"771"},"session_resumed":true}}`,
			time: "2024-05-02T07:15:00.1Z",
			fields: map[string]any{
				"tls.server.subject":     "CN=café.example.com 😀",
				"tls.client.server_name": "www.example.com",
				"tls.client.ja3":         "e7d705a3286e19ea42f587b344ee6865",
				"tls.version":            "1.3",
				"tls.resumed":            true,
			},
		},
		{
			name:   "ssh software",
			line:   `{"timestamp":"2024-05-02T09:16:00Z","event_type":"ssh","src_ip":"192.0.2.66","dest_ip":"198.51.100.22","proto":"TCP","ssh":{"client":{"proto_version":"2.0","software_version":"libssh_0.9.6"},"server":{"proto_version":"2.0","software_version":"OpenSSH_8.9p1"}}}`,
			fields: map[string]any{"ssh.client.software": "libssh_0.9.6", "ssh.server.software": "OpenSSH_8.9p1"},
		},
		{
			name: "fileinfo hashes",
			line: `{"timestamp":"2024-05-02T09:17:00Z","event_type":"fileinfo","src_ip":"203.0.113.80","dest_ip":"192.0.2.10","proto":"TCP","http":{"hostname":"downloads.example.com","url":"/files/setup.exe?ver=2"},"fileinfo":{"filename":"/files/setup.exe","magic":"PE32 executable (GUI) Intel 80386, for MS Windows","md5":"5d41402abc4b2a76b9719d911017c592","sha1":"aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d","sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","size":73802}}`,
			fields: map[string]any{
				"file.name": "setup.exe", "file.path": "/files/setup.exe", "file.size": int64(73802),
				"file.hash.md5":               "5d41402abc4b2a76b9719d911017c592",
				"file.hash.sha1":              "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d",
				"file.hash.sha256":            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
				"file.mime_type":              nil, // libmagic text is not a MIME type
				"suricata.eve.fileinfo.magic": "PE32 executable (GUI) Intel 80386, for MS Windows",
				"url.domain":                  "downloads.example.com", "url.original": "/files/setup.exe?ver=2",
			},
		},
		{
			name: "flow",
			line: `{"timestamp":"2017-01-30T16:12:29.951412+0100","flow_id":1132792655884373,"event_type":"flow","src_ip":"172.17.0.2","src_port":46038,"dest_ip":"151.101.12.204","dest_port":80,"proto":"TCP","flow":{"pkts_toserver":3247,"pkts_toclient":6922,"bytes_toserver":216833,"bytes_toclient":10333230,"start":"2017-01-30T16:12:27.045141+0100","end":"2017-01-30T16:12:29.951412+0100","age":2,"state":"new","reason":"shutdown"}}`,
			fields: map[string]any{
				"network.bytes": int64(10550063), "network.packets": int64(10169),
				"source.bytes": int64(216833), "destination.packets": int64(6922),
				"event.start": "2017-01-30T15:12:27.045141Z", "event.end": "2017-01-30T15:12:29.951412Z",
				"event.duration":          int64(2906271000),
				"suricata.eve.flow.state": "new", "suricata.eve.flow.reason": "shutdown",
				"event.type": "connection",
			},
		},
		{
			name: "timestamp +0000",
			line: `{"timestamp":"2011-03-12T22:33:29.217918+0000","event_type":"alert","src_ip":"192.168.205.188","dest_ip":"192.168.26.201","proto":"TCP","alert":{"signature_id":2260002}}`,
			time: "2011-03-12T22:33:29.217918Z",
		},
		{
			name:   "flow id beyond float precision",
			line:   `{"timestamp":"2024-05-02T09:14:09.5+0000","flow_id":18446744073709551615,"event_type":"flow"}`,
			fields: map[string]any{"suricata.eve.flow_id": "18446744073709551615"},
		},
		{
			name: "anomaly",
			line: `{"timestamp":"2024-05-02T09:18:00Z","event_type":"anomaly","src_ip":"192.0.2.99","dest_ip":"198.51.100.1","proto":"UDP","anomaly":{"type":"decode","event":"decoder.ipv4.trunc_pkt"}}`,
			fields: map[string]any{
				"event.action": "decoder.ipv4.trunc_pkt", "suricata.eve.anomaly.type": "decode",
			},
		},
		{
			name: "stats",
			line: `{"timestamp":"2017-04-06T18:15:19.000142+0000","event_type":"stats","stats":{"uptime":8,"capture":{"kernel_packets":10,"kernel_drops":1},"decoder":{"pkts":5,"bytes":900,"invalid":0,"ipraw":{"x":1}},"detect":{"alert":2}}}`,
			fields: map[string]any{
				"event.kind": "metric", "suricata.eve.stats.uptime": int64(8),
				"suricata.eve.stats.capture.kernel_drops": int64(1), "suricata.eve.stats.decoder.bytes": int64(900),
				"suricata.eve.stats.detect.alert": int64(2), "source.ip": nil,
			},
		},
		{
			name: "unknown event type flattened, keys sorted",
			line: `{"dhcp":{"type":"reply","id":3735928559,"assigned_ip":"192.0.2.77","lease":{"time":86400,"renew":0.5},"dns_servers":["192.0.2.1","192.0.2.2"],"opts":[{"a":1}],"none":null},"event_type":"dhcp","src_ip":"192.0.2.1","timestamp":"2024-05-02T09:21:00Z"}`,
			fields: map[string]any{
				"suricata.eve.dhcp.type":        "reply",
				"suricata.eve.dhcp.id":          int64(3735928559),
				"suricata.eve.dhcp.lease.time":  int64(86400),
				"suricata.eve.dhcp.lease.renew": 0.5,
				"suricata.eve.dhcp.dns_servers": []string{"192.0.2.1", "192.0.2.2"},
				"suricata.eve.dhcp.opts":        nil,
				"suricata.eve.dhcp.none":        nil,
				"suricata.eve.event_type":       "dhcp",
				"event.kind":                    "event",
			},
		},
		{
			name: "syslog-wrapped",
			line: `Jan 30 10:29:41 ids01 suricata[2101]: {"timestamp":"2024-01-30T10:29:41.123456+0000","event_type":"http","src_ip":"192.0.2.10","dest_ip":"203.0.113.80","http":{"hostname":"intranet.example.com"}}`,
			time: "2024-01-30T10:29:41.123456Z",
			fields: map[string]any{
				"host.name": "ids01", "process.name": "suricata", "url.domain": "intranet.example.com",
			},
		},
		{
			name:   "invalid ip omitted",
			line:   `{"event_type":"flow","src_ip":"999.1.1.1","dest_ip":"fe80::1%eth0"}`,
			fields: map[string]any{"source.ip": nil, "destination.ip": "fe80::1%eth0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := []byte(tt.line)
			if tt.file != "" {
				line = datasetLine(t, tt.file, 1)
			}
			ev, ts, ok := parseSuricata(line, goldenRef)
			if !ok {
				t.Fatalf("not parsed: %s", line)
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

func TestParseSuricataRejects(t *testing.T) {
	tests := []struct{ name, line string }{
		{"empty", ""},
		{"not json", "hello world"},
		{"array", `[{"event_type":"alert"}]`},
		{"no event_type", `{"timestamp":"2017-01-30T16:12:26.985026+0100","src_ip":"192.0.2.1"}`},
		{"empty event_type", `{"event_type":""}`},
		{"truncated", `{"event_type":"alert","alert":{"signature":"x"`},
		{"trailing garbage", `{"event_type":"alert"} x`},
		{"trailing comma", `{"event_type":"alert",}`},
		{"bad escape", `{"event_type":"al\qert"}`},
		{"control char in string", "{\"event_type\":\"a\x01\"}"},
		{"bad number", `{"event_type":"alert","src_port":01}`},
		{"syslog without json", `Jan 30 10:29:41 ids01 suricata[2101]: engine started`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ev, _, ok := parseSuricata([]byte(tt.line), goldenRef); ok {
				t.Errorf("parsed %q: %v", tt.line, ev)
			}
		})
	}
}

func TestGolden_Suricata(t *testing.T) { checkGolden(t, "suricata", "suricata") }

// TestDatasetCoverage_Suricata parses every line of the shared Suricata
// datasets: at least 99 % must parse and carry suricata.eve.event_type
// and, for the event types about a flow (all but stats), both addresses.
func TestDatasetCoverage_Suricata(t *testing.T) {
	dir := filepath.Join(datasetDir, "suricata")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		t.Skipf("%s absent", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var total, parsed, good int
	for _, f := range files {
		var n, p, g int
		for _, line := range readLines(t, f) {
			n++
			r := Parse("suricata", line, goldenRef)
			if !r.Parsed {
				continue
			}
			p++
			et, _ := r.Event["suricata.eve.event_type"].(string)
			_, src := r.Event["source.ip"]
			_, dst := r.Event["destination.ip"]
			if et != "" && (et == "stats" || (src && dst)) {
				g++
			} else {
				t.Logf("  wrong fields: %.200s", line)
			}
		}
		t.Logf("%-45s lines %5d  parsed %6.2f%%  ecs %6.2f%%", filepath.Base(f), n, pct(p, n), pct(g, n))
		total, parsed, good = total+n, parsed+p, good+g
	}
	t.Logf("%-45s lines %5d  parsed %6.2f%%  ecs %6.2f%%", "ALL suricata", total, pct(parsed, total), pct(good, total))
	if pct(parsed, total) < 99 || pct(good, total) < 99 {
		t.Errorf("suricata: parsed %.2f%%, right ECS fields %.2f%%; want ≥ 99%%", pct(parsed, total), pct(good, total))
	}
}

func FuzzParseSuricata(f *testing.F) {
	for _, l := range readLines(f, filepath.Join("testdata", "suricata.input")) {
		f.Add(l)
	}
	f.Add([]byte(`{"event_type":"x","x":{"a":{"b":{"c":{"d":{"e":1}}}}}}`))
	f.Add([]byte(`{"event_type":"dns","dns":{"answers":[1,{"rdata":null}],"grouped":{"A":[{}]}}}`))
	f.Add([]byte(`{"event_type":"a\ud800","timestamp":"2017-02-30T10:00:00+9999"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, _, ok := parseSuricata(data, goldenRef)
		if !ok {
			return
		}
		checkEventValues(t, ev)
		if _, ok := ev["suricata.eve.event_type"].(string); !ok {
			t.Fatalf("parsed without event_type: %q", data)
		}
	})
}

func BenchmarkParseSuricata(b *testing.B) {
	benchmarkParser(b, parseSuricata, filepath.Join("testdata", "suricata.input"))
}

// benchmarkParser runs p over every line of file and reports lines/s.
func benchmarkParser(b *testing.B, p parserFunc, file string) {
	lines := readLines(b, file)
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	ref := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b.SetBytes(size / int64(len(lines)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		p(lines[n%len(lines)], ref)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

// TestParseHugeLines feeds 1 MiB lines of hostile shapes to both parsers:
// they must neither panic nor take more than linear time.
func TestParseHugeLines(t *testing.T) {
	const size = 1 << 20
	rep := func(s string) string { return strings.Repeat(s, size/len(s)) }
	tests := []struct{ name, line string }{
		{"nested arrays", `{"event_type":"x","x":` + rep("[") + `}`},
		{"many members", `{"event_type":"smb","smb":{` + strings.TrimSuffix(rep(`"k":1,`), ",") + `}}`},
		{"long string", `{"event_type":"alert","alert":{"signature":"` + rep("a") + `"}}`},
		{"escapes", `{"event_type":"alert","alert":{"signature":"` + rep(`\u00e9`) + `"}}`},
		{"many answers", `{"event_type":"dns","dns":{"type":"answer","answers":[` + strings.TrimSuffix(rep(`{"rrtype":"A","rdata":"192.0.2.1"},`), ",") + `]}}`},
		{"bind client", "client " + rep("1") + "#53 (" + rep("x") + "): query: x IN A +"},
		{"dnsmasq", "Jun 19 22:26:08 dnsmasq[830]: query[" + rep("A") + "] x from 192.0.2.1"},
		{"zeek tsv", "1521911720.8\t" + rep("\t")},
		{"spaces", rep(" ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if ev, _, ok := parseSuricata([]byte(tt.line), goldenRef); ok {
				checkEventValues(t, ev)
				if n := len(ev); n > 200 {
					t.Errorf("suricata: %d fields", n)
				}
			}
			if ev, _, ok := parseDNS([]byte(tt.line), goldenRef); ok {
				checkEventValues(t, ev)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
