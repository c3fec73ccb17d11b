package vigil

import (
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Node types: the entities that link observations into incidents.
const (
	NodeIP     = "IP"
	NodeDomain = "Domain"
	NodeHost   = "Host"
	NodeUser   = "User"
	NodeHash   = "Hash"
	NodeURL    = "URL"
)

// ValidNodeType reports whether t is a known node type.
func ValidNodeType(t string) bool {
	switch t {
	case NodeIP, NodeDomain, NodeHost, NodeUser, NodeHash, NodeURL:
		return true
	}
	return false
}

// Node is one entity of an organization, unique per (org, type, value).
type Node struct {
	ID    string `json:"id"`
	OrgID string `json:"-"`
	Type  string `json:"type"`
	Value string `json:"value"`
	// Key is the node's role in an incident (true: it may join
	// observations to it; false: context); set only in the nodes of the
	// single-incident response.
	Key *bool `json:"key,omitempty"`
	// Count is, for a source of a roll-up in its single-incident
	// response, what it did there (RollupSource.Count).
	Count int `json:"count,omitempty"`
	// CreatedAt is when the org first named the node (first seen); filled
	// by GetNode and ListNodes only.
	CreatedAt time.Time `json:"-"`
}

// NodeRef names a node by type and value, with its role in an observation:
// a key node joins observations into one incident, a context node is only
// recorded, so that two attackers hitting the same server stay two
// incidents (docs/detections.md, Correlation).
type NodeRef struct {
	Type  string `json:"type"`
	Value string `json:"value"`
	Key   bool   `json:"key"`
}

// AccountSID is a Windows account as one event names it, its User node
// value (DOMAIN\user in lower case), with the account's security
// identifier: the forms one account takes in different events join by it
// (NodeStore.JoinAccounts).
type AccountSID struct {
	SID     string
	Account string
}

// NodeFilter selects nodes of one org.
type NodeFilter struct {
	// Type keeps the nodes of one type; "" keeps all.
	Type string
	// Match keeps the nodes whose (type, value) is one of these, compared
	// exactly: a value looked up under each type it is valid for.
	Match []NodeRef
	// Prefix keeps the nodes whose value starts with it (bytes, case
	// sensitive: values are stored normalized, see NormalizeNodeValue).
	Prefix string
	Page   Page
}

// PrefixEnd returns the least string greater than every string starting
// with prefix, for a range scan value >= prefix AND value < end over a
// column compared by bytes: prefix with its last rune incremented (UTF-8
// keeps code point order in byte order, so end stays valid UTF-8 and
// PostgreSQL accepts it). ok is false when there is no such bound.
func PrefixEnd(prefix string) (end string, ok bool) {
	rs := []rune(prefix)
	for i := len(rs) - 1; i >= 0; i-- {
		switch next := rs[i] + 1; {
		case next == 0xD800: // surrogates have no UTF-8 form
			rs[i] = 0xE000
		case next <= unicode.MaxRune:
			rs[i] = next
		default:
			continue
		}
		return string(rs[:i+1]), true
	}
	return "", false
}

// Limits of node values named through the API.
const (
	MaxNodeValueLen = 2048
	// MaxNodesPerRequest bounds the nodes an observation may name by value.
	MaxNodesPerRequest = 100
)

// NormalizeNodeValue validates a node value named by a person (the API)
// and returns it in the canonical form the parsers and detectors give the
// same entity, so that both name one node: an IP address in its canonical
// text (IPv4-mapped IPv6 unmapped, zone dropped), domains and hosts in
// lower case without a trailing dot, hashes in lower case. The issue is
// "" when v is valid for typ.
func NormalizeNodeValue(typ, v string) (value, issue string) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", "must not be empty"
	case len(v) > MaxNodeValueLen:
		return "", "must be at most 2048 bytes"
	case !utf8.ValidString(v):
		return "", "must be valid UTF-8"
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return "", "must not contain control characters"
		}
	}
	switch typ {
	case NodeIP:
		a, err := netip.ParseAddr(v)
		if err != nil {
			return "", "must be an IPv4 or IPv6 address"
		}
		return a.Unmap().WithZone("").String(), ""
	case NodeDomain:
		v = strings.ToLower(strings.TrimSuffix(v, "."))
		if _, err := netip.ParseAddr(v); err == nil {
			return "", "must be a domain name, not an address (use type IP)"
		}
		if !dnsName(v) {
			return "", "must be a domain name: labels of 1..63 letters, digits, '-' or '_', at most 253 characters (internationalized names in their xn-- form)"
		}
		return v, ""
	case NodeHost:
		v = strings.ToLower(strings.TrimSuffix(v, "."))
		if v == "" || len(v) > 255 || strings.ContainsFunc(v, unicode.IsSpace) {
			return "", "must be a host name of 1..255 characters without spaces"
		}
		return v, ""
	case NodeUser:
		if len(v) > 256 {
			return "", "must be at most 256 bytes"
		}
		return v, ""
	case NodeHash:
		v = strings.ToLower(v)
		switch len(v) {
		case 32, 40, 56, 64, 96, 128: // MD5 (and JA3), SHA-1, SHA-224, SHA-256, SHA-384, SHA-512
		default:
			return "", "must be a hex MD5, SHA-1 or SHA-2 digest (32, 40, 56, 64, 96 or 128 hex digits)"
		}
		if strings.Trim(v, "0123456789abcdef") != "" {
			return "", "must be a hex MD5, SHA-1 or SHA-2 digest (32, 40, 56, 64, 96 or 128 hex digits)"
		}
		return v, ""
	case NodeURL:
		u, err := url.Parse(v)
		if err != nil || u.Scheme == "" || u.Host == "" || strings.ContainsFunc(v, unicode.IsSpace) {
			return "", "must be an absolute URL with a scheme and a host"
		}
		return v, ""
	}
	return "", "unknown node type"
}

// dnsName reports whether s (lower case) is a syntactically valid DNS
// name: dot-separated labels of 1..63 of [a-z0-9_-], at most 253 in all.
// Underscores are allowed for service labels (_dmarc, _ldap._tcp).
func dnsName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) == 0 || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// MergeNodeRefs returns the distinct nodes of lists in first-seen order;
// a node is a key if any list names it as one.
func MergeNodeRefs(lists ...[]NodeRef) []NodeRef {
	var out []NodeRef
	idx := map[[2]string]int{}
	for _, l := range lists {
		for _, n := range l {
			k := [2]string{n.Type, n.Value}
			if i, ok := idx[k]; ok {
				out[i].Key = out[i].Key || n.Key
				continue
			}
			idx[k] = len(out)
			out = append(out, n)
		}
	}
	return out
}

// AddNodes appends to ids the ids of nodes not already in it, and adds to
// keys the nodes whose ref (refs[i] named nodes[i]) is a key. It returns
// the new ids.
func AddNodes(ids []string, keys map[string]bool, nodes []Node, refs []NodeRef) []string {
	have := make(map[string]bool, len(ids)+len(nodes))
	for _, id := range ids {
		have[id] = true
	}
	for i, n := range nodes {
		if !have[n.ID] {
			have[n.ID] = true
			ids = append(ids, n.ID)
		}
		if i < len(refs) && refs[i].Key {
			keys[n.ID] = true
		}
	}
	return ids
}
