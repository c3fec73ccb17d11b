// Package pipeline moves artifacts from the API to the store and through
// parse → enrich → detect → correlate: Queued publishes them durably to
// JetStream, Worker consumes and processes them.
package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/enrich"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/rules"
)

// Processor runs the stages after the queue on a batch of artifacts: parse,
// then store (idempotent on artifact id). Later stages plug in here.
type Processor struct {
	store    vigil.Store
	log      *slog.Logger
	metrics  *Metrics
	engine   *detect.Engine
	enricher *enrich.Enricher
	corr     vigil.CorrelationPolicy
	classify *rules.Classifier
	health   writeHealth
}

// NewProcessor returns a Processor writing to store.
func NewProcessor(store vigil.Store, log *slog.Logger, m *Metrics) *Processor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Processor{store: store, log: log, metrics: m, corr: vigil.DefaultCorrelationPolicy(),
		classify: rules.NewClassifier(store)}
}

// WithDetection makes the processor run engine's detectors after storing
// and correlate what they find under policy.
func (p *Processor) WithDetection(engine *detect.Engine, policy vigil.CorrelationPolicy) *Processor {
	p.engine, p.corr = engine, policy
	return p
}

// Process parses and stores one org's artifacts. Redelivered artifacts
// are stored once. A transient error (vigil.Transient) means nothing is
// wrong with the artifacts: the store could not take them now.
func (p *Processor) Process(ctx context.Context, org string, arts []*vigil.Artifact) error {
	err := p.process(ctx, org, arts)
	p.health.record(err)
	return err
}

func (p *Processor) process(ctx context.Context, org string, arts []*vigil.Artifact) error {
	start := time.Now()
	fields := make([]parse.Event, len(arts))
	for i, a := range arts {
		fields[i] = p.parse(a)
	}
	p.metrics.Stage.WithLabelValues("parse").Observe(time.Since(start).Seconds())

	var enriched []enrich.Result
	if p.enricher != nil {
		start = time.Now()
		nodes := make([][]vigil.NodeRef, len(arts))
		for i, f := range fields {
			if f != nil {
				nodes[i] = parse.Nodes(f)
			}
		}
		enriched = p.enricher.Enrich(ctx, org, nil, arts, nodes) // sets each a.Enrichment
		p.metrics.Stage.WithLabelValues("enrich").Observe(time.Since(start).Seconds())
	}

	start = time.Now()
	if err := p.store.InsertArtifacts(ctx, org, arts); err != nil {
		p.metrics.Failed.WithLabelValues("store").Inc()
		return fmt.Errorf("store artifacts: %w", err)
	}
	p.metrics.Stage.WithLabelValues("store").Observe(time.Since(start).Seconds())
	if p.enricher != nil {
		// Outbound look-ups (DNS, RDAP) run in the background, rate-limited,
		// now that the artifacts exist to receive their results.
		p.enricher.Submit(org, enriched)
	}
	if p.engine == nil {
		return nil
	}

	start = time.Now()
	events := make([]*detect.Event, 0, len(arts))
	for i, a := range arts {
		if fields[i] == nil {
			continue
		}
		ev := &detect.Event{ArtifactID: a.ID, Source: a.Source, At: a.Timestamp, Fields: fields[i]}
		if i < len(enriched) {
			for _, h := range enriched[i].Hits {
				ev.Intel = append(ev.Intel, detect.IntelHit{Feed: h.Feed, Indicator: h.Indicator, NodeType: h.NodeType, Value: h.NodeValue})
			}
		}
		events = append(events, ev)
	}
	if ds := p.engine.Detections(events); len(ds) > 0 {
		found, err := p.store.Detect(ctx, org, ds, p.corr)
		if err != nil {
			p.metrics.Failed.WithLabelValues("detect").Inc()
			return fmt.Errorf("detect: %w", err)
		}
		incidents := make([]string, len(found))
		for i, d := range found {
			incidents[i] = d.IncidentID
		}
		// The rules run over the incidents the observations joined.
		if err := p.classify.Incidents(ctx, org, incidents); err != nil {
			p.metrics.Failed.WithLabelValues("classify").Inc()
			return fmt.Errorf("classify: %w", err)
		}
	}
	p.metrics.Stage.WithLabelValues("detect").Observe(time.Since(start).Seconds())
	return nil
}

// WithEnrichment makes the processor enrich artifacts before storing
// them, and hand threat-intel hits to the detectors.
func (p *Processor) WithEnrichment(e *enrich.Enricher) *Processor {
	p.enricher = e
	return p
}

// parse returns the artifact's event (the store does not keep it: the API
// parses it again, see parse.EventJSON) and sets its timestamp to the
// parsed time when the request gave none. A parser that panics on a
// hostile line costs that line its event, never the batch.
func (p *Processor) parse(a *vigil.Artifact) (ev parse.Event) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("parser panic", slog.String("source", a.Source), slog.String("artifact_id", a.ID), slog.Any("panic", v))
			p.metrics.Unparsed.WithLabelValues(metricSource(a.Source)).Inc()
			a.Event, ev = nil, nil
		}
	}()
	res := parse.Parse(a.Source, []byte(a.Raw), a.Timestamp)
	if a.TimestampDefaulted && vigil.ValidTimestamp(res.Time) {
		a.Timestamp = res.Time.UTC()
	}
	if res.Parsed {
		p.metrics.Parsed.WithLabelValues(metricSource(a.Source)).Inc()
	} else {
		p.metrics.Unparsed.WithLabelValues(metricSource(a.Source)).Inc()
	}
	return res.Event
}

// metricSource bounds the label values: unknown sources share one label.
func metricSource(s string) string {
	if parse.Known(s) {
		return s
	}
	return "other"
}

// Direct stores and parses artifacts synchronously in the caller: the
// pipeline without a queue, for tests of the API alone.
type Direct struct{ p *Processor }

// NewDirect returns a Direct pipeline over store.
func NewDirect(store vigil.Store, log *slog.Logger) *Direct {
	return &Direct{p: NewProcessor(store, log, nil)}
}

// Ingest processes arts before returning.
func (d *Direct) Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error {
	return d.p.Process(ctx, org, arts)
}
