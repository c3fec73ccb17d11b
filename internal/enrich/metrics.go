package enrich

import "github.com/prometheus/client_golang/prometheus"

// metrics of the enrichment stage. Labels are bounded: provider names and
// feed names (the files of the intel directory and the configured URLs).
type metrics struct {
	lookups     *prometheus.CounterVec // by provider: look-ups done (local or sent)
	cacheHits   *prometheus.CounterVec // by provider: outbound look-ups answered by the cache
	rateLimited *prometheus.CounterVec // by provider: look-ups that had to wait for the org's rate limit
	failures    *prometheus.CounterVec // by provider: look-ups that failed (timeout, error, garbage)
	dropped     *prometheus.CounterVec // by provider: look-ups not queued because the queue was full
	queued      prometheus.Gauge
	indicators  *prometheus.GaugeVec   // by feed
	intelHits   *prometheus.CounterVec // by feed
	reloads     *prometheus.CounterVec // by source: geoip_city, geoip_asn, intel
	loadErrors  *prometheus.CounterVec // by source
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	byProvider := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"provider"})
	}
	m := &metrics{
		lookups:     byProvider("vigil_enrich_lookups_total", "Enrichment look-ups done, by provider (outbound ones counted when sent)."),
		cacheHits:   byProvider("vigil_enrich_cache_hits_total", "Outbound look-ups answered by the cache, by provider."),
		rateLimited: byProvider("vigil_enrich_rate_limited_total", "Outbound look-ups that waited for the organization's rate limit, by provider."),
		failures:    byProvider("vigil_enrich_failures_total", "Outbound look-ups that failed (timeout, error, unusable answer), by provider."),
		dropped:     byProvider("vigil_enrich_dropped_total", "Outbound look-ups dropped because the look-up queue was full, by provider."),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_enrich_queue_length", Help: "Pending (look-up, artifact) pairs in the outbound look-up queue.",
		}),
		indicators: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_enrich_intel_indicators", Help: "Threat-intelligence indicators loaded, by feed.",
		}, []string{"feed"}),
		intelHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_enrich_intel_hits_total", Help: "Node values that matched a threat-intelligence indicator, by feed.",
		}, []string{"feed"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_enrich_reloads_total", Help: "Local databases (re)loaded, by source.",
		}, []string{"source"}),
		loadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_enrich_load_errors_total", Help: "Local databases or feeds that failed to load, by source.",
		}, []string{"source"}),
	}
	reg.MustRegister(m.lookups, m.cacheHits, m.rateLimited, m.failures, m.dropped, m.queued,
		m.indicators, m.intelHits, m.reloads, m.loadErrors)
	return m
}
