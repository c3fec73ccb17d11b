package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/vigil-soc/vigil"
)

// Policy says where deliveries may go. By default only https:// URLs, to
// public addresses: a subscription must not make Vigil reach what sits
// beside it (its database, a cloud's metadata service, an admin
// interface on the loopback). Operators widen it with flags.
type Policy struct {
	// AllowHTTPHosts are the host names (or address literals) that may
	// be reached over plain http://.
	AllowHTTPHosts []string
	// AllowNetworks are networks deliveries may reach although they are
	// refused by default (a receiver on the loopback or the LAN).
	AllowNetworks []netip.Prefix
}

// refused are the networks no delivery reaches unless AllowNetworks
// names them, and why.
var refused = []struct {
	net    netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64, which reaches IPv4 addresses"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64, which reaches IPv4 addresses"},
	{netip.MustParsePrefix("2002::/16"), "6to4, which reaches IPv4 addresses"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (cloud metadata fd00:ec2::254)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// CheckAddr returns an error saying why ip may not be reached, or nil.
func (p Policy) CheckAddr(ip netip.Addr) error {
	// A zone ("fe80::1%eth0") would make every prefix miss it.
	ip = embeddedIPv4(ip.Unmap().WithZone(""))
	for _, n := range p.AllowNetworks {
		if n.Contains(ip) {
			return nil
		}
	}
	for _, r := range refused {
		if r.net.Contains(ip) {
			return fmt.Errorf("address %s is %s; an operator may allow it with --webhook-allow-networks", ip, r.reason)
		}
	}
	return nil
}

// control refuses, when the connection is about to be made, an address
// the policy refuses: whatever a name resolved to at that moment (DNS
// rebinding cannot slip a private address past the check at creation).
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("webhook: dial %q: %w", address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("webhook: dial %q: not an address", address)
	}
	if err := p.CheckAddr(ip); err != nil {
		return &refusedError{err}
	}
	return nil
}

// refusedError is a connection the policy refused.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "refused by the webhook policy: " + e.err.Error() }

// Client returns the HTTP client deliveries use: each request bounded by
// timeout, connections only to addresses the policy allows (checked at
// connect time), no proxy (a proxy would connect on its behalf, past the
// check), redirects not followed (a 3xx is a failed attempt).
func (p Policy) Client(timeout time.Duration, tlsConfig *tls.Config) *http.Client {
	d := &net.Dialer{Timeout: timeout, Control: p.control}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			TLSClientConfig:       tlsConfig,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL returns an error, a 400 naming field url, unless raw is a URL
// deliveries may go to: absolute https:// (or http:// to a host in
// AllowHTTPHosts), no user info, no fragment, a host that is not a
// refused address in any of the forms resolvers read (hostAddr), and,
// when the name resolves now, to none.
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	bad := func(issue string) error { return vigil.InvalidField("url", issue) }
	if raw == "" {
		return bad("is required")
	}
	if len(raw) > vigil.MaxWebhookURLLen {
		return bad(fmt.Sprintf("must be at most %d bytes", vigil.MaxWebhookURLLen))
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return bad("must not contain spaces or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return bad("must be an absolute https:// URL")
	}
	// A trailing dot names the same host ("localhost." is localhost).
	host := strings.TrimRight(strings.ToLower(u.Hostname()), ".")
	switch u.Scheme {
	case "https":
	case "http":
		if !slices.ContainsFunc(p.AllowHTTPHosts, func(h string) bool { return strings.EqualFold(h, host) }) {
			return bad("must be https://; http:// only to hosts an operator allows with --webhook-allow-http-hosts")
		}
	default:
		return bad("must be an https:// URL")
	}
	if u.User != nil {
		return bad("must not hold a user name or password; authenticate the deliveries by their signature")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return bad("must not have a fragment")
	}
	if host == "" {
		return bad("must name a host")
	}
	if port := u.Port(); port != "" {
		if n, err := netip.ParseAddrPort("0.0.0.0:" + port); err != nil || n.Port() == 0 {
			return bad("has an invalid port")
		}
	}
	ip, isAddr, err := hostAddr(host)
	if err != nil {
		return bad("has a host that " + err.Error())
	}
	if isAddr {
		if err := p.CheckAddr(ip); err != nil {
			return bad(err.Error())
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if p.CheckAddr(netip.MustParseAddr("127.0.0.1")) != nil {
			return bad("names the loopback; an operator may allow it with --webhook-allow-networks")
		}
		return nil
	}
	// What the name resolves to now; a failure to resolve is no refusal
	// (the receiver may not be set up yet), and the check at connect time
	// stands either way.
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := p.CheckAddr(a); err != nil {
			return bad(host + " resolves to a refused address: " + err.Error())
		}
	}
	return nil
}

// ParseNetworks reads a list of CIDR networks (or single addresses) for
// AllowNetworks.
func ParseNetworks(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(s); err == nil {
			out = append(out, pfx.Masked())
			continue
		}
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q: want a network such as 127.0.0.0/8 or an address", s)
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
	}
	return out, nil
}
