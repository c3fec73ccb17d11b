package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-soc/vigil"
)

// DNSInfo is what the resolvers answered about a node value: PTR names of
// an address, A and AAAA addresses of a domain. Status is set when the
// name does not exist (NXDOMAIN), an answer worth caching like any other.
type DNSInfo struct {
	PTR    []string `json:"ptr,omitempty"`
	A      []string `json:"a,omitempty"`
	AAAA   []string `json:"aaaa,omitempty"`
	Status string   `json:"status,omitempty"`
}

// maxRecords bounds what is kept of one answer.
const maxRecords = 32

// resolver sends PTR, A and AAAA queries with miekg/dns. Each server is
// asked once per look-up, in order, until one gives a usable answer:
// there are no retries, so a dead resolver costs one timeout per server,
// and the failure is then negative-cached by the caller.
type resolver struct {
	servers []string
	udp     *dns.Client
	tcp     *dns.Client
}

// defaultDNSServers reads the system's resolvers from /etc/resolv.conf,
// falling back to a local resolver.
func defaultDNSServers() []string {
	cc, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(cc.Servers) == 0 {
		return []string{"127.0.0.1:53"}
	}
	out := make([]string, 0, len(cc.Servers))
	for _, s := range cc.Servers {
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	return out
}

func newResolver(servers []string, timeout time.Duration) *resolver {
	r := &resolver{
		udp: &dns.Client{Net: "udp", Timeout: timeout},
		tcp: &dns.Client{Net: "tcp", Timeout: timeout},
	}
	for _, s := range servers {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.Trim(s, "[]"), "53")
		}
		r.servers = append(r.servers, s)
	}
	return r
}

// ProviderDNS names the DNS provider (metric label, cache key).
const ProviderDNS = "dns"

var _ outboundProvider = (*resolver)(nil)

func (r *resolver) name() string { return ProviderDNS }

func (r *resolver) enabled(s *vigil.EnrichmentSettings) bool { return s.DNSEnabled }

// begin resolves the addresses and names of a pass that may be sent out:
// PTR of an address, A and AAAA of a name.
func (r *resolver) begin() step { return dnsStep }

func dnsStep(p *pass, out *nodeOutcome, t *target) int {
	if key, ok := p.sendKey(t); ok {
		if v, ok := p.cached(out, ProviderDNS, key); ok {
			out.info.DNS = v
		}
	}
	return 0
}

// errNoAnswer is returned when no server gave a usable answer.
var errNoAnswer = errors.New("dns: no server answered")

// lookup resolves key: PTR for an address, A and AAAA for a domain.
func (r *resolver) lookup(ctx context.Context, key string) (json.RawMessage, error) {
	var info DNSInfo
	if a, err := netip.ParseAddr(key); err == nil {
		rev, err := dns.ReverseAddr(a.String())
		if err != nil {
			return nil, err
		}
		m, err := r.exchange(ctx, rev, dns.TypePTR)
		if err != nil {
			return nil, err
		}
		if m.Rcode == dns.RcodeNameError {
			info.Status = "NXDOMAIN"
		}
		for _, rr := range m.Answer {
			if p, ok := rr.(*dns.PTR); ok && len(info.PTR) < maxRecords {
				info.PTR = append(info.PTR, strings.ToLower(strings.TrimSuffix(p.Ptr, ".")))
			}
		}
		return json.Marshal(info)
	}
	// A and AAAA in parallel: a look-up costs one round trip, not two.
	type answer struct {
		m   *dns.Msg
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		m, err := r.exchange(ctx, dns.Fqdn(key), dns.TypeAAAA)
		ch <- answer{m, err}
	}()
	ma, errA := r.exchange(ctx, dns.Fqdn(key), dns.TypeA)
	aaaa := <-ch
	if errA != nil {
		return nil, errA
	}
	if aaaa.err != nil {
		return nil, aaaa.err
	}
	if ma.Rcode == dns.RcodeNameError {
		info.Status = "NXDOMAIN"
	}
	for _, rr := range ma.Answer {
		if a, ok := rr.(*dns.A); ok && len(info.A) < maxRecords {
			info.A = append(info.A, a.A.String())
		}
	}
	for _, rr := range aaaa.m.Answer {
		if a, ok := rr.(*dns.AAAA); ok && len(info.AAAA) < maxRecords {
			info.AAAA = append(info.AAAA, a.AAAA.String())
		}
	}
	return json.Marshal(info)
}

// exchange asks the servers in turn for (name, qtype) and returns the
// first answer that is NOERROR or NXDOMAIN. A truncated UDP answer is
// asked again over TCP on the same server.
func (r *resolver) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.RecursionDesired = true
	var last error = errNoAnswer
	for _, s := range r.servers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, _, err := r.udp.ExchangeContext(ctx, q, s)
		if err == nil && m.Truncated {
			m, _, err = r.tcp.ExchangeContext(ctx, q, s)
		}
		if err != nil {
			last = fmt.Errorf("dns %s %s: %w", s, dns.TypeToString[qtype], err)
			continue
		}
		if m.Rcode == dns.RcodeSuccess || m.Rcode == dns.RcodeNameError {
			return m, nil
		}
		last = fmt.Errorf("dns %s %s: %s", s, dns.TypeToString[qtype], dns.RcodeToString[m.Rcode])
	}
	return nil, last
}
