package vigil_test

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

func TestNormalizeNodeValue(t *testing.T) {
	sha256 := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	tests := []struct {
		name, typ, value string
		want             string // "" when invalid
	}{
		{"IPv4", vigil.NodeIP, "203.0.113.7", "203.0.113.7"},
		{"IPv4 with spaces", vigil.NodeIP, " 203.0.113.7\t", "203.0.113.7"},
		{"IPv4-mapped IPv6", vigil.NodeIP, "::ffff:203.0.113.7", "203.0.113.7"},
		{"IPv6 canonical", vigil.NodeIP, "2001:DB8:0000::0001", "2001:db8::1"},
		{"IPv6 zone dropped", vigil.NodeIP, "fe80::1%eth0", "fe80::1"},
		{"IPv4 octet too big", vigil.NodeIP, "203.0.113.300", ""},
		{"IPv4 leading zero", vigil.NodeIP, "203.0.113.07", ""},
		{"IP with port", vigil.NodeIP, "203.0.113.7:22", ""},
		{"CIDR is not an address", vigil.NodeIP, "203.0.113.0/24", ""},
		{"IP a name", vigil.NodeIP, "evil.example.com", ""},
		{"domain lower case, no trailing dot", vigil.NodeDomain, "Evil.Example.COM.", "evil.example.com"},
		{"domain single label", vigil.NodeDomain, "wpad", "wpad"},
		{"domain service label", vigil.NodeDomain, "_ldap._tcp.corp.example", "_ldap._tcp.corp.example"},
		{"domain punycode", vigil.NodeDomain, "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"domain an address", vigil.NodeDomain, "203.0.113.7", ""},
		{"domain with space", vigil.NodeDomain, "evil example.com", ""},
		{"domain empty label", vigil.NodeDomain, "evil..example.com", ""},
		{"domain label of 64", vigil.NodeDomain, strings.Repeat("a", 64) + ".com", ""},
		{"domain over 253", vigil.NodeDomain, strings.Repeat("abcdefghi.", 26) + "com", ""},
		{"domain unicode", vigil.NodeDomain, "bücher.example", ""},
		{"domain a URL", vigil.NodeDomain, "http://evil.example.com/", ""},
		{"host lower case", vigil.NodeHost, "WEB-1.corp.local.", "web-1.corp.local"},
		{"host with space", vigil.NodeHost, "web 1", ""},
		{"user keeps case", vigil.NodeUser, "Alice", "Alice"},
		{"user account form", vigil.NodeUser, "alice@web-1", "alice@web-1"},
		{"user over 256", vigil.NodeUser, strings.Repeat("u", 257), ""},
		{"hash lower case", vigil.NodeHash, strings.ToUpper(sha256), sha256},
		{"hash md5", vigil.NodeHash, "d41d8cd98f00b204e9800998ecf8427e", "d41d8cd98f00b204e9800998ecf8427e"},
		{"hash odd length", vigil.NodeHash, sha256[:63], ""},
		{"hash not hex", vigil.NodeHash, "z" + sha256[1:], ""},
		{"URL", vigil.NodeURL, "https://evil.example.com/x?y=1", "https://evil.example.com/x?y=1"},
		{"URL relative", vigil.NodeURL, "/index.php", ""},
		{"URL without scheme", vigil.NodeURL, "evil.example.com/x", ""},
		{"URL with space", vigil.NodeURL, "http://evil.example.com/a b", ""},
		{"empty", vigil.NodeUser, "  ", ""},
		{"control character", vigil.NodeUser, "ali\x00ce", ""},
		{"invalid UTF-8", vigil.NodeUser, "ali\xffce", ""},
		{"over 2048 bytes", vigil.NodeURL, "http://e.example/" + strings.Repeat("a", 2048), ""},
		{"unknown type", "Planet", "mars", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, issue := vigil.NormalizeNodeValue(tc.typ, tc.value)
			switch {
			case tc.want == "" && issue == "":
				t.Errorf("NormalizeNodeValue(%s, %q) = %q, want an issue", tc.typ, tc.value, got)
			case tc.want != "" && (issue != "" || got != tc.want):
				t.Errorf("NormalizeNodeValue(%s, %q) = %q, %q; want %q", tc.typ, tc.value, got, issue, tc.want)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		prefix, want string
		ok           bool
	}{
		{"203.0.113.", "203.0.113/", true},
		{"a", "b", true},
		{"zoë", "zoì", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF\U0010FFFF", "", false},
		{"\uD7FF", "\uE000", true}, // past the surrogates
	}
	for _, tc := range tests {
		got, ok := vigil.PrefixEnd(tc.prefix)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PrefixEnd(%q) = %q, %v; want %q, %v", tc.prefix, got, ok, tc.want, tc.ok)
		}
		// Every string with the prefix sorts below the end.
		if ok && !(tc.prefix+"\U0010FFFF\U0010FFFF" < got) {
			t.Errorf("PrefixEnd(%q) = %q is not above %q", tc.prefix, got, tc.prefix+"\U0010FFFF")
		}
	}
}

func TestMergeNodeRefs(t *testing.T) {
	ip := vigil.NodeRef{Type: vigil.NodeIP, Value: "203.0.113.7"}
	host := vigil.NodeRef{Type: vigil.NodeHost, Value: "web-1"}
	keyIP := ip
	keyIP.Key = true
	got := vigil.MergeNodeRefs([]vigil.NodeRef{ip, host}, []vigil.NodeRef{host, keyIP})
	want := []vigil.NodeRef{keyIP, host}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("MergeNodeRefs = %v, want %v (first-seen order, a key if any names it one)", got, want)
	}
}
