package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/enrich"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/queue"
)

// The Processor's stages, faked: each records what it was given.

type fakeWriter struct {
	err    error
	stored map[string][]string // org → artifact ids, in order
}

func (w *fakeWriter) InsertArtifacts(_ context.Context, org string, arts []*vigil.Artifact) error {
	if w.err != nil {
		return w.err
	}
	if w.stored == nil {
		w.stored = map[string][]string{}
	}
	for _, a := range arts {
		w.stored[org] = append(w.stored[org], a.ID)
	}
	return nil
}

type fakeEnricher struct {
	hits      map[string][]vigil.IntelHit // artifact id → hits
	submitted []enrich.Result
}

func (e *fakeEnricher) Enrich(_ context.Context, _ string, _ *vigil.EnrichmentSettings, arts []*vigil.Artifact, _ [][]vigil.NodeRef) []enrich.Result {
	out := make([]enrich.Result, len(arts))
	for i, a := range arts {
		out[i] = enrich.Result{ArtifactID: a.ID, Hits: e.hits[a.ID]}
	}
	return out
}

func (e *fakeEnricher) Submit(_ string, results []enrich.Result) int {
	e.submitted = append(e.submitted, results...)
	return 0
}

// fakeDetector makes one detection per batch of every event it is given
// that the screen admits.
type fakeDetector struct{ events []*detect.Event }

func (d *fakeDetector) Screened(evs []*detect.Event, screen detect.Screen) []*vigil.Detection {
	d.events = append(d.events, evs...)
	det := &vigil.Detection{Detector: "fake", Key: "k"}
	for _, ev := range evs {
		sg := vigil.Signal{Key: "k", ArtifactID: ev.ArtifactID, At: ev.At}
		if screen == nil || screen.Admit("fake", ev, &sg) {
			det.Signals = append(det.Signals, sg)
		}
	}
	if len(det.Signals) == 0 {
		return nil
	}
	return []*vigil.Detection{det}
}

type fakeRecorder struct {
	err  error
	orgs []string
	ds   []*vigil.Detection
}

func (r *fakeRecorder) Detect(_ context.Context, org string, ds []*vigil.Detection) ([]correlate.Recorded, error) {
	r.orgs = append(r.orgs, org)
	r.ds = append(r.ds, ds...)
	return nil, r.err
}

// fakeParser parses "at <RFC 3339>" lines, panics on "panic", and
// understands nothing else.
func fakeParser(_ string, raw []byte, ref time.Time) parse.Result {
	s := string(raw)
	switch {
	case s == "panic":
		panic("hostile line")
	case len(s) > 3 && s[:3] == "at ":
		t, err := time.Parse(time.RFC3339, s[3:])
		if err != nil {
			return parse.Result{Time: ref}
		}
		return parse.Result{Parsed: true, Time: t, Event: parse.Event{"line": s}}
	}
	return parse.Result{Time: ref}
}

type stages struct {
	w *fakeWriter
	e *fakeEnricher
	d *fakeDetector
	r *fakeRecorder
	p *Processor
}

