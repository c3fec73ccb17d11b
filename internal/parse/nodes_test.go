package parse

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

func TestNodeOf(t *testing.T) {
	tests := []struct {
		name, typ, value string
		wantTyp, want    string // want "" for no node
	}{
		{"address", vigil.NodeIP, "::ffff:192.0.2.1", vigil.NodeIP, "192.0.2.1"},
		{"not an address", vigil.NodeIP, "192.030.0.6", vigil.NodeIP, ""},
		{"domain", vigil.NodeDomain, "WWW.Example.COM.", vigil.NodeDomain, "www.example.com"},
		{"an address in a domain field", vigil.NodeDomain, "127.0.0.1", vigil.NodeIP, "127.0.0.1"},
		{"an IPv6 address with a zone", vigil.NodeDomain, "fe80::1%eth0", vigil.NodeIP, "fe80::1"},
		{"a bracketed address with a port", vigil.NodeDomain, "[2001:db8::7]:8443", vigil.NodeIP, "2001:db8::7"},
		{"a bracketed address", vigil.NodeDomain, "[::1]", vigil.NodeIP, "::1"},
		{"an address with a port", vigil.NodeDomain, "192.0.2.1:8080", vigil.NodeIP, "192.0.2.1"},
		{"a Host header with a port", vigil.NodeDomain, "example.com:8080", vigil.NodeDomain, "example.com"},
		{"a service name", vigil.NodeDomain, "_ldap._tcp.dc._msdcs.example.com", vigil.NodeDomain, "_ldap._tcp.dc._msdcs.example.com"},
		{"a reverse look-up name", vigil.NodeDomain, "4.3.2.1.in-addr.arpa", vigil.NodeDomain, "4.3.2.1.in-addr.arpa"},
		{"an internationalized name", vigil.NodeDomain, "Bücher.example", vigil.NodeDomain, "xn--bcher-kva.example"},
		{"NBSTAT's wildcard", vigil.NodeDomain, "*", vigil.NodeDomain, ""},
		{"an empty label", vigil.NodeDomain, "a..example.com", vigil.NodeDomain, ""},
		{"spaces", vigil.NodeDomain, "not a name", vigil.NodeDomain, ""},
		{"a label too long", vigil.NodeDomain, strings.Repeat("a", 64) + ".example.com", vigil.NodeDomain, ""},
		{"a bad port", vigil.NodeDomain, "example.com:99999", vigil.NodeDomain, ""},
		{"a host", vigil.NodeHost, "Web-01.", vigil.NodeHost, "web-01"},
		{"a host that is an address", vigil.NodeHost, "10.0.0.5", vigil.NodeIP, "10.0.0.5"},
		{"a placeholder", vigil.NodeUser, "-", vigil.NodeUser, ""},
		{"a hash", vigil.NodeHash, "D41D8CD98F00B204E9800998ECF8427E", vigil.NodeHash, "d41d8cd98f00b204e9800998ecf8427e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, v := NodeOf(tt.typ, tt.value)
			if v != tt.want || (v != "" && typ != tt.wantTyp) {
				t.Errorf("NodeOf(%s, %q) = %s %q, want %s %q", tt.typ, tt.value, typ, v, tt.wantTyp, tt.want)
			}
		})
	}
}

