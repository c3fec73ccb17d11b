package detect

import (
	"net/netip"
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// What the detectors do with a local source: an address of the host that
// logged the line. A loopback or unspecified address, or a source that is
// the line's own destination (a host talking to itself through its own
// address), names no one beyond that host: 127.0.0.1 on one server is
// not 127.0.0.1 on another, and keyed by its address it would join every
// host's incidents. Every detector treats such a source alike (set with
// --detect local_sources=):
const (
	// LocalReport (the default) detects what local sources do, each
	// keyed by the address on the host that logged it ("127.0.0.1 on
	// web-01"), the host as the key node and the address as context:
	// a brute force, a port scan and DGA look-ups from one host's
	// loopback are one actor, that host.
	LocalReport = "report"
	// LocalIgnore drops every signal of a local source, as fail2ban's
	// ignoreself and CrowdSec's loopback whitelist do.
	LocalIgnore = "ignore"
)

// actor is who acted on a line, as detectors key and name it.
type actor struct {
	// key is what the detection counts under: the address, or for a
	// local source "ADDRESS on HOST".
	key string
	// nodes are the key node (the address, or the host of a local
	// source) and, for a local source, the address as context.
	nodes []vigil.NodeRef
	local bool
}

// sourceActor returns the actor of a line whose acting address is addr
// (a source or client address), or false when addr is no address or the
// policy ignores local sources. The line's destination address, when
// equal to addr, makes addr local too.
func sourceActor(f parse.Event, addr, policy string) (actor, bool) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return actor{}, false
	}
	a = a.Unmap().WithZone("")
	ip := a.String()
	if !localSource(f, a) {
		return actor{key: ip, nodes: node(vigil.NodeIP, ip, true)}, true
	}
	if policy == LocalIgnore {
		return actor{}, false
	}
	host := str(f, "host.name")
	if hostRefs := node(vigil.NodeHost, host, true); len(hostRefs) > 0 {
		return actor{key: ip + " on " + hostRefs[0].Value, nodes: nodes(hostRefs, node(vigil.NodeIP, ip, false)), local: true}, true
	}
	// A line that names no host leaves the address as the only name
	// of the actor.
	return actor{key: ip, nodes: node(vigil.NodeIP, ip, true), local: true}, true
}

// SourceKey returns how the detectors key an event's acting address addr
// (its source or client address), for detectors outside this package
// (the Sigma rules): the key ("ADDRESS", or "ADDRESS on HOST" for a local
// source) and its nodes (the key node, and for a local source the
// address as context). It is false when addr is no address or policy
// ignores local sources.
func SourceKey(f parse.Event, addr, policy string) (key string, nodes []vigil.NodeRef, ok bool) {
	a, ok := sourceActor(f, addr, policy)
	return a.key, a.nodes, ok
}

// localSource reports whether a, the acting address of f, is the host's
// own: loopback, unspecified, or f's own destination address.
func localSource(f parse.Event, a netip.Addr) bool {
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	for _, k := range []string{"destination.ip", "server.ip"} {
		if d, err := netip.ParseAddr(str(f, k)); err == nil && d.Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}

// validLocalPolicy reports whether p names a policy.
func validLocalPolicy(p string) bool { return p == "" || p == LocalReport || p == LocalIgnore }

// actorAddr returns the address of an actor's key: the key itself, or
// ADDRESS of "ADDRESS on HOST".
func actorAddr(key string) string {
	addr, _, _ := strings.Cut(key, " on ")
	return addr
}