// newStages returns a Processor over fake stages, with detection and
// enrichment.
func newStages() *stages {
	st := &stages{w: &fakeWriter{}, e: &fakeEnricher{}, d: &fakeDetector{}, r: &fakeRecorder{}}
	st.p = newProcessor(st.w, nil, nil)
	st.p.parse = fakeParser
	st.p.recorderFor = func(vigil.CorrelationPolicy) Recorder { return st.r }
	st.p.WithDetection(st.d, vigil.DefaultCorrelationPolicy()).WithEnrichment(st.e)
	return st
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func artifact(raw string, defaulted bool) *vigil.Artifact {
	return &vigil.Artifact{ID: vigil.NewID(), Source: "auth", Raw: raw, Timestamp: t0, TimestampDefaulted: defaulted, CreatedAt: t0}
}

func failures(t *testing.T, p *Processor, stage string) float64 {
	t.Helper()
	var m dto.Metric
	if err := p.metrics.Failed.WithLabelValues(stage).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func unparsed(t *testing.T, p *Processor, source string) float64 {
	t.Helper()
	var m dto.Metric
	if err := p.metrics.Unparsed.WithLabelValues(source).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestProcessStages(t *testing.T) {
	st := newStages()
	parsedAt := t0.Add(-time.Hour)
	dated := artifact("at "+parsedAt.Format(time.RFC3339), true)    // the request gave no time: the line's is taken
	undated := artifact("at "+parsedAt.Format(time.RFC3339), false) // the request's time stays
	noise := artifact("something else", true)
	hostile := artifact("panic", true)
	st.e.hits = map[string][]vigil.IntelHit{dated.ID: {{Feed: "feodo", Indicator: "203.0.113.7", NodeType: vigil.NodeIP, NodeValue: "203.0.113.7"}}}
	arts := []*vigil.Artifact{dated, undated, noise, hostile}

	if err := st.p.Process(t.Context(), "org", arts); err != nil {
		t.Fatalf("Process: %v", err)
	}
	if got := st.w.stored["org"]; !slices.Equal(got, []string{dated.ID, undated.ID, noise.ID, hostile.ID}) {
		t.Errorf("stored %v, want every artifact of the batch, a hostile line's too", got)
	}
	if !dated.Timestamp.Equal(parsedAt) || !undated.Timestamp.Equal(t0) {
		t.Errorf("timestamps %v and %v, want the parsed time only where the request gave none", dated.Timestamp, undated.Timestamp)
	}
	if len(st.e.submitted) != len(arts) {
		t.Errorf("%d results submitted for look-ups, want %d (after storing)", len(st.e.submitted), len(arts))
	}
	// Only parsed events reach the detectors, with their intel hits.
	var evIDs []string
	for _, ev := range st.d.events {
		evIDs = append(evIDs, ev.ArtifactID)
	}
	if !slices.Equal(evIDs, []string{dated.ID, undated.ID}) {
		t.Fatalf("detectors saw %v, want the two parsed artifacts", evIDs)
	}
	if got := st.d.events[0].Intel; len(got) != 1 || got[0].Feed != "feodo" || got[0].NodeValue != "203.0.113.7" {
		t.Errorf("intel of the first event = %+v, want the enrichment's hit", got)
	}
	if !st.d.events[0].At.Equal(parsedAt) {
		t.Errorf("event time %v, want the parsed time", st.d.events[0].At)
	}
	if len(st.r.ds) != 1 || !slices.Equal(st.r.orgs, []string{"org"}) {
		t.Errorf("recorder got %d detections for %v, want 1 for org", len(st.r.ds), st.r.orgs)
	}
	if n := unparsed(t, st.p, "auth"); n != 2 {
		t.Errorf("unparsed auth = %v, want 2 (the noise and the line whose parser panicked)", n)
	}
}

func TestProcessStoreFailure(t *testing.T) {
	st := newStages()
	st.w.err = &vigil.Error{Code: vigil.ENOSPACE, Message: "database disk is full"}
	err := st.p.Process(t.Context(), "org", []*vigil.Artifact{artifact("at "+t0.Format(time.RFC3339), true)})
	if vigil.ErrorCode(err) != vigil.ENOSPACE {
		t.Fatalf("Process = %v, want the store's ENOSPACE", err)
	}
	if len(st.d.events) != 0 || len(st.e.submitted) != 0 {
		t.Errorf("detection saw %d events and %d look-ups were submitted after the store failed; want none", len(st.d.events), len(st.e.submitted))
	}
	if n := failures(t, st.p, "store"); n != 1 {
		t.Errorf("store failures = %v, want 1", n)
	}
	if err := st.p.Ready(t.Context()); vigil.ErrorCode(err) != vigil.ENOSPACE {
		t.Errorf("Ready = %v, want ENOSPACE while the store refuses writes", err)
	}
	st.w.err = nil
	if err := st.p.Process(t.Context(), "org", []*vigil.Artifact{artifact("x", true)}); err != nil {
		t.Fatal(err)
	}
	if err := st.p.Ready(t.Context()); err != nil {
		t.Errorf("Ready = %v after a write succeeded, want nil", err)
	}
}

func TestProcessRecordFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		stage string
	}{
		{"correlation", errors.New("deadlock"), "detect"},
		{"classification", fmt.Errorf("%w: %w", correlate.ErrClassify, errors.New("rules unreadable")), "classify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStages()
			st.r.err = tc.err
			err := st.p.Process(t.Context(), "org", []*vigil.Artifact{artifact("at "+t0.Format(time.RFC3339), true)})
			if !errors.Is(err, tc.err) {
				t.Fatalf("Process = %v, want %v", err, tc.err)
			}
			if n := failures(t, st.p, tc.stage); n != 1 {
				t.Errorf("%s failures = %v, want 1", tc.stage, n)
			}
			if len(st.w.stored["org"]) != 1 {
				t.Errorf("artifacts stored %d, want 1: they stay stored, the redelivery stores them once", len(st.w.stored["org"]))
			}
		})
	}
}

