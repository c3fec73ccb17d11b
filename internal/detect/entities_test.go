package detect

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

func TestEntities(t *testing.T) {
	internal := (&vigil.EnrichmentSettings{InternalNetworks: vigil.DefaultEnrichmentSettings().InternalNetworks}).InternalPrefixes()
	cases := []struct {
		name, source, raw string
		want              []string // "Type:value" of each node, a leading * for a key
	}{
		{"failed ssh login: the source is the key, the users tried and the host context", "auth",
			"Jun 14 15:16:01 web-1 sshd[1234]: Failed password for root from 203.0.113.50 port 4242 ssh2",
			[]string{"*IP:203.0.113.50", "Host:web-1", "User:root"}},
		{"accepted ssh login: the account is a key too", "auth",
			"Jun 14 15:16:01 web-1 sshd[1234]: Accepted password for alice from 203.0.113.50 port 4242 ssh2",
			[]string{"*IP:203.0.113.50", "Host:web-1", "User:alice", "*User:alice@web-1"}},
		{"sudo failure: a local action, the account is the key", "auth",
			"Jun 14 15:16:01 web-1 sudo: alice : 3 incorrect password attempts ; TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/sh",
			[]string{"Host:web-1", "User:alice", "User:root", "*User:alice@web-1"}},
		{"inbound traffic: the attacked server is context", "firewall",
			"Jun 14 15:16:01 fw kernel: [UFW BLOCK] IN=eth0 OUT= SRC=198.51.100.9 DST=10.0.0.5 PROTO=TCP SPT=5555 DPT=23",
			[]string{"*IP:198.51.100.9", "IP:10.0.0.5", "Host:fw"}},
		{"outbound traffic: the outside address is a key", "firewall",
			"Jun 14 15:16:01 fw kernel: [UFW ALLOW] IN= OUT=eth0 SRC=10.0.0.7 DST=198.51.100.200 PROTO=TCP SPT=5555 DPT=443",
			[]string{"*IP:10.0.0.7", "*IP:198.51.100.200", "Host:fw"}},
		{"internal traffic: the destination is context", "firewall",
			"Jun 14 15:16:01 fw kernel: [UFW ALLOW] IN= OUT=eth0 SRC=10.0.0.7 DST=10.0.0.9 PROTO=TCP SPT=5555 DPT=445",
			[]string{"*IP:10.0.0.7", "IP:10.0.0.9", "Host:fw"}},
		{"dns look-up: the client and the name are keys, the resolver context", "dns",
			`{"ts":1718378161.0,"uid":"C1","id.orig_h":"10.0.0.7","id.orig_p":5353,"id.resp_h":"10.0.0.1","id.resp_p":53,"proto":"udp","query":"Evil.Example.COM","qtype_name":"A"}`,
			[]string{"*IP:10.0.0.7", "IP:10.0.0.1", "*Domain:evil.example.com"}},
		{"file hashes are keys, in lower case", "suricata",
			`{"timestamp":"2024-05-01T10:00:00.000000+0000","event_type":"fileinfo","src_ip":"198.51.100.9","dest_ip":"10.0.0.5","fileinfo":{"filename":"x.exe","md5":"D41D8CD98F00B204E9800998ECF8427E"}}`,
			[]string{"*IP:198.51.100.9", "IP:10.0.0.5", "*Hash:d41d8cd98f00b204e9800998ecf8427e"}},
		{"a mapped address is unmapped; a URL is a key", "custom",
			`{"source":{"ip":"::ffff:203.0.113.9"},"url":{"full":"http://evil.example.com/x"}}`,
			[]string{"*IP:203.0.113.9", "*URL:http://evil.example.com/x"}},
		{"a loopback client names no one: the host is the key", "custom",
			`{"source":{"ip":"127.0.0.1"},"host":{"name":"Web-2"},"dns":{"question":{"name":"x.example.org"}}}`,
			[]string{"IP:127.0.0.1", "*Domain:x.example.org", "*Host:web-2"}},
		{"a line naming nothing", "custom", "hello world", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := parse.Parse(tc.source, []byte(tc.raw), time.Date(2024, 6, 14, 0, 0, 0, 0, time.UTC)).Event
			var got []string
			for _, r := range Entities(ev, internal) {
				s := r.Type + ":" + r.Value
				if r.Key {
					s = "*" + s
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Entities = %v\nwant       %v\n(event %v)", got, tc.want, ev)
			}
		})
	}
	t.Run("without internal networks no destination is a key", func(t *testing.T) {
		ev := parse.Parse("firewall", []byte("Jun 14 15:16:01 fw kernel: [UFW ALLOW] IN= OUT=eth0 SRC=10.0.0.7 DST=198.51.100.200 PROTO=TCP SPT=5555 DPT=443"), time.Now()).Event
		for _, r := range Entities(ev, []netip.Prefix{}) {
			if r.Value == "198.51.100.200" && r.Key {
				t.Errorf("destination %s is a key with no internal networks", r.Value)
			}
		}
	})
}

// TestNormalizeNodeValueAgreesWithParse: a node named through the API and
// the same entity found by a parser are one node, so NormalizeNodeValue
// gives the parsers' canonical form (parse.Nodes) of every valid value.
func TestNormalizeNodeValueAgreesWithParse(t *testing.T) {
	cases := []struct{ field, typ, value string }{
		{"source.ip", vigil.NodeIP, "203.0.113.7"},
		{"source.ip", vigil.NodeIP, " ::ffff:203.0.113.7 "},
		{"source.ip", vigil.NodeIP, "2001:DB8:0:0::1"},
		{"source.ip", vigil.NodeIP, "fe80::1%eth0"},
		{"dns.question.name", vigil.NodeDomain, "Evil.Example.COM."},
		{"dns.question.name", vigil.NodeDomain, "_dmarc.example.org"},
		{"host.name", vigil.NodeHost, "WEB-1.corp.local."},
		{"user.name", vigil.NodeUser, "Alice"},
		{"file.hash.sha256", vigil.NodeHash, strings.ToUpper("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")},
		{"url.full", vigil.NodeURL, "https://Evil.example.com/Path?q=1"},
	}
	for _, tc := range cases {
		t.Run(tc.typ+" "+tc.value, func(t *testing.T) {
			got, issue := vigil.NormalizeNodeValue(tc.typ, tc.value)
			if issue != "" {
				t.Fatalf("NormalizeNodeValue(%s, %q): %s", tc.typ, tc.value, issue)
			}
			refs := parse.Nodes(parse.Event{tc.field: tc.value})
			if len(refs) != 1 || refs[0].Type != tc.typ || refs[0].Value != got {
				t.Errorf("NormalizeNodeValue(%s, %q) = %q, parse.Nodes gives %v", tc.typ, tc.value, got, refs)
			}
		})
	}
}
