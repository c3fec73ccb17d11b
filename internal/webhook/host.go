package webhook

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// hostAddr returns the address that host, the host of a URL (lower case,
// without brackets or a trailing dot), names, read as resolvers and
// browsers read it: an IP literal, or an IPv4 address in one of the forms
// inet_aton and the WHATWG URL standard take (127.1, 2130706433,
// 0x7f000001, 0177.0.0.1, 0). ok is false for a name. A host that ends in
// a number but is no such address (1.2.3.4.5, 256.1.1.1) is an error, as
// it is to a browser: some resolver would read it as something.
func hostAddr(host string) (ip netip.Addr, ok bool, err error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true, nil
	}
	labels := strings.Split(host, ".")
	if !numeric(labels[len(labels)-1]) {
		return netip.Addr{}, false, nil
	}
	ip, ok = parseIPv4(labels)
	if !ok {
		return netip.Addr{}, false, errors.New("ends in a number but is not an IP address")
	}
	return ip, true, nil
}

// numeric reports whether a label is a number: decimal digits, or 0x
// and hexadecimal digits.
func numeric(label string) bool {
	if hex, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// parseIPv4 reads one to four numbers (decimal, 0x hexadecimal, or octal
// with a leading 0), each of one byte but the last, which fills the bytes
// left: inet_aton's forms.
func parseIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, l := range labels {
		base := 10
		switch {
		case strings.HasPrefix(l, "0x"):
			base, l = 16, l[2:]
			if l == "" {
				l = "0"
			}
		case len(l) > 1 && l[0] == '0':
			base, l = 8, l[1:]
		}
		n, err := strconv.ParseUint(l, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(labels)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// embeddedIPv4 returns the IPv4 address an IPv6 address carries in its
// last 32 bits when it is IPv4-compatible (::127.0.0.1, deprecated) or
// IPv4-translated (::ffff:0:127.0.0.1), and ip itself otherwise: a policy
// on IPv4 networks must not be passed by writing the address in IPv6.
// (IPv4-mapped addresses are netip.Addr.Unmap's; :: and ::1 are IPv6's
// own.)
func embeddedIPv4(ip netip.Addr) netip.Addr {
	if !ip.Is6() || ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback() {
		return ip
	}
	b := ip.As16()
	var zero [8]byte
	if [8]byte(b[:8]) != zero {
		return ip
	}
	if prefix := [4]byte(b[8:12]); prefix == [4]byte{} || prefix == [4]byte{0xff, 0xff, 0, 0} {
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return ip
}