func TestProcessWithoutDetection(t *testing.T) {
	w := &fakeWriter{}
	p := newProcessor(w, nil, nil)
	p.parse = fakeParser
	if err := p.Process(t.Context(), "org", []*vigil.Artifact{artifact("at "+t0.Format(time.RFC3339), true)}); err != nil {
		t.Fatal(err)
	}
	if len(w.stored["org"]) != 1 {
		t.Errorf("stored %v", w.stored)
	}
}

// orgWriter fails every batch that holds an artifact whose line is "bad".
type orgWriter struct {
	fakeWriter
	calls [][]string
}

func (w *orgWriter) InsertArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	var raws []string
	for _, a := range arts {
		raws = append(raws, a.Raw)
	}
	w.calls = append(w.calls, raws)
	if slices.Contains(raws, "bad") {
		return errors.New("bad line")
	}
	return w.fakeWriter.InsertArtifacts(ctx, org, arts)
}

// TestWorkerHandle: messages are processed in one batch per org; when a
// batch fails for a reason other than a transient one, its messages are
// tried one by one so that only the bad one fails.
func TestWorkerHandle(t *testing.T) {
	w := &orgWriter{}
	p := newProcessor(w, nil, nil)
	p.parse = fakeParser
	worker := &Worker{p: p, metrics: p.metrics}
	msg := func(org string, raws ...string) *queue.Message {
		m := &queue.Message{Org: org}
		for _, r := range raws {
			m.Artifacts = append(m.Artifacts, artifact(r, true))
		}
		return m
	}
	msgs := []*queue.Message{msg("a", "a1"), msg("b", "b1"), msg("a", "bad"), msg("a", "a2", "a3")}
	errs := worker.handle(t.Context(), msgs)
	if errs[0] != nil || errs[1] != nil || errs[2] == nil || errs[3] != nil {
		t.Fatalf("errors %v, want only the bad message's", errs)
	}
	want := [][]string{{"a1", "bad", "a2", "a3"}, {"a1"}, {"bad"}, {"a2", "a3"}, {"b1"}}
	if !slices.EqualFunc(w.calls, want, slices.Equal[[]string]) {
		t.Errorf("batches %v, want %v (one per org in order of arrival, a failed org's one by one before the next org)", w.calls, want)
	}

	// A transient failure fails the whole group at once: trying one by
	// one would fail alike.
	w.calls = nil
	p.store = &fakeWriter{err: &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "database is locked"}}
	errs = worker.handle(t.Context(), []*queue.Message{msg("a", "a1"), msg("a", "a2")})
	if vigil.ErrorCode(errs[0]) != vigil.EUNAVAILABLE || vigil.ErrorCode(errs[1]) != vigil.EUNAVAILABLE {
		t.Errorf("errors %v, want both EUNAVAILABLE", errs)
	}
}
