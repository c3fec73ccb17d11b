// Package pipeline moves artifacts from the API to the store and through
// parse → enrich → store → detect → correlate: Queued publishes them
// durably to JetStream, Worker consumes them and runs the Processor, whose
// stages are the small interfaces declared here.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unsafe"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/enrich"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/rules"
	"github.com/vigil-soc/vigil/internal/suppress"
)

// Parser reads one raw line of a source (parse.Parse).
type Parser func(source string, raw []byte, ref time.Time) parse.Result

// ArtifactWriter stores artifacts, once per ID (a vigil.ArtifactStore).
type ArtifactWriter interface {
	InsertArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error
}

// Enricher adds what is known of artifacts' nodes before they are stored,
// and looks further afield once they are (an enrich.Enricher).
type Enricher interface {
	Enrich(ctx context.Context, org string, settings *vigil.EnrichmentSettings, arts []*vigil.Artifact, nodes [][]vigil.NodeRef) []enrich.Result
	Submit(org string, results []enrich.Result) int
}

// Detector turns parsed events into detections, counting only the
// signals an org's screen admits (a detect.Engine).
type Detector interface {
	Screened(evs []*detect.Event, screen detect.Screen) []*vigil.Detection
}

// CustomDetector turns parsed events into the detections of an org's own
// rules (a detectionrules.Cache).
type CustomDetector interface {
	Detections(ctx context.Context, org string, evs []*detect.Event, screen detect.Screen) ([]*vigil.Detection, error)
}

// Recorder evaluates detections, correlates the observations they record
// or grow and classifies their incidents (a correlate.Engine).
type Recorder interface {
	Detect(ctx context.Context, org string, ds []*vigil.Detection) ([]correlate.Recorded, error)
}

// Store is what NewProcessor builds the store stages on: artifacts, the
// correlation transactions, what the classification rules read, and the
// suppressions that screen signals.
type Store interface {
	ArtifactWriter
	AccountJoiner
	correlate.Store
	rules.Store
	suppress.Store
}

// Processor runs the stages after the queue on a batch of one org's
// artifacts: parse, enrich, store (idempotent on artifact id), then
// detect and record what the detectors find.
type Processor struct {
	parse    Parser
	store    ArtifactWriter
	enricher Enricher // nil: no enrichment
	detector Detector // nil: no detection
	// custom runs each org's detection rules beside detector (nil:
	// none).
	custom   CustomDetector
	recorder Recorder
	// accounts joins the names of Windows accounts by their SIDs before
	// detection names their nodes (nil: not joined).
	accounts *accountJoins
	// suppress screens each org's signals before detection counts them
	// (nil: every signal counts).
	suppress *suppress.Cache
	// recorderFor builds the Recorder of a correlation policy.
	recorderFor func(vigil.CorrelationPolicy) Recorder

	log     *slog.Logger
	metrics *Metrics
	health  writeHealth
}

// NewProcessor returns a Processor writing to store, without enrichment or
// detection until WithEnrichment and WithDetection. Detection screens
// each org's signals through its suppressions and settings, read from
// store and kept for suppress.DefaultTTL (WithSuppressions shares a cache
// that the API invalidates on writes).
func NewProcessor(store Store, log *slog.Logger, m *Metrics) *Processor {
	p := newProcessor(store, log, m)
	p.accounts = &accountJoins{store: store}
	p.recorderFor = func(policy vigil.CorrelationPolicy) Recorder {
		// Each org's roll-up and risk settings as its screen reads them
		// (the cache WithSuppressions may replace).
		orgPolicy := correlate.PolicyFunc(func(ctx context.Context, org string) (vigil.RollupPolicy, error) {
			if p.suppress == nil {
				return vigil.DefaultRollupPolicy(), nil
			}
			return p.suppress.RollupPolicy(ctx, org)
		})
		return correlate.NewEngine(store, rules.NewClassifier(store), policy).WithPolicies(orgPolicy)
	}
	p.suppress = suppress.NewCache(store, suppress.DefaultTTL, p.log)
	return p
}

// WithSuppressions makes the processor screen signals through c.
func (p *Processor) WithSuppressions(c *suppress.Cache) *Processor {
	p.suppress = c
	return p
}

// newProcessor returns a Processor over the artifact writer alone.
func newProcessor(store ArtifactWriter, log *slog.Logger, m *Metrics) *Processor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Processor{parse: parse.Parse, store: store, log: log, metrics: m}
}

