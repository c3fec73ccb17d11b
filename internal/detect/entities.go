package detect

import (
	"net/netip"
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// Entities returns the nodes of one parsed event with the roles the
// detectors give them (docs/detections.md), for an observation that names
// the event's artifact without a detector: an analyst's finding. The nodes
// are those enrichment sees (parse.Nodes); the keys are the acting
// entities and indicators:
//   - the source (or client) address: the attacker, the scanning or
//     beaconing host. A local source (loopback, unspecified, or the
//     line's own destination: see sourceActor) names no one beyond the
//     host that logged the line, which is the key instead, as the
//     detectors key it;
//   - the destination (or server) address of traffic from inside the org
//     to outside it (internal says what inside is: the org's
//     internal_networks), the address an internal host beacons to, as
//     the Suricata detector keys a malware alert's destination;
//   - the domains looked up or contacted (dns.question.name, url.domain,
//     tls.client.server_name, destination.domain), the URLs and the file
//     hashes;
//   - the account user@host, added as a User node of its own, when the
//     event names a user and a host and has no remote address (a local
//     action: sudo, su, a console login, as the sudo detector keys it) or
//     succeeded from one (a compromised account, as the SSH-success
//     detector keys it).
//
// Everything else is context: the host that logged the line, the user
// names of a failed login from a remote address, the destination of
// inbound traffic, TLS fingerprints, addresses in answers.
func Entities(ev parse.Event, internal []netip.Prefix) []vigil.NodeRef {
	refs := parse.Nodes(ev)
	if len(refs) == 0 {
		return nil
	}
	type nodeKey struct{ typ, value string }
	keys := map[nodeKey]bool{}
	key := func(typ, v string) {
		for _, r := range node(typ, v, true) {
			keys[nodeKey{r.Type, r.Value}] = true
		}
	}

	host := str(ev, "host.name")
	src, srcOK := addr(ev, "source.ip")
	if !srcOK {
		src, srcOK = addr(ev, "client.ip")
	}
	remote := false // the event has a source address that names someone
	switch {
	case !srcOK:
	case localSource(ev, src):
		key(vigil.NodeHost, host)
	default:
		key(vigil.NodeIP, src.String())
		remote = true
	}
	if remote && inside(src, internal) {
		for _, f := range []string{"destination.ip", "server.ip"} {
			if dst, ok := addr(ev, f); ok && !inside(dst, internal) &&
				!dst.IsLoopback() && !dst.IsUnspecified() && !dst.IsMulticast() {
				key(vigil.NodeIP, dst.String())
			}
		}
	}
	for _, f := range []string{"dns.question.name", "url.domain", "tls.client.server_name", "destination.domain"} {
		key(vigil.NodeDomain, str(ev, f))
	}
	for _, f := range []string{"file.hash.md5", "file.hash.sha1", "file.hash.sha256"} {
		// Hash values are compared in lower case, as parse.Nodes gives them.
		key(vigil.NodeHash, strings.ToLower(str(ev, f)))
	}
	for _, r := range refs {
		if r.Type == vigil.NodeURL {
			keys[nodeKey{r.Type, r.Value}] = true
		}
	}
	if user := str(ev, "user.name"); user != "" && host != "" && (!remote || str(ev, "event.outcome") == "success") {
		refs = vigil.MergeNodeRefs(refs, node(vigil.NodeUser, userAtHost(user, host), true))
	}

	for i, r := range refs {
		if keys[nodeKey{r.Type, r.Value}] {
			refs[i].Key = true
		}
	}
	return refs
}

// addr returns the address in field f of ev, unmapped and without zone
// as parse.Nodes gives it.
func addr(ev parse.Event, f string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(str(ev, f)))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// inside reports whether a is in one of prefixes.
func inside(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
