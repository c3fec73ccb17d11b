package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the pipeline stages.
type Metrics struct {
	Accepted    *prometheus.CounterVec // by source
	Parsed      *prometheus.CounterVec // by source
	Unparsed    *prometheus.CounterVec // by source
	Failed      *prometheus.CounterVec // by stage
	DeadLetters prometheus.Counter
	Throttled   prometheus.Counter
	Stage       *prometheus.HistogramVec // seconds per batch, by stage
	// Suppressed counts signals that did not count, by detector and
	// reason: "suppression" (an org's suppression, once per signal) or
	// "engine_event" (a sensor's engine event the org does not promote).
	Suppressed *prometheus.CounterVec
}

// NewMetrics registers the pipeline metrics on reg (nil: a private registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		Accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_artifacts_accepted_total", Help: "Artifacts accepted by the API or the syslog listeners and queued, by source.",
		}, []string{"source"}),
		Parsed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_artifacts_parsed_total", Help: "Artifacts a parser understood, by source.",
		}, []string{"source"}),
		Unparsed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_artifacts_unparsed_total", Help: "Artifacts no parser understood (stored and searchable all the same), by source.",
		}, []string{"source"}),
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_pipeline_failures_total", Help: "Batches that failed a stage and were retried, by stage.",
		}, []string{"stage"}),
		DeadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_dead_letters_total", Help: "Queue messages moved to the dead-letter stream after repeated failures.",
		}),
		Throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_ingest_throttled_total", Help: "Ingest requests refused with 429 because the queue was full or behind (API posts, and syslog batches, which are retried).",
		}),
		Stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vigil_pipeline_stage_seconds", Help: "Time per batch in each pipeline stage.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}, []string{"stage"}),
		Suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_signals_suppressed_total",
			Help: "Detection signals that did not count, by detector and reason: suppression (swallowed by an org's suppression) or engine_event (a sensor's engine event the org does not promote). Their artifacts are stored and searchable.",
		}, []string{"detector", "reason"}),
	}
	reg.MustRegister(m.Accepted, m.Parsed, m.Unparsed, m.Failed, m.DeadLetters, m.Throttled, m.Stage, m.Suppressed)
	return m
}
