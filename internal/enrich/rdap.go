package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/openrdap/rdap"
	"github.com/openrdap/rdap/bootstrap"
	"github.com/vigil-soc/vigil"
)

// RDAPInfo is the registration data of an IP network or a registrable
// domain (RFC 9083). AgeDays is derived from Created when the enrichment
// is built, so that a cached entry never shows a stale age.
type RDAPInfo struct {
	// Domain is the registrable domain looked up for a domain node.
	Domain     string     `json:"domain,omitempty"`
	Handle     string     `json:"handle,omitempty"`
	Name       string     `json:"name,omitempty"` // network name
	CIDR       []string   `json:"cidr,omitempty"`
	Country    string     `json:"country,omitempty"`
	Registrar  string     `json:"registrar,omitempty"`
	Registrant string     `json:"registrant,omitempty"` // registrant organization
	Created    *time.Time `json:"created,omitempty"`
	Expires    *time.Time `json:"expires,omitempty"`
	AgeDays    *int       `json:"age_days,omitempty"`
	// NotFound is set when the registry answered 404: for a domain, it is
	// not registered.
	NotFound bool `json:"not_found,omitempty"`
}

// ProviderRDAP names the registration-data provider (metric label, cache
// key). RDAP is the protocol that replaced WHOIS: the provider is the
// whois_enabled setting (vigil.EnrichmentSettings.WhoisEnabled).
const ProviderRDAP = "rdap"

var _ outboundProvider = (*rdapClient)(nil)

func (c *rdapClient) name() string { return ProviderRDAP }

// enabled: WHOIS data is what the whois_enabled setting asks for; RDAP is
// how it is fetched.
func (c *rdapClient) enabled(s *vigil.EnrichmentSettings) bool { return s.WhoisEnabled }

// begin asks who registered the addresses of a pass that may be sent out,
// and the registrable domain (example.com for www.example.com) of its
// names.
func (c *rdapClient) begin() step { return rdapStep }

func rdapStep(p *pass, out *nodeOutcome, t *target) int {
	key, ok := p.sendKey(t)
	if !ok {
		return 0
	}
	if !t.addr.IsValid() {
		if key = registrable(t.domain); key == "" {
			return 0
		}
	}
	v, ok := p.cached(out, ProviderRDAP, key)
	if !ok {
		return 0
	}
	var r RDAPInfo
	if json.Unmarshal(v, &r) != nil {
		return 0
	}
	if r.Created != nil {
		days := int(p.fresh.now.Sub(*r.Created) / (24 * time.Hour))
		r.AgeDays = &days
	}
	out.info.RDAP = &r
	return 0
}

// maxRDAPBody bounds a response body; RDAP objects are a few KB.
const maxRDAPBody = 1 << 20

// rdapClient queries RDAP with openrdap: against a fixed base URL when one
// is configured, else at the servers the IANA bootstrap registries name.
// openrdap's Client and bootstrap Client are not safe for concurrent use
// (Do initializes fields and swaps the bootstrapper's callback), so the
// bootstrap step is done here under a mutex and Do is only ever called
// with the server set and every field it would initialize already set.
type rdapClient struct {
	base    *url.URL
	client  *rdap.Client
	timeout time.Duration

	bootMu sync.Mutex
	boot   *bootstrap.Client
}

func newRDAPClient(base string, timeout time.Duration) (*rdapClient, error) {
	httpc := &http.Client{Transport: limitedTransport{http.DefaultTransport}}
	quiet := func(string) {}
	c := &rdapClient{
		timeout: timeout,
		client:  &rdap.Client{HTTP: httpc, Verbose: quiet, UserAgent: "vigil-enrich"},
		boot:    &bootstrap.Client{HTTP: httpc, Verbose: quiet},
	}
	c.client.Bootstrap = c.boot // never used by Do: requests carry their server
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("rdap: base URL %q: must be an http(s) URL", base)
		}
		c.base = u
	}
	return c, nil
}

// servers returns the RDAP base URLs to ask about key, in order.
func (c *rdapClient) servers(ctx context.Context, key string, isIP bool) ([]*url.URL, error) {
	if c.base != nil {
		return []*url.URL{c.base}, nil
	}
	q := &bootstrap.Question{RegistryType: bootstrap.DNS, Query: key}
	if isIP {
		q.RegistryType = bootstrap.IPv4
		if strings.Contains(key, ":") {
			q.RegistryType = bootstrap.IPv6
		}
	}
	c.bootMu.Lock()
	ans, err := c.boot.Lookup(q.WithContext(ctx))
	c.bootMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("rdap bootstrap: %w", err)
	}
	if len(ans.URLs) == 0 {
		return nil, fmt.Errorf("rdap bootstrap: no server for %s", key)
	}
	return ans.URLs, nil
}

// limitedTransport caps response bodies: openrdap reads them whole.
type limitedTransport struct{ rt http.RoundTripper }

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, maxRDAPBody), resp.Body}
	return resp, nil
}

