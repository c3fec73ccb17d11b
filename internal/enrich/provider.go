package enrich

import (
	"context"
	"encoding/json"
	"net/netip"

	"github.com/vigil-soc/vigil"
)

// provider is one source of enrichment, each in its own file: geoip.go,
// intel.go, dns.go, rdap.go. Adding one means writing its file, listing
// it in New, and giving its answer a field in nodeInfo.
type provider interface {
	// name labels the provider's metrics and keys its cached look-ups.
	name() string
	// enabled reports whether an org's settings turn the provider on.
	enabled(s *vigil.EnrichmentSettings) bool
	// begin returns the provider's part of one enrichment pass, or nil
	// when it has nothing to add (no database or feed loaded). A pass
	// sees one version of the provider's data from begin to its end.
	begin() step
}

// outboundProvider is a provider whose answers come from a server: a pass
// only uses what the cache holds (pass.cached) and notes the rest as
// look-ups, which the workers send with lookup under the org's rate limit
// and cache.
type outboundProvider interface {
	provider
	// lookup asks the server about key, as the provider's step named it.
	lookup(ctx context.Context, key string) (json.RawMessage, error)
}

// step adds to out what a provider knows of t and returns the local
// look-ups it made (vigil_enrich_lookups_total; outbound look-ups are
// counted when sent).
type step func(p *pass, out *nodeOutcome, t *target) int

// target is a node value as the providers see it, parsed once per pass.
type target struct {
	kind  string // the node type
	value string // the node value as given
	// addr is an IP node's address, or a URL node's host when that is an
	// address; domain is a Domain node's name, or a URL node's host when
	// that is a name (normalized); url is a URL node's canonical form (""
	// when it does not parse).
	addr   netip.Addr
	domain string
	url    string
	public bool // addr is publicly routable
	// own: an IP or Domain node, not a URL's host (which is matched and
	// located but never sent: when it matters it is a node of its own).
	own bool
	// sendable and key: what sendKey decided, once asked.
	sendable sendable
	key      string
}

type sendable uint8

const (
	sendUnknown sendable = iota
	sendNo
	sendYes
)

// sendKey returns the value outbound providers may send for t — the
// address in canonical form, or the name — or false when it must not
// leave. Private, reserved and the org's own addresses never do; nor do
// names outside the ICANN suffixes (host.corp.local), which the public
// DNS and the registries do not know. It is decided on first use: with
// no outbound provider on, a pass never pays for it.
func (p *pass) sendKey(t *target) (string, bool) {
	if t.sendable == sendUnknown {
		t.sendable = sendNo
		switch {
		case !t.own:
		case t.addr.IsValid():
			if t.public && !containedIn(t.addr, p.internal) {
				t.sendable, t.key = sendYes, t.addr.String()
			}
		case icannDomain(t.domain):
			t.sendable, t.key = sendYes, t.domain
		}
	}
	return t.key, t.sendable == sendYes
}

// parseTarget parses ref into t for the providers; false: nothing can be
// said of it (an unknown node type, an address or name that does not
// parse).
func parseTarget(t *target, ref vigil.NodeRef) bool {
	*t = target{kind: ref.Type, value: ref.Value}
	switch ref.Type {
	case vigil.NodeIP:
		a, err := netip.ParseAddr(ref.Value)
		if err != nil {
			return false
		}
		t.addr = a.Unmap()
		t.public = isPublic(t.addr)
		t.own = true
	case vigil.NodeDomain:
		if t.domain = normDomain(ref.Value); t.domain == "" {
			return false
		}
		t.own = true
	case vigil.NodeURL:
		var host string
		t.url, host = parseURL(ref.Value)
		if t.addr, t.domain = hostOf(host); t.addr.IsValid() {
			t.public = isPublic(t.addr)
		}
	case vigil.NodeHash:
	default:
		return false
	}
	return true
}
