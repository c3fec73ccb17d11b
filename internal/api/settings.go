package api

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"

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
	// Roll-ups and entity risk, additions too (docs/detections.md,
	// "Roll-ups and entity risk").
	RollupThreshold     *int      `json:"rollup_threshold"`
	RollupWindowMinutes *int      `json:"rollup_window_minutes"`
	RollupSeverities    *[]string `json:"rollup_severities"`
	RiskThreshold       *int      `json:"risk_threshold"`
	RiskDetections      *int      `json:"risk_detections"`
}

// maxInternalNetworks bounds the CIDR list of one org.
const maxInternalNetworks = 1000

// merge validates b and applies the fields present onto set.
func (b *settingsBody) merge(set *vigil.EnrichmentSettings) error {
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	ints := []struct {
		field    string
		v        *int
		min, max int
		issue    string
		dst      *int
	}{
		{"rate_limit", b.RateLimit, 0, vigil.MaxRateLimit, "must be between 0 and 100000", &set.RateLimit},
		{"cache_ttl_hours", b.CacheTTLHours, 0, vigil.MaxCacheTTLHours, "must be between 0 and 8760", &set.CacheTTLHours},
		{"rollup_threshold", b.RollupThreshold, 0, vigil.MaxRollupThreshold, "must be 0 (roll-ups off) or between 2 and 1000000", &set.RollupThreshold},
		{"rollup_window_minutes", b.RollupWindowMinutes, 1, vigil.MaxRollupWindowMinutes, "must be between 1 and 10080 (7 days)", &set.RollupWindowMinutes},
		{"risk_threshold", b.RiskThreshold, 1, vigil.MaxRiskThreshold, "must be between 1 and 1000000", &set.RiskThreshold},
		{"risk_detections", b.RiskDetections, 2, vigil.MaxRiskDetections, "must be between 2 and 100", &set.RiskDetections},
	}
	for _, f := range ints {
		if f.v != nil && (*f.v < f.min || *f.v > f.max || f.field == "rollup_threshold" && *f.v == 1) {
			bad(f.field, f.issue)
		}
	}
	var sevs []string
	if b.RollupSeverities != nil {
		if len(*b.RollupSeverities) > 4 {
			bad("rollup_severities", "must have at most 4 items")
		}
		for i, v := range *b.RollupSeverities {
			switch {
			case !vigil.ValidSeverity(v):
				bad(fmt.Sprintf("rollup_severities[%d]", i), "must be one of low, medium, high, critical")
			case slices.Contains(sevs, v):
				bad(fmt.Sprintf("rollup_severities[%d]", i), "must not repeat a severity")
			default:
				sevs = append(sevs, v)
			}
		}
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
	for _, f := range ints {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if b.RollupSeverities != nil {
		set.RollupSeverities = append([]string{}, sevs...)
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
