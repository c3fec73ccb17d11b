package vigil

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// EnrichmentSettings are one org's switches and limits for enrichment,
// its own networks, and which of its sensors' events detection counts.
// Each enabled switch turns one provider of internal/enrich on or off.
type EnrichmentSettings struct {
	GeoIPEnabled bool `json:"geoip_enabled"`
	DNSEnabled   bool `json:"dns_enabled"`
	// WhoisEnabled turns on registration data of addresses and domains:
	// WHOIS data, fetched over RDAP, the protocol that replaced WHOIS
	// (the "rdap" provider).
	WhoisEnabled       bool     `json:"whois_enabled"`
	ThreatIntelEnabled bool     `json:"threat_intel_enabled"`
	RateLimit          int      `json:"rate_limit"`
	CacheTTLHours      int      `json:"cache_ttl_hours"`
	InternalNetworks   []string `json:"internal_networks"`
	// SuricataEngineEvents promotes Suricata's decoder, stream and
	// app-layer events ("SURICATA …" signatures) to alerts that open
	// incidents; by default they are capture noise and stay searchable
	// artifacts only.
	SuricataEngineEvents bool `json:"suricata_engine_events"`
	// Roll-ups and entity risk (RollupPolicy): how many distinct sources
	// of one detection within how many minutes roll up (0: never), which
	// severities, and the risk and distinct detections within 24 h at
	// which a source stands apart.
	RollupThreshold     int       `json:"rollup_threshold"`
	RollupWindowMinutes int       `json:"rollup_window_minutes"`
	RollupSeverities    []string  `json:"rollup_severities"`
	RiskThreshold       int       `json:"risk_threshold"`
	RiskDetections      int       `json:"risk_detections"`
	UpdatedAt           time.Time `json:"updated_at"`
}

// Ranges of the numeric settings, checked on PUT: rate_limit is look-ups
// per minute per provider (0 pauses it), cache_ttl_hours at most a year.
const (
	MaxRateLimit     = 100000
	MaxCacheTTLHours = 8760
)

// DefaultEnrichmentSettings returns the settings an org starts with.
func DefaultEnrichmentSettings() EnrichmentSettings {
	return EnrichmentSettings{
		GeoIPEnabled:       true,
		DNSEnabled:         true,
		WhoisEnabled:       false,
		ThreatIntelEnabled: true,
		RateLimit:          60,
		CacheTTLHours:      24,
		InternalNetworks: []string{
			"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
			"fc00::/7", "127.0.0.0/8", "::1/128",
		},
		RollupThreshold:     DefaultRollupThreshold,
		RollupWindowMinutes: DefaultRollupWindowMinutes,
		RollupSeverities:    DefaultRollupSeverities(),
		RiskThreshold:       DefaultRiskThreshold,
		RiskDetections:      DefaultRiskDetections,
	}
}

// RollupPolicy returns the org's roll-up and risk settings.
func (s *EnrichmentSettings) RollupPolicy() RollupPolicy {
	return RollupPolicy{Threshold: s.RollupThreshold, Window: time.Duration(s.RollupWindowMinutes) * time.Minute,
		Severities: slices.Clone(s.RollupSeverities), RiskThreshold: s.RiskThreshold, RiskDetections: s.RiskDetections}
}

// InternalPrefixes returns the org's internal_networks as prefixes,
// skipping entries that do not parse (the settings API validates them; a
// stale bad value must not stop the rest). A bare address counts as a
// single-address prefix.
func (s *EnrichmentSettings) InternalPrefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(s.InternalNetworks))
	for _, v := range s.InternalNetworks {
		v = strings.TrimSpace(v)
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(v); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out
}