// lookup queries key, an address or a registrable domain.
func (c *rdapClient) lookup(ctx context.Context, key string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, errIP := netip.ParseAddr(key)
	typ := rdap.DomainRequest
	if errIP == nil {
		typ = rdap.IPRequest
	}
	servers, err := c.servers(ctx, key, errIP == nil)
	if err != nil {
		return nil, err
	}
	var resp *rdap.Response
	for _, srv := range servers {
		// openrdap edits the server URL it is given: each request gets
		// its own copy.
		u := *srv
		req := &rdap.Request{Type: typ, Query: key, Server: &u}
		resp, err = c.client.Do(req.WithContext(ctx))
		var ce *rdap.ClientError
		if err == nil || ctx.Err() != nil || (errors.As(err, &ce) && ce.Type == rdap.ObjectDoesNotExist) {
			break
		}
	}
	if err != nil {
		var ce *rdap.ClientError
		if errors.As(err, &ce) && ce.Type == rdap.ObjectDoesNotExist {
			return json.Marshal(RDAPInfo{NotFound: true})
		}
		return nil, fmt.Errorf("rdap %s: %w", key, err)
	}
	var info RDAPInfo
	switch obj := resp.Object.(type) {
	case *rdap.IPNetwork:
		if errIP != nil {
			return nil, fmt.Errorf("rdap %s: answered with an IP network", key)
		}
		info = ipNetworkInfo(obj)
	case *rdap.Domain:
		if errIP == nil {
			return nil, fmt.Errorf("rdap %s: answered with a domain", key)
		}
		info = domainInfo(obj)
		info.Domain = key
	default:
		return nil, fmt.Errorf("rdap %s: unexpected answer %T", key, resp.Object)
	}
	return json.Marshal(info)
}

func ipNetworkInfo(n *rdap.IPNetwork) RDAPInfo {
	info := RDAPInfo{
		Handle:     n.Handle,
		Name:       n.Name,
		Country:    n.Country,
		CIDR:       networkCIDRs(n),
		Registrant: entityName(n.Entities, "registrant"),
		Created:    eventDate(n.Events, "registration"),
	}
	return info
}

func domainInfo(d *rdap.Domain) RDAPInfo {
	return RDAPInfo{
		Handle:     d.Handle,
		Registrar:  entityName(d.Entities, "registrar"),
		Registrant: entityName(d.Entities, "registrant"),
		Created:    eventDate(d.Events, "registration"),
		Expires:    eventDate(d.Events, "expiration"),
	}
}

// networkCIDRs returns the prefixes of a network: from the cidr0 extension
// (ARIN, RIPE, APNIC, LACNIC and AFRINIC all send it) when present, else
// computed from the start and end addresses.
func networkCIDRs(n *rdap.IPNetwork) []string {
	var out []string
	if n.DecodeData != nil {
		if list, ok := n.DecodeData.Value("cidr0_cidrs").([]any); ok {
			for _, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					continue
				}
				l, ok := m["length"].(float64)
				if !ok {
					continue
				}
				for _, k := range []string{"v4prefix", "v6prefix"} {
					if s, ok := m[k].(string); ok {
						if p, err := netip.ParsePrefix(fmt.Sprintf("%s/%d", s, int(l))); err == nil {
							out = append(out, p.Masked().String())
						}
					}
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	start, err1 := netip.ParseAddr(strings.TrimSpace(n.StartAddress))
	end, err2 := netip.ParseAddr(strings.TrimSpace(n.EndAddress))
	if err1 != nil || err2 != nil {
		return nil
	}
	return rangePrefixes(start.Unmap(), end.Unmap(), 16)
}

// rangePrefixes returns the smallest list of prefixes covering [start,
// end], at most max of them (a registry range is a handful).
func rangePrefixes(start, end netip.Addr, max int) []string {
	if start.BitLen() != end.BitLen() || end.Less(start) {
		return nil
	}
	var out []string
	for len(out) < max {
		// The largest prefix that starts at start and ends at or before end.
		bits := start.BitLen()
		for bits > 0 {
			p := netip.PrefixFrom(start, bits-1)
			if p.Masked().Addr() != start || lastAddr(p).Compare(end) > 0 {
				break
			}
			bits--
		}
		p := netip.PrefixFrom(start, bits)
		out = append(out, p.String())
		last := lastAddr(p)
		if last.Compare(end) >= 0 {
			return out
		}
		start = last.Next()
		if !start.IsValid() {
			return out
		}
	}
	return out
}

// lastAddr returns the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As16()
	off := 128 - p.Addr().BitLen()
	for i := p.Bits() + off; i < 128; i++ {
		b[i/8] |= 1 << (7 - uint(i%8))
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		return a.Unmap()
	}
	return a
}

// entityName returns the organization (or else the full name) of the first
// entity with role, searching nested entities too (registries often put
// the registrant under the registrar or the network's abuse contacts under
// the registrant).
func entityName(ents []rdap.Entity, role string) string {
	for i := range ents {
		e := &ents[i]
		for _, r := range e.Roles {
			if !strings.EqualFold(r, role) || e.VCard == nil {
				continue
			}
			if org := strings.TrimSpace(e.VCard.Org()); org != "" {
				return org
			}
			if fn := strings.TrimSpace(e.VCard.Name()); fn != "" {
				return fn
			}
		}
	}
	for i := range ents {
		if n := entityName(ents[i].Entities, role); n != "" {
			return n
		}
	}
	return ""
}

func eventDate(evs []rdap.Event, action string) *time.Time {
	for _, ev := range evs {
		if !strings.EqualFold(ev.Action, action) {
			continue
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
			if t, err := time.Parse(layout, strings.TrimSpace(ev.Date)); err == nil {
				t = t.UTC()
				return &t
			}
		}
	}
	return nil
}