// WithDetection makes the processor run detector after storing, and
// correlate what it finds under policy.
func (p *Processor) WithDetection(detector Detector, policy vigil.CorrelationPolicy) *Processor {
	p.detector, p.recorder = detector, p.recorderFor(policy)
	return p
}

// WithDetectionRules makes the processor run each org's detection rules
// (Sigma) beside the built-in detectors.
func (p *Processor) WithDetectionRules(c CustomDetector) *Processor {
	p.custom = c
	return p
}

// WithEnrichment makes the processor enrich artifacts before storing
// them, and hand threat-intel hits to the detectors.
func (p *Processor) WithEnrichment(e Enricher) *Processor {
	p.enricher = e
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
		fields[i] = p.parseOne(a)
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
	if p.detector == nil {
		return nil
	}

	start = time.Now()
	if p.accounts != nil {
		if err := p.accounts.join(ctx, org, fields); err != nil {
			p.metrics.Failed.WithLabelValues("detect").Inc()
			return fmt.Errorf("detect: join accounts: %w", err)
		}
	}
	events := make([]*detect.Event, 0, len(arts))
	for i, a := range arts {
		if fields[i] == nil {
			continue
		}
		ev := &detect.Event{ArtifactID: a.ID, Source: a.Source, At: a.Timestamp, Fields: fields[i], Raw: a.Raw}
		if i < len(enriched) {
			ev.Intel = enriched[i].Hits
		}
		events = append(events, ev)
	}
	var screen *suppress.Screen
	if p.suppress != nil && len(events) > 0 {
		var err error
		if screen, err = p.suppress.Screen(ctx, org); err != nil {
			p.metrics.Failed.WithLabelValues("detect").Inc()
			return fmt.Errorf("detect: %w", err)
		}
	}
	var sc detect.Screen // nil, not a nil *suppress.Screen, when there is none
	if screen != nil {
		sc = screen
	}
	ds := p.detector.Screened(events, sc)
	if p.custom != nil && len(events) > 0 {
		more, err := p.custom.Detections(ctx, org, events, sc)
		if err != nil {
			p.metrics.Failed.WithLabelValues("detect").Inc()
			return fmt.Errorf("detect: %w", err)
		}
		ds = append(ds, more...)
	}
	if len(ds) > 0 {
		if _, err := p.recorder.Detect(ctx, org, ds); err != nil {
			stage := "detect"
			if errors.Is(err, correlate.ErrClassify) {
				stage = "classify"
			}
			p.metrics.Failed.WithLabelValues(stage).Inc()
			return fmt.Errorf("detect: %w", err)
		}
	}
	if err := p.recordScreen(ctx, org, screen); err != nil {
		p.metrics.Failed.WithLabelValues("detect").Inc()
		return fmt.Errorf("detect: %w", err)
	}
	p.metrics.Stage.WithLabelValues("detect").Observe(time.Since(start).Seconds())
	return nil
}

// recordScreen counts what a batch's screen left out: the suppressions'
// hits in the store (once per signal, so a redelivered batch counts
// once) and in the metric, and the engine events in the metric. It runs
// after the detections were recorded: a batch that fails before is
// delivered again and screened again.
func (p *Processor) recordScreen(ctx context.Context, org string, screen *suppress.Screen) error {
	if screen == nil {
		return nil
	}
	fresh, err := p.suppress.Record(ctx, org, screen)
	if err != nil {
		return err
	}
	for _, h := range fresh {
		p.metrics.Suppressed.WithLabelValues(h.Detector, "suppression").Inc()
	}
	for det, n := range screen.EngineEvents() {
		p.metrics.Suppressed.WithLabelValues(det, "engine_event").Add(float64(n))
	}
	return nil
}

// parseOne returns the artifact's event (the store does not keep it: the
// API parses it again, see parse.EventJSON) and sets its timestamp to the
// parsed time when the request gave none. A parser that panics on a
// hostile line costs that line its event, never the batch.
func (p *Processor) parseOne(a *vigil.Artifact) (ev parse.Event) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("parser panic", slog.String("source", a.Source), slog.String("artifact_id", a.ID), slog.Any("panic", v))
			p.metrics.Unparsed.WithLabelValues(metricSource(a.Source)).Inc()
			a.Event, ev = nil, nil
		}
	}()
	// The line's own bytes, not a copy (1.5 µs of a Windows event's
	// 1,100): parsers only read their input (parse.Parse).
	res := p.parse(a.Source, unsafe.Slice(unsafe.StringData(a.Raw), len(a.Raw)), a.Timestamp)
	if a.TimestampDefaulted {
		a.Timestamp = res.TimeOr(a.Timestamp)
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
