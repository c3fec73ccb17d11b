package api

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/vigil-soc/vigil"
)

type settingsBody struct {
	GeoIPEnabled       *bool     `json:"geoip_enabled"`
	DNSEnabled         *bool     `json:"dns_enabled"`
	WhoisEnabled       *bool     `json:"whois_enabled"`
	ThreatIntelEnabled *bool     `json:"threat_intel_enabled"`
	RateLimit          *int      `json:"rate_limit"`
	CacheTTLHours      *int      `json:"cache_ttl_hours"`
	InternalNetworks   *[]string `json:"internal_networks"`
	// SuricataEngineEvents is an addition to the contract's fields:
	// whether Suricata's own decoder, stream and app-layer events open
	// incidents (docs/detections.md).
	SuricataEngineEvents *bool `json:"suricata_engine_events"`
}

// maxInternalNetworks bounds the CIDR list of one org.
const maxInternalNetworks = 1000

// merge validates b and applies the fields present onto set.
func (b *settingsBody) merge(set *vigil.EnrichmentSettings) error {
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	if b.RateLimit != nil && (*b.RateLimit < 0 || *b.RateLimit > vigil.MaxRateLimit) {
		bad("rate_limit", "must be between 0 and 100000")
	}
	if b.CacheTTLHours != nil && (*b.CacheTTLHours < 0 || *b.CacheTTLHours > vigil.MaxCacheTTLHours) {
		bad("cache_ttl_hours", "must be between 0 and 8760")
	}
	var nets []string
	if b.InternalNetworks != nil {
		if len(*b.InternalNetworks) > maxInternalNetworks {
			bad("internal_networks", "must have at most 1000 items")
		}
		for i, c := range *b.InternalNetworks {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				bad(fmt.Sprintf("internal_networks[%d]", i), "must be a CIDR such as 10.0.0.0/8")
				continue
			}
			nets = append(nets, p.Masked().String())
		}
	}
	if len(issues) > 0 {
		return vigil.Invalid(issues...)
	}
	for _, f := range []struct {
		src *bool
		dst *bool
	}{{b.GeoIPEnabled, &set.GeoIPEnabled}, {b.DNSEnabled, &set.DNSEnabled}, {b.WhoisEnabled, &set.WhoisEnabled},
		{b.ThreatIntelEnabled, &set.ThreatIntelEnabled}, {b.SuricataEngineEvents, &set.SuricataEngineEvents}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if b.RateLimit != nil {
		set.RateLimit = *b.RateLimit
	}
	if b.CacheTTLHours != nil {
		set.CacheTTLHours = *b.CacheTTLHours
	}
	if b.InternalNetworks != nil {
		set.InternalNetworks = nets
		if set.InternalNetworks == nil {
			set.InternalNetworks = []string{}
		}
	}
	return nil
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	set, err := s.store.EnrichmentSettings(r.Context(), principal(r.Context()).OrgID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Enrichment settings retrieved successfully", set)
}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) {
	var b settingsBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	org := principal(r.Context()).OrgID
	set, err := s.store.EnrichmentSettings(r.Context(), org)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := b.merge(set); err != nil {
		s.fail(w, r, err)
		return
	}
	set.UpdatedAt = s.now()
	if err := s.store.PutEnrichmentSettings(r.Context(), org, set); err != nil {
		s.fail(w, r, err)
		return
	}
	s.suppressionsChanged(org) // the settings say which engine events count
	ok(w, http.StatusOK, "Enrichment settings updated successfully", set)
}
