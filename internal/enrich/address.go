package enrich

import (
	"net/netip"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// nonPublicV4 lists the IPv4 special-purpose ranges whose addresses are
// not globally reachable (IANA IPv4 Special-Purpose Address Registry):
// nothing about them can be learnt from GeoIP, reverse DNS or RDAP, and
// asking an outside server about them leaks internal addressing.
var nonPublicV4 = mustPrefixes(
	"0.0.0.0/8",       // "this network"
	"10.0.0.0/8",      // RFC 1918
	"100.64.0.0/10",   // CGNAT, RFC 6598
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local
	"172.16.0.0/12",   // RFC 1918
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // TEST-NET-1
	"192.88.99.0/24",  // deprecated 6to4 relay anycast
	"192.168.0.0/16",  // RFC 1918
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, and the limited broadcast address
)

// IPv6 is public only inside 2000::/3 (global unicast), minus these.
var (
	globalV6    = netip.MustParsePrefix("2000::/3")
	nonPublicV6 = mustPrefixes(
		"2001::/23",     // IETF protocol assignments (Teredo, ORCHID, …)
		"2001:db8::/32", // documentation
		"3fff::/20",     // documentation (RFC 9637)
	)
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// isPublic reports whether a is a globally reachable unicast address.
func isPublic(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is4() {
		for _, p := range nonPublicV4 {
			if p.Contains(a) {
				return false
			}
		}
		return true
	}
	if !globalV6.Contains(a) {
		return false
	}
	for _, p := range nonPublicV6 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// parsePrefixes parses an org's internal_networks, skipping bad entries
// (the settings API validates them; a stale bad value must not stop
// enrichment). A bare address counts as a single-address prefix.
func parsePrefixes(ss []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out
}

func containedIn(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// normDomain returns s as a lower-case host name without a trailing dot
// when it is a syntactically valid one of at least two labels, else "".
// Underscores are allowed (service labels such as _dmarc).
func normDomain(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if len(s) == 0 || len(s) > 253 {
		return ""
	}
	lower := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			lower = false
			break
		}
	}
	if !lower {
		s = strings.ToLower(s)
	}
	labels, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return ""
			}
			continue
		}
		if n := i - start; n == 0 || n > 63 {
			return ""
		}
		labels++
		start = i + 1
	}
	if labels < 2 {
		return ""
	}
	// No top-level domain is numeric: a numeric last label makes it an
	// address (1.2.3.4) or no name at all.
	last := s[strings.LastIndexByte(s, '.')+1:]
	if strings.Trim(last, "0123456789") == "" {
		return ""
	}
	return s
}

// icannDomain reports whether domain ends in a public suffix of the ICANN
// section of the Public Suffix List, that is, whether it can exist in the
// public DNS and have RDAP registration data. Names under private or
// unknown suffixes (corp.local, printer.lan, wpad) are never sent out.
func icannDomain(domain string) bool {
	suffix, icann := publicsuffix.PublicSuffix(domain)
	return icann && suffix != domain
}

// registrable returns the registrable domain (eTLD+1) of an ICANN domain,
// the name RDAP registries know, or "".
func registrable(domain string) string {
	if !icannDomain(domain) {
		return ""
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil {
		return ""
	}
	return d
}

// hostOf returns a URL's host as an address or a domain, whichever it is
// ("" when there is no host).
func hostOf(host string) (netip.Addr, string) {
	if host == "" {
		return netip.Addr{}, ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap(), ""
	}
	return netip.Addr{}, normDomain(host)
}