// TestNodesTyped: the nodes of real lines — an address is an IP node in
// whichever field it appears.
func TestNodesTyped(t *testing.T) {
	tests := []struct {
		name, source, line string
		want, not          []string // "Type:value"
	}{
		// maccdc2012-eve_small.json: an HTTP Host header of an address.
		{"HTTP host", "suricata", `{"timestamp":"2011-03-12T22:33:48.208797+0000","flow_id":1779305978528824,"pcap_cnt":56572,"event_type":"fileinfo","vlan":120,"src_ip":"192.168.202.75","src_port":43104,"dest_ip":"192.168.21.201","dest_port":80,"proto":"TCP","http":{"hostname":"192.168.21.201","url":"\/phppgadmin\/tables.php"}}`,
			[]string{"IP:192.168.21.201", "IP:192.168.202.75"}, []string{"Domain:192.168.21.201"}},
		{"TLS server name of an address", "suricata", `{"timestamp":"2026-06-27T08:13:26.024477-0400","flow_id":1,"event_type":"tls","src_ip":"203.0.113.20","src_port":46926,"dest_ip":"198.51.100.10","dest_port":443,"proto":"TCP","tls":{"sni":"198.51.100.10","version":"TLS 1.2"}}`,
			[]string{"IP:198.51.100.10"}, []string{"Domain:198.51.100.10"}},
		// dnsmasq-hotspot.log: an answer from the configuration.
		{"DNS answer", "dns", "Jun 19 17:20:05 dnsmasq[2271]: config connectivitycheck.gstatic.com is 192.168.0.164",
			[]string{"IP:192.168.0.164", "Domain:connectivitycheck.gstatic.com"}, nil},
		{"a question that is an address", "dns", "Jun 19 17:20:05 dnsmasq[2271]: query[A] 192.0.2.7 from 192.168.0.20",
			[]string{"IP:192.0.2.7", "IP:192.168.0.20"}, []string{"Domain:192.0.2.7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse(tt.source, []byte(tt.line), goldenRef)
			var got []string
			for _, n := range Nodes(r.Event) {
				got = append(got, n.Type+":"+n.Value)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("nodes %v lack %s", got, w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got, n) {
					t.Errorf("nodes %v hold %s", got, n)
				}
			}
		})
	}
}

// TestNodesOfDatasets: every Domain node of the real logs is a valid
// domain name, and no value of one is an address.
func TestNodesOfDatasets(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "datasets")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no datasets: %v", err)
	}
	for dir, source := range map[string]string{"auth": "auth", "dns": "dns", "firewall": "firewall", "suricata": "suricata"} {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*"))
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			domains := 0
			for sc.Scan() {
				for _, n := range Nodes(Parse(source, sc.Bytes(), goldenRef).Event) {
					if n.Type != vigil.NodeDomain {
						continue
					}
					domains++
					if v, issue := vigil.NormalizeNodeValue(vigil.NodeDomain, n.Value); issue != "" || v != n.Value {
						t.Errorf("%s: Domain node %q: %s", filepath.Base(file), n.Value, issue)
					}
				}
			}
			f.Close()
			t.Logf("%s: %d Domain nodes", filepath.Base(file), domains)
		}
	}
}

// TestNodesManyValues: an event whose array names thousands of nodes
// (related.ip of a _bulk document), each twice, gives each once, in the
// array's order, past the few Nodes looks through without a set.
func TestNodesManyValues(t *testing.T) {
	var ips []string
	for i := range 10000 {
		ips = append(ips, fmt.Sprintf("10.%d.%d.1", i/256, i%256))
	}
	ev := Event{"related.ip": append(slices.Clone(ips), ips...), "source.ip": ips[20]}
	got := Nodes(ev)
	if len(got) != len(ips) {
		t.Fatalf("%d nodes, want %d", len(got), len(ips))
	}
	if got[0].Value != ips[20] {
		t.Fatalf("first node %v, want source.ip %s", got[0], ips[20])
	}
	want := append([]string{ips[20]}, slices.Delete(slices.Clone(ips), 20, 21)...)
	for i, n := range got {
		if n.Type != vigil.NodeIP || n.Value != want[i] {
			t.Fatalf("node %d is %v, want IP %s", i, n, want[i])
		}
	}
}

func BenchmarkNodesManyValues(b *testing.B) {
	var ips []string
	for i := range 10000 {
		ips = append(ips, fmt.Sprintf("10.%d.%d.1", i/256, i%256))
	}
	ev := Event{"related.ip": ips}
	for b.Loop() {
		Nodes(ev)
	}
}
